package meta

import (
	"errors"
	"syscall"

	"github.com/agentctl/agentctl/proc"
)

// ProcessAlive is the real owner check: pid is alive now with exactly this start
// time, on this boot. A process we may not inspect (EPERM from kill(pid, 0), e.g.
// under hidepid) counts as alive: dropping a live owner's record is the worse
// mistake. A zombie is dead.
func ProcessAlive(pid int, start uint64, bootID string) bool {
	if pid <= 0 {
		return false
	}
	if bootID != "" {
		if cur := proc.CurrentBootID(); cur != "" && cur != bootID {
			return false
		}
	}
	p, err := proc.Lookup(pid)
	if err == nil {
		return p.StartTicks == start
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.EPERM)
}
