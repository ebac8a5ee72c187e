package opencode

import (
	"time"

	"github.com/agentctl/agentctl/discover"
)

// mustRead reports whether the legacy tree's listing reads a session (by id,
// and the time its session file was last written) even when its budget has
// given up.
type mustRead func(id string, mtime time.Time) bool

// legacyMustRead is which sessions of the legacy tree a listing whose budget
// gave up reads all the same: those a live process may serve. Leaving one out
// would change what the listing says about a live session (or let a process
// look tied to another session of its directory), not just drop an old one:
// the sessions agentctl launched or a `run -s` names, and, while an opencode
// process runs, every session written since the earliest of them started (a
// process serves only a session prompted after its start, candidatesFor; one
// whose start is unknown may serve any). nil when nothing can be alive.
func legacyMustRead(env *discover.Env, procs []ocProc) mustRead {
	named := map[string]bool{}
	for _, l := range env.LaunchesFor(Name) {
		named[l.SessionID], named[l.CurrentSessionID()] = true, true
	}
	delete(named, "")
	var since discover.WrittenSince
	unknownStart := false
	for _, p := range procs {
		switch {
		case p.Session != "":
			named[p.Session] = true
		case !p.StartOK:
			unknownStart = true
		default:
			since.Open(p.Start, startSlack)
		}
	}
	if len(named) == 0 && since.IsZero() && !unknownStart {
		return nil
	}
	return func(id string, mtime time.Time) bool {
		return unknownStart || named[id] || since.Holds(mtime)
	}
}
