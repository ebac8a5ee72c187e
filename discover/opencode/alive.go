package opencode

import (
	"sort"

	"github.com/agentctl/agentctl/discover"
)

// aliveQuery names the sessions that can be alive when no opencode process is:
// those agentctl's launch records name (the core may find a launch alive, and
// keeps every session a record names). ok is false when an opencode process is
// alive or the process table cannot tell: then a session may be tied to a
// process by its directory (live.go), which needs every session, and the
// caller lists them all. OpenCode keeps no per-session file, lock or socket
// (docs/agents/opencode.md §4), so with no process nothing else can be alive.
func (a *Adapter) aliveQuery(env *discover.Env) (q discover.Query, ok bool) {
	if env.Procs == nil {
		return q, false
	}
	procs, procsOK := scanProcs(env, a.startTime(env), nil)
	if !procsOK || len(procs) > 0 {
		return q, false
	}
	seen := map[string]bool{}
	for _, l := range env.LaunchesFor(Name) {
		for _, id := range []string{l.SessionID, l.CurrentSessionID()} {
			if id != "" && !seen[id] {
				seen[id] = true
				q.IDs = append(q.IDs, id)
			}
		}
	}
	sort.Strings(q.IDs)
	return q, true
}
