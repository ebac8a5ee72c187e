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
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/dirnames"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/proc"
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
// ParsesFiles marks a listing as work on this machine's files (discover.FileParser).
func (*Adapter) ParsesFiles() {}

func New() *Adapter { return &Adapter{} }

// Name is the adapter name ("pi"); sessions carry "pi" or "pi-rust".
func (a *Adapter) Name() string { return Name }

// Discover lists every session file under the scanned roots, once per header id.
// With env.OnlyAlive and no pi process alive, only agentctl's launch records
// can make a session alive: only their sessions are read.
func (a *Adapter) Discover(ctx context.Context, env *discover.Env) ([]discover.Session, error) {
	if env.OnlyAlive {
		q := &discover.Query{}
		for _, l := range env.Launches {
			if l.Adapter != Name && l.Adapter != NameRust {
				continue
			}
			for _, id := range []string{l.SessionID, l.CurrentSessionID()} {
				if id != "" {
					q.IDs = append(q.IDs, id)
				}
			}
		}
		return a.collectAlive(ctx, env, q)
	}
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
	return a.list(ctx, env, q, false)
}

// collectAlive is collect for an alive-only listing: the sessions q names
// when no pi process is alive, else every one (a process may be tied to any).
func (a *Adapter) collectAlive(ctx context.Context, env *discover.Env, q *discover.Query) ([]discover.Session, error) {
	return a.list(ctx, env, q, true)
}

