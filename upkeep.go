// The upkeep every reading command does before it looks at sessions, since
// there is no daemon to do it: expired fuses fire, launches whose agent and
// supervisor died are finalised, and agentctl's launch records become evidence.
package main

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/locks"
)

// fuseUpkeep is what a command that reads does about expired fuses: nothing
// slow. When one is due it starts a detached `agentctl __fire-fuses`, which
// claims and fires it (exactly once across processes, locks.FireDueFuses), so
// a fuse's script — up to 300 s — never delays `list`. Without an executable
// to start (in-process runs) it fires here.
func (e *cmdEnv) fuseUpkeep(ctx context.Context) {
	if !locks.AnyDue(e.store, false) {
		return
	}
	var self string
	if e.s.executable != nil {
		self, _ = e.s.executable()
	}
	if self == "" {
		e.fireFuses(ctx, false)
		return
	}
	if err := startFuseFirer(self, e.store.Dir); err != nil {
		warn(e.s, fmt.Sprintf("fire expired fuses in the background: %v; firing them now", err))
		e.fireFuses(ctx, false)
	}
}

// fireFuses fires the fuses that expired, once across every agentctl process
// (locks.FireDueFuses): sweep calls it (retry: also fuses whose firer died
// mid-action), and __fire-fuses for the commands that read.
func (e *cmdEnv) fireFuses(ctx context.Context, retry bool) []locks.Fired {
	return fireDueFuses(ctx, e.store, e.deps(), retry, func(m string) { warn(e.s, m) })
}

// readEnv is the Env of a command that reads sessions: lazy finalisation first
// (launches whose agent and supervisor died are finalised once, now), then
// agentctl's launch records as evidence.
func (e *cmdEnv) readEnv(ctx context.Context) *discover.Env {
	env := e.newEnv()
	env.OnlyAlive = e.onlyAlive
	env.Slots = e.slots
	e.fuseUpkeep(ctx)
	e.finaliseDead(ctx)
	launches, err := e.store.ReadLaunches()
	if err != nil {
		warn(e.s, fmt.Sprintf("launch records unreadable, launched sessions may be missing: %v", err))
	}
	env.Launches = launches
	return env
}
