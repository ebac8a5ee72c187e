package pi

import (
	"time"

	"github.com/agentctl/agentctl/discover/proc"
)

// platformStartTime: on macOS the table's StartTicks is already the creation time
// in Unix milliseconds.
func platformStartTime() func(proc.Process) (time.Time, bool) {
	return func(p proc.Process) (time.Time, bool) {
		if p.StartTicks == 0 {
			return time.Time{}, false
		}
		return time.UnixMilli(int64(p.StartTicks)).UTC(), true
	}
}
