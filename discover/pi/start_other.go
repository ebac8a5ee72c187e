//go:build !linux && !darwin

package pi

import (
	"time"

	"github.com/agentctl/agentctl/discover/proc"
)

// platformStartTime: no way to date a process here, so no process is attributed.
func platformStartTime() func(proc.Process) (time.Time, bool) {
	return func(proc.Process) (time.Time, bool) { return time.Time{}, false }
}
