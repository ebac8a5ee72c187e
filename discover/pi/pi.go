// Package pi is the Pi adapter's read side (notes: docs/agents/pi.md). pi and pi-rust
// share one session tree (~/.pi/agent/sessions), so one reader lists both and tags
// each session with its flavour; a session is reported once, keyed by header id.
//
// Liveness: pi overwrites its process title, never holds its file open and writes
// nothing during an LLM call, so neither argv nor file age says anything. A session
// is alive only on verified evidence: agentctl's launch records (folded in by the
// core) or a pi process whose cwd and start time match the file's header (inferred).
package pi

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/discover/proc"
	"github.com/agentctl/agentctl/meta"
)

// Name is the adapter name; NameRust is the flavour pi-rust sessions report.
const (
	Name     = "pi"
	NameRust = "pi-rust"
)

// Adapter reads Pi and pi-rust sessions.
type Adapter struct {
	// StartTime dates a process of the snapshot (wall clock). nil: the process
	// table's own StartTime method if it has one, else the platform's conversion
	// (Linux: btime + ticks/CLK_TCK). Tests inject a fixed one.
	StartTime func(proc.Process) (time.Time, bool)
}

// New returns the Pi adapter.
func New() *Adapter { return &Adapter{} }

// Name is the adapter name ("pi"); sessions carry "pi" or "pi-rust".
func (a *Adapter) Name() string { return Name }

// Discover lists every session file under the scanned roots, once per header id.
func (a *Adapter) Discover(ctx context.Context, env *discover.Env) ([]discover.Session, error) {
	return a.collect(ctx, env, nil)
}

// Find returns the sessions q names, exactly as Discover lists them. A session's
// id is its header's, which the file name need not carry (copies, renames), two
// files may hold one id, and a process is tied to a file only when it matches no
// other: so every file is still summarised (from the index when fresh) and
// attributed, and only the sessions q names are built.
func (a *Adapter) Find(ctx context.Context, env *discover.Env, q discover.Query) ([]discover.Session, error) {
	return a.collect(ctx, env, &q)
}

// collect lists the sessions q names (nil: all).
func (a *Adapter) collect(ctx context.Context, env *discover.Env, q *discover.Query) ([]discover.Session, error) {
	paths := listFiles(env, roots(env))
	ix := index.Load[summary](env.CacheDir(), Name, indexVersion)
	sc := &scanner{ix: ix, stopAt: budget(ctx)}
	files := sc.scan(ctx, env, paths)
	if err := ctx.Err(); err != nil {
		_ = ix.Save() // keep what was parsed; the next run continues from it
		return nil, err
	}
	ix.PruneUnseen("")
	if err := ix.Save(); err != nil {
		env.Warnf("%v", err)
	}
	files = oneper(env, files, q)

	// agentctl's own launches: the flavour they were launched as wins over the
	// file-name classification, and their live processes are the core's to report,
	// so they are neither candidates nor do their files compete for candidates.
	flavourOf := map[string]string{}
	launchPIDs := map[int]bool{}
	launchLive := map[string]bool{}
	for _, l := range env.Launches {
		if l.Adapter != Name && l.Adapter != NameRust {
			continue
		}
		for _, id := range []string{l.SessionID, l.CurrentSessionID()} {
			if id != "" {
				flavourOf[id] = l.Adapter
			}
		}
		if env.Procs == nil {
			continue
		}
		if alive, _, _ := discover.LaunchAlive(env.Procs, l); alive {
			launchPIDs[l.PID] = true
			launchLive[l.CurrentSessionID()] = true
		}
	}

	procsOK := env.Procs != nil && env.Procs.Available()
	var owners map[*file]owner
	if procsOK {
		cands := candidates(env, a.startTime(env), launchPIDs)
		var open []*file
		for _, f := range files {
			if !launchLive[f.Sum.Header.ID] {
				open = append(open, f)
			}
		}
		owners = attribute(cands, open)
	}

	out := make([]discover.Session, 0, len(files))
	for _, f := range files {
		if q != nil && !q.Match(f.Sum.Header.ID) {
			continue
		}
		if fl := flavourOf[f.Sum.Header.ID]; fl != "" {
			f.Flavour = fl
		}
		o, owned := owners[f]
		out = append(out, f.session(env, o, owned, procsOK))
	}
	return out, nil
}

// startTime picks how to date processes: injected, the table's own, or the
// platform's (read lazily: most commands find no pi candidate at all).
func (a *Adapter) startTime(env *discover.Env) func(proc.Process) (time.Time, bool) {
	if a.StartTime != nil {
		return a.StartTime
	}
	return func(p proc.Process) (time.Time, bool) { return env.Procs.StartTime(p.PID) }
}

// oneper keeps one file per session id (the most recently active) so that no id is
// listed twice, whatever roots overlap.
func oneper(env *discover.Env, files []*file, q *discover.Query) []*file {
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	byID := map[string]int{}
	out := files[:0]
	for _, f := range files {
		id := f.Sum.Header.ID
		i, dup := byID[id]
		if !dup {
			byID[id] = len(out)
			out = append(out, f)
			continue
		}
		keep, drop := out[i], f
		if f.Sum.activity().After(keep.Sum.activity()) {
			keep, drop = f, keep
		}
		if q == nil || q.Match(id) {
			env.Warnf("session %s is in two files, %s and %s; showing %s", id, keep.Path, drop.Path, keep.Path)
		}
		out[i] = keep
	}
	return out
}

