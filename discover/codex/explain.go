package codex

import (
	"context"
	"fmt"
	"os"

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
	}, &discover.Query{IDs: []string{s.ID}})
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
	out := []discover.Signal{g}
	if ap, ok := approvalSignal(env, s, pid); ok {
		out = append(out, ap)
	}
	return out
}

// approvalSignal is the escalated call an open turn ends with, if any, and
// whether a child of the writer runs it (approved) or not (still asking).
func approvalSignal(env *discover.Env, s discover.Session, holder int) (discover.Signal, bool) {
	if s.Path == "" {
		return discover.Signal{}, false
	}
	f, err := os.Open(s.Path)
	if err != nil {
		return discover.Signal{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return discover.Signal{}, false
	}
	t, err := readTail(f, fi.Size(), false, &scratch{})
	if err != nil || t.Turn != turnOpen || t.Pending == "" {
		return discover.Signal{}, false
	}
	g := discover.Signal{Source: "approval", Found: true, Says: "open turn ends with " + t.Pending}
	if t.PendingCmd != "" {
		if run := approvedRun(env, holder, t.PendingCmd); run != "" {
			g.Says += "; approved: " + run + " (running)"
		} else {
			g.Says += "; no child of the writer runs it, so it is still asking (waiting)"
		}
	}
	return g, true
}
