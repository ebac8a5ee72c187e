package codex

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/discover"
)

// Explain lists the Codex-specific signal behind a session's status for
// `status --explain`: who holds the thread's writer lock, or the rollout open
// for writing on versions without locks (docs/agents/codex.md §4.1).
func (a *Adapter) Explain(ctx context.Context, env *discover.Env, s discover.Session) []discover.Signal {
	lv := a.checkLiveness(ctx, env, Home(env), func() map[string]string {
		if s.Path == "" {
			return nil
		}
		return map[string]string{s.ID: s.Path}
	})
	g := discover.Signal{Source: "lock", Evidence: discover.EvidenceRegistry}
	pid, held := lv.holders[s.ID]
	switch {
	case held && pid > 0:
		g.Found = true
		g.Says = fmt.Sprintf("%s held by pid %d", lv.method, pid)
		if lv.daemon[pid] {
			g.Says += " (the TUI's app-server daemon)"
		}
	case held:
		g.Found = true
		g.Says = lv.method + " held by a process in another PID namespace"
	case !lv.checkable:
		g.Says = "cannot tell who writes the thread: " + lv.why
	case lv.lockFiles[s.ID]:
		g.Says = "thread-writer-locks/" + s.ID + ".lock exists but nobody holds it (stale)"
	default:
		g.Says = "no " + lv.method + " for this thread is held"
	}
	return []discover.Signal{g}
}