// session turns a summary into a Session with its status (docs/agents/pi.md §3, §4.2).
func (f *file) session(env *discover.Env, o owner, owned, procsOK bool) discover.Session {
	sum := f.Sum
	h := sum.Header
	s := discover.Session{
		ID:      h.ID,
		Adapter: f.Flavour,
		Cwd:     h.Cwd,
		Model:   sum.Model,
		Title:   strings.TrimSpace(sum.Title),
		Prompt:  sum.Prompt,
		Path:    f.Path,
	}
	if len(sum.Models) > 1 {
		s.Models = append([]string(nil), sum.Models...)
	}
	if t := sum.started(); !t.IsZero() {
		s.StartedAt = &t
	}
	if t := sum.activity(); !t.IsZero() {
		s.LastActivity = &t
	}
	if sum.Assistants > 0 && f.Complete {
		tok := sum.Tokens
		s.Tokens = &tok
		cost, src := sum.Cost, "agent"
		if cost == 0 && !tok.Zero() {
			cost, src = estimate(env.Config, sum.Model, tok)
		}
		if src != "" {
			s.CostUSD, s.CostSource = &cost, src
		}
	}
	if p := h.ParentSession; p != "" {
		s.Extra = map[string]any{"parent_session": p}
	} else if p := h.BranchedFrom; p != "" {
		s.Extra = map[string]any{"parent_session": p}
	}

	outcome := outcomeOf(sum.Leaf)
	switch {
	case owned && o.PID != 0:
		s.Status, s.Evidence, s.Inferred, s.PID = discover.StatusRunning, discover.EvidenceProcess, true, o.PID
		s.EvidenceDetail = o.Detail
		if sum.Leaf.final() {
			s.Status = discover.StatusIdle
			s.EvidenceDetail = o.Detail + "; last turn: " + outcome
		}
	case owned:
		s.Status, s.Evidence, s.Inferred = discover.StatusUnknown, discover.EvidenceProcess, true
		s.EvidenceDetail = o.Detail
	case !procsOK && !sum.Leaf.final():
		// Without a process table an open leaf may well be a running turn.
		s.Status, s.Evidence = discover.StatusUnknown, discover.EvidenceNone
		s.EvidenceDetail = "no process table; last message is " + outcome
	default:
		s.Evidence = discover.EvidenceTranscript
		s.Status, s.EvidenceDetail = transcriptStatus(sum.Leaf)
		if !procsOK {
			s.EvidenceDetail += " (no process table)"
		}
		s.EndedAt = s.LastActivity
	}
	return s
}

// transcriptStatus is docs/agents/pi.md §4.2 for a session no live process owns.
func transcriptStatus(l leaf) (status, detail string) {
	if l.Role == "assistant" {
		switch l.StopReason {
		case "stop", "length":
			return discover.StatusStopped, "done"
		case "aborted":
			return discover.StatusStopped, "aborted"
		case "error":
			msg := l.ErrorMessage
			if msg == "" {
				msg = "error"
			}
			return discover.StatusFailed, msg
		}
	}
	// An open leaf (user message, tool result, tool call) with nobody writing:
	// the process died mid-turn. A stop agentctl recorded is the core's to say.
	return discover.StatusFailed, "interrupted"
}

// outcomeOf describes the leaf for details.
func outcomeOf(l leaf) string {
	switch {
	case l.Role == "":
		return "no messages"
	case l.Role == "assistant" && l.StopReason == "error" && l.ErrorMessage != "":
		return "error: " + l.ErrorMessage
	case l.Role == "assistant" && l.StopReason == "stop":
		return "done"
	case l.Role == "assistant" && l.StopReason != "":
		return l.StopReason
	}
	return l.Role
}

// estimate prices tokens from config.prices when pi recorded no cost (docs/agents/pi.md §3):
// exact model, then the model id without its provider, then the longest prefix.
func estimate(cfg *meta.Config, model string, t discover.Tokens) (float64, string) {
	if cfg == nil || len(cfg.Prices) == 0 || model == "" {
		return 0, ""
	}
	_, id, _ := strings.Cut(model, "/")
	p, ok := cfg.Prices[model]
	if !ok && id != "" {
		p, ok = cfg.Prices[id]
	}
	if !ok {
		best := ""
		for k := range cfg.Prices {
			if len(k) > len(best) && (strings.HasPrefix(model, k) || (id != "" && strings.HasPrefix(id, k))) {
				best = k
			}
		}
		if best == "" {
			return 0, ""
		}
		p = cfg.Prices[best]
	}
	usd := (float64(t.Input)*p.Input + float64(t.Output)*p.Output +
		float64(t.CacheRead)*p.CacheRead + float64(t.CacheWrite)*p.CacheWrite) / 1e6
	return usd, "estimate"
}
