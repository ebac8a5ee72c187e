package qwen

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/discover"
)

// Explain lists the Qwen-specific signals behind a session's status for
// `status --explain`: the registry records naming it, and the qwen CLI
// processes whose argv names it or that run in its cwd (docs/agents/qwen.md §4).
func (a *Adapter) Explain(ctx context.Context, env *discover.Env, s discover.Session) []discover.Signal {
	var out []discover.Signal
	regs := verifyRegistry(env, readRegistry(env))
	live := map[int]bool{}
	for _, r := range regs {
		if r.Live {
			live[r.PID] = true
		}
		if r.SessionID != s.ID {
			continue
		}
		g := discover.Signal{Source: "registry", Found: true, Evidence: discover.EvidenceRegistry, Says: r.Detail}
		if r.Known && !r.Live {
			g.Evidence = discover.EvidenceStaleRegistry
		}
		g.Decides = g.Evidence == s.Evidence
		out = append(out, g)
	}
	if len(out) == 0 {
		out = append(out, discover.Signal{Source: "registry", Evidence: discover.EvidenceRegistry,
			Says: "no sessions/<pid>.json names this session (only a TUI registers; a clean exit removes it)"})
	}
	if env.Procs == nil || !env.Procs.Available() {
		return append(out, discover.Signal{Source: "process", Evidence: discover.EvidenceProcess, Says: "no process table"})
	}
	var argv, near []string
	for _, c := range candidates(env, a.startTime(env), live) {
		switch {
		case c.Named == s.ID:
			argv = append(argv, fmt.Sprintf("pid %d names the session in its argv", c.PID))
		case c.Named == "" && c.Cwd == s.Cwd:
			near = append(near, fmt.Sprintf("pid %d in %s (started %s)", c.PID, c.Cwd, c.Start.UTC().Format("15:04:05")))
		}
	}
	sig := discover.Signal{Source: "argv", Evidence: discover.EvidenceArgv, Found: len(argv) > 0,
		Says: "no live qwen names this session with --resume or --session-id"}
	if sig.Found {
		sig.Says, sig.Decides = strings.Join(argv, "; "), s.Evidence == discover.EvidenceArgv
	}
	out = append(out, sig)
	sig = discover.Signal{Source: "process", Evidence: discover.EvidenceProcess, Found: len(near) > 0,
		Says: "no headless qwen runs in the session's cwd"}
	if sig.Found {
		sig.Says = "qwen processes in its cwd (tied only to a session they started or appended to, and only when unambiguous): " + strings.Join(near, "; ")
		sig.Decides = s.Evidence == discover.EvidenceProcess
	}
	return append(out, sig)
}
