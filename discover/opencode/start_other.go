//go:build !linux && !darwin

package opencode

import (
	"time"

	"github.com/agentctl/agentctl/discover/proc"
)

// platformStartTime: no way to date a process here, so no process is attributed
// to a session by its start time (such sessions become unknown, never running).
func platformStartTime() func(proc.Process) (time.Time, bool) {
	return func(proc.Process) (time.Time, bool) { return time.Time{}, false }
}