func (a *Adapter) list(ctx context.Context, env *discover.Env, q *discover.Query, onlyAlive bool) ([]discover.Session, error) {
	// agentctl's own launches: the flavour they were launched as wins over the
	// file-name classification, and their live processes are the core's to report,
	// so they are neither candidates nor do their files compete for candidates.
	flavourOf := map[string]string{}
	launchPIDs := map[int]bool{}
	launchLive := map[string]bool{}
	keptOpen := map[string]int{} // live kept-open launches (RPC mode): session id → pid
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
		if proc.Check(env.Procs, l.Agent()).Alive {
			launchPIDs[l.PID] = true
			launchLive[l.CurrentSessionID()] = true
			if l.Input != "" {
				keptOpen[l.CurrentSessionID()] = l.PID
			}
		}
	}
	procsOK := env.Procs != nil && env.Procs.Available()
	var cands []candidate
	if procsOK {
		cands = candidates(env, a.startTime(env), launchPIDs)
	}

	if onlyAlive && (!procsOK || len(cands) > 0) {
		q = nil // without a process table or with a pi process: list everything
	}
	if q != nil && q.Prefix == "" && len(q.IDs) == 0 {
		return nil, nil
	}
	var keep func(string) bool // names that can hold a session q names (byName)
	if q != nil && len(cands) == 0 {
		keep = func(name string) bool { return keyMayMatch(nameKey(name), q) }
	}
	var names *dirnames.Cache
	var prefixes []string
	if keep != nil {
		names, prefixes = dirnames.Open(env.CacheDir(), Name, nameKeyOf), keyPrefixes(q)
	}
	paths := listFiles(env, roots(env), keep, prefixes, names)
	if err := names.Save(); err != nil {
		env.Warnf("%v", err)
	}
	complete := true // every file is read: the index may forget vanished ones
	if q != nil && len(cands) == 0 {
		// No process to tie to a file, so no session depends on another: only
		// the files whose name can hold a named id are read (byName).
		paths, complete = byName(paths, q), false
	}
	var ix *index.Index[summary]
	if complete {
		ix = index.Load[summary](env.CacheDir(), Name, indexVersion)
	} else {
		// A few files: read their entries, not the index (discover/index/point.go).
		ix = index.LoadPoint[summary](env.CacheDir(), Name, indexVersion)
	}
	defer ix.Close()
	sc := &scanner{ix: ix, budget: discover.BudgetOf(ctx), mustRead: mustRead(flavourOf, cands)}
	files := sc.scan(ctx, env, paths)
	if err := ctx.Err(); err != nil {
		_ = ix.Save() // keep what was parsed; the next run continues from it
		return nil, err
	}
	if complete {
		ix.PruneUnseen("")
	}
	if err := ix.Save(); err != nil {
		env.Warnf("%v", err)
	}
	files = misnamed(env, files, q)
	files = oneper(env, files, q)

	var owners map[*file]owner
	if procsOK {
		var open []*file
		for _, f := range files {
			if !launchLive[f.Sum.Header.ID] {
				open = append(open, f)
			}
		}
		owners = attribute(cands, open)
		// A pi in RPC mode (launch --keep-open) outlives its turns like the
		// TUI: between them it is idle, not a print run finishing (§4.2).
		for _, f := range files {
			if pid, ok := keptOpen[f.Sum.Header.ID]; ok {
				if owners == nil {
					owners = map[*file]owner{}
				}
				owners[f] = owner{PID: pid, Detail: fmt.Sprintf("pi process %d kept open by agentctl (RPC mode)", pid)}
			}
		}
	}

	prices := discover.NewPrices(nil, env.Config)
	retries := map[string]retrySettings{}
	retryOf := func(cwd string) retrySettings { // read only for a live pi ending in an error
		rs, ok := retries[cwd]
		if !ok {
			rs = readRetry(agentDir(env), cwd)
			retries[cwd] = rs
		}
		return rs
	}
	out := make([]discover.Session, 0, len(files))
	for _, f := range files {
		if q != nil && !q.Match(f.Sum.Header.ID) {
			continue
		}
		if fl := flavourOf[f.Sum.Header.ID]; fl != "" {
			f.Flavour = fl
		}
		if n := f.Sum.BadUsage; n > 0 && f.Complete {
			env.Warnf("session %s: %d usage record(s) with a negative or impossible token count left out of its totals (%s)", f.Sum.Header.ID, n, f.Path)
		}
		o, owned := owners[f]
		out = append(out, f.session(prices, o, owned, procsOK, retryOf))
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
func (f *file) session(prices *discover.Prices, o owner, owned, procsOK bool, retryOf func(cwd string) retrySettings) discover.Session {
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
	s.StartedAt, s.LastActivity = discover.TimeOrNil(sum.started()), discover.TimeOrNil(sum.activity())
	if sum.Assistants > 0 && f.Complete {
		tok := sum.Tokens
		s.Tokens = &tok
		s.Slots = sum.Slots.Clone()
		est, priced := 0.0, false
		if sum.Cost <= 0 { // pi recorded no cost: estimate from config.prices (docs/agents/pi.md §3)
			est, priced = prices.Estimate(sum.Model, tok)
		}
		s.CostUSD, s.CostSource = discover.Cost(sum.Cost, tok, est, priced)
	}
	if p := h.ParentSession; p != "" {
		s.Extra = map[string]any{"parent_session": p}
	} else if p := h.BranchedFrom; p != "" {
		s.Extra = map[string]any{"parent_session": p}
	}

	outcome := outcomeOf(sum.Leaf)
	var v discover.Verdict
	switch {
	case owned && o.PID != 0:
		v = discover.Verdict{Status: discover.StatusRunning, Evidence: discover.EvidenceProcess, Inferred: true, PID: o.PID, Detail: o.Detail}
		if sum.Leaf.final() {
			v.Status = discover.StatusIdle
			v.Detail = o.Detail + "; last turn: " + outcome
			if l := sum.Leaf; l.Role == "assistant" && l.StopReason == "error" {
				if why, ok := retrying(retryOf(h.Cwd), sum.ErrStreak, l.ErrorMessage); ok {
					v.Status, v.Detail = discover.StatusRunning, o.Detail+"; "+why
				} else {
					// Pi gave up on the provider (after its retries) and is
					// still up: idle, and blocked when the error names the
					// cause (docs/agents/pi.md §4.2).
					v.Blocked = discover.BlockedBy(l.ErrorMessage)
				}
			}
		}
	case owned:
		v = discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceProcess, Inferred: true, Detail: o.Detail}
	case !procsOK && !sum.Leaf.final():
		// Without a process table an open leaf may well be a running turn.
		v = discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceNone, Detail: "no process table; last message is " + outcome}
	default:
		v = discover.TranscriptVerdict(transcriptOutcome(sum.Leaf))
		if !procsOK {
			v.Detail += " (no process table)"
		}
	}
	v.Apply(&s)
	return s
}

// transcriptOutcome is docs/agents/pi.md §4.2 for a session no live process owns. An open
// leaf (user message, tool result, tool call) with nobody writing means the
// process died mid-turn.
func transcriptOutcome(l leaf) (discover.Outcome, string) {
	if l.Role == "assistant" {
		switch l.StopReason {
		case "stop", "length":
			return discover.OutcomeDone, "done"
		case "aborted":
			return discover.OutcomeAborted, "aborted"
		case "error":
			return discover.ErrorOutcome(l.ErrorMessage)
		}
	}
	return discover.OutcomeOpen, "interrupted"
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

// MayHold reports whether a session can have this id: pi's ids are UUIDv7,
// pi-rust's UUIDv4 (docs/agents/pi.md), so an exact id of another agent's shape
// resolves without waiting for this adapter (discover.FindFor).
func (a *Adapter) MayHold(id string) bool { return isUUID(strings.ToLower(id)) }
