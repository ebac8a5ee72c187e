package claude

import (
	"context"
	"fmt"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// Explain lists the Claude-specific signals behind a session's status for
// `status --explain`: the registry entries naming it, live claude processes whose
// argv names it, and claude processes in its directory the process scan may
// tie to it (docs/agents/claude-code.md §4.2).
func (a *Adapter) Explain(ctx context.Context, env *discover.Env, s discover.Session) []discover.Signal {
	procs := env.Procs
	if procs == nil {
		procs = &proc.Fake{NoProcs: true}
	}
	startMs := a.startMillis(procs)
	var out []discover.Signal
	for _, r := range readRegistry(ctx, Root(env), procs, a.host(), startMs) {
		if r.SessionID != s.ID {
			continue
		}
		g := discover.Signal{Source: "registry", Found: true, Evidence: discover.EvidenceRegistry}
		switch r.Verdict {
		case regLive:
			g.Says = fmt.Sprintf("%s: pid %d alive (%s)", r.File, r.PID, r.Detail)
		case regStale, regRecycled:
			g.Says, g.Evidence = r.Detail, discover.EvidenceStaleRegistry
		default:
			g.Says = r.Detail
		}
		if r.Status != "" {
			g.Says += fmt.Sprintf("; status %q", r.Status)
			if r.WaitingFor != "" {
				g.Says += fmt.Sprintf(" waiting for %q", r.WaitingFor)
			}
		}
		if r.Prompt > 0 {
			g.Says += fmt.Sprintf("; history.jsonl has a prompt of %s, after the entry's updatedAt",
				time.UnixMilli(r.Prompt).UTC().Format("15:04:05.000"))
		}
		out = append(out, g)
	}
	if len(out) == 0 {
		out = append(out, discover.Signal{Source: "registry", Evidence: discover.EvidenceRegistry,
			Says: "no sessions/<pid>.json names this session (Claude removes its entry on a clean exit)"})
	}
	if !procs.Available() {
		return out
	}
	var argv, near []string
	for _, p := range findClaudeProcs(procs, startMs) {
		switch {
		case p.Flags.Names == s.ID:
			argv = append(argv, fmt.Sprintf("pid %d names the session in its argv", p.PID))
		case p.Flags.Names == "" && p.Cwd != "" && (p.Cwd == s.Cwd || p.Cwd == s.LastCwd):
			near = append(near, fmt.Sprintf("pid %d runs claude in %s", p.PID, p.Cwd))
		}
	}
	out = append(out, signalOf("argv", discover.EvidenceArgv, argv, "no live claude names this session with --resume or --session-id"))
	out = append(out, signalOf("process-scan", discover.EvidenceProcess, near, "no claude without a session argument runs in the session's directory"))
	return out
}

func signalOf(source, evidence string, found []string, none string) discover.Signal {
	if len(found) == 0 {
		return discover.Signal{Source: source, Evidence: evidence, Says: none}
	}
	says := found[0]
	for _, f := range found[1:] {
		says += "; " + f
	}
	return discover.Signal{Source: source, Found: true, Evidence: evidence, Says: says}
}
