package claude

import "github.com/agentctl/agentctl/discover/proc"

// On macOS the process table's StartTicks already is the start in epoch ms.
func defaultStartMillis() startMillis {
	return func(p proc.Process) (int64, bool) { return int64(p.StartTicks), p.StartTicks != 0 }
}
