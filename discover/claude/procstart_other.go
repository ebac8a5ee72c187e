//go:build !linux && !darwin

package claude

import "github.com/agentctl/agentctl/discover/proc"

func defaultStartMillis() startMillis {
	return func(proc.Process) (int64, bool) { return 0, false }
}
