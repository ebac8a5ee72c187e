// Package qwen is the Qwen Code adapter's read side (notes: docs/agents/qwen.md).
// Qwen Code keeps one JSONL transcript per session under
// ~/.qwen/projects/<sanitised cwd>/chats/<sessionId>.jsonl, and while a TUI runs
// a live-session record ~/.qwen/sessions/<pid>.json with the process's start
// token (deleted on a clean exit, left behind by a kill).
//
// Liveness: a registry record whose pid is alive with its recorded start token
// (registry); else a qwen CLI process whose argv names the session, or whose
// cwd and start time tie it to exactly one session (process, inferred);
// else the transcript's last turn says stopped or failed.
package qwen

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// Name is the adapter name; Binary the CLI's executable.
const (
	Name   = "qwen-code"
	Binary = "qwen"
)

// Adapter reads Qwen Code sessions.
type Adapter struct {
	// StartTime dates a process of the snapshot (wall clock); nil: the process
	// table's own. Tests inject a fixed one.
	StartTime func(proc.Process) (time.Time, bool)
	// Budget is a listing's time budget (nil: discover.BudgetOf); tests run
	// out of it on purpose.
	Budget func(context.Context) discover.Budget
}

// New returns the Qwen Code adapter.
func New() *Adapter { return &Adapter{} }

// Name is "qwen-code".
func (a *Adapter) Name() string { return Name }

// ParsesFiles marks a listing as work on this machine's files (discover.FileParser).
func (*Adapter) ParsesFiles() {}

// DataDir is Qwen's global dir ($QWEN_HOME or ~/.qwen; discover.DataDirer).
func (a *Adapter) DataDir(env *discover.Env) string { return qwenDir(env) }

// Discover lists every session: one per transcript, plus live TUIs whose
// registry record names a session with no transcript yet.
func (a *Adapter) Discover(ctx context.Context, env *discover.Env) ([]discover.Session, error) {
	return a.collect(ctx, env, nil)
}

// Find returns the sessions q names, exactly as Discover lists them. A
// transcript's name is its session id, so without a qwen process to attribute
// (which may depend on every session of its cwd) only the named files are read.
func (a *Adapter) Find(ctx context.Context, env *discover.Env, q discover.Query) ([]discover.Session, error) {
	return a.collect(ctx, env, &q)
}

// MayHold reports whether a session can have this id: Qwen's ids are UUIDs.
func (a *Adapter) MayHold(id string) bool { return discover.IsUUID(strings.ToLower(id)) }

func (a *Adapter) collect(ctx context.Context, env *discover.Env, q *discover.Query) ([]discover.Session, error) {
	lookup := q != nil
	procsOK := env.Procs != nil && env.Procs.Available()
	regs := verifyRegistry(env, readRegistry(env))
	livePIDs := map[int]bool{}
	for _, r := range regs {
		if r.Live {
			livePIDs[r.PID] = true
		}
	}
	var cands []candidate
	if procsOK {
		cands = candidates(env, a.startTime(env), livePIDs)
	}
	if q == nil && env.OnlyAlive && procsOK && len(cands) == 0 && allDead(regs) {
		// Nothing of Qwen's runs: only agentctl's launch records can make a
		// session alive, so only their sessions are read.
		q = &discover.Query{}
		for _, l := range env.LaunchesFor(Name) {
			for _, id := range []string{l.SessionID, l.CurrentSessionID()} {
				if id != "" {
					q.IDs = append(q.IDs, id)
				}
			}
		}
		if len(q.IDs) == 0 {
			return nil, nil
		}
	}
	var keep func(string) bool
	if q != nil && len(cands) == 0 {
		keep = q.Match
	}
	files := listChats(chatRoots(env), keep)

	// A listing spends its time budget; a lookup (lookup) never leaves out a
	// file. The sessions that may be alive are read first and whole.
	var budget discover.Budget
	if !lookup {
		budget = a.budgetOf(ctx)
	}
	must := mustRead(env, regs, cands)
	// One session per id: two roots may both hold it (a relocated runtime dir).
	parsed, late, err := summarise(ctx, env, files, keep != nil, budget, must)
	if err != nil {
		return nil, err
	}
	if w := discover.NameLeftOut(late, "Qwen Code sessions"); w != "" {
		env.Warnf("%s", w)
	}
	sums := make([]*summary, 0, len(files))
	paths := map[*summary]string{}
	byID := map[string]*summary{}
	for i, f := range files {
		s := parsed[i]
		if s == nil {
			continue
		}
		switch {
		case s.ID == "":
			s.ID = f.Name // a file with no readable record yet
		case s.ID != f.Name:
			// Qwen names every transcript by its session id: this is a copy
			// saved under another name. Skipped by every listing, so that a
			// lookup by name and the full listing agree.
			if q == nil || q.Match(s.ID) || q.Match(f.Name) {
				env.Warnf("qwen: %s holds session %s, not the one its name says; skipped", f.Path, s.ID)
			}
			continue
		}
		if prev, dup := byID[s.ID]; dup {
			keepNew := s.Activity.After(prev.Activity)
			kept, dropped := paths[prev], f.Path
			if keepNew {
				kept, dropped = f.Path, paths[prev]
			}
			if q == nil || q.Match(s.ID) {
				env.Warnf("session %s is in two files, %s and %s; showing %s", s.ID, kept, dropped, kept)
			}
			if !keepNew {
				continue
			}
			for i, x := range sums {
				if x == prev {
					sums = append(sums[:i], sums[i+1:]...)
					break
				}
			}
		}
		byID[s.ID] = s
		paths[s] = f.Path
		sums = append(sums, s)
	}

	regOf := registryBySession(regs)
	var open []*summary // sessions no live registry record holds
	for _, s := range sums {
		if r, ok := regOf[s.ID]; !ok || !r.Live {
			open = append(open, s)
		}
	}
	owners := attribute(cands, open)

	prices := discover.NewPrices(nil, env.Config)
	now := time.Now
	if env.Now != nil {
		now = env.Now
	}
	out := make([]discover.Session, 0, len(sums))
	// The sessions are made the most wanted first (those that may be alive,
	// then the newest) and handed to the listing as they are made
	// (discover.Publish): one whose time is up takes those, never nothing.
	sort.SliceStable(sums, func(i, j int) bool {
		mi, mj := must(sums[i].ID, sums[i].Activity), must(sums[j].ID, sums[j].Activity)
		if mi != mj {
			return mi
		}
		return sums[i].Activity.After(sums[j].Activity)
	})
	// A live TUI before its first prompt has a record and no transcript yet.
	for id, r := range regOf {
		if !r.Live || byID[id] != nil || (q != nil && !q.Match(id)) {
			continue
		}
		out = append(out, registryOnly(r))
	}
	for k, s := range sums {
		if k%publishEvery == 0 && !discover.Publish(ctx, out, len(sums)-k+len(late)) {
			return nil, ctx.Err()
		}
		if q != nil && !q.Match(s.ID) {
			continue
		}
		if s.BadUsage > 0 {
			env.Warnf("session %s: %d api_response record(s) with a negative or impossible token count left out of its totals (%s)", s.ID, s.BadUsage, paths[s])
		}
		r, hasReg := regOf[s.ID]
		var rp *regCheck
		if hasReg {
			rp = &r
		}
		o, owned := owners[s]
		out = append(out, build(s, paths[s], rp, o, owned, procsOK, prices, now(), env.Procs))
	}
	if !lookup && !discover.Publish(ctx, out, len(late)) {
		return nil, ctx.Err()
	}
	return out, nil
}

// publishEvery is how many sessions a listing makes between two hand-overs of
// what it has (discover.Publish).
const publishEvery = 32

// budgetOf is a listing's time budget (Adapter.Budget, else ctx's).
func (a *Adapter) budgetOf(ctx context.Context) discover.Budget {
	if a.Budget != nil {
		return a.Budget(ctx)
	}
	return discover.BudgetOf(ctx)
}

// allDead reports whether every registry record is known not to be alive.
func allDead(regs []regCheck) bool {
	for _, r := range regs {
		if r.Live || !r.Known {
			return false
		}
	}
	return true
}

// registryBySession keeps one record per session: a live one, else the one
// started last (a killed TUI's leftover, then a later one for the same id).
func registryBySession(regs []regCheck) map[string]regCheck {
	out := map[string]regCheck{}
	for _, r := range regs {
		prev, ok := out[r.SessionID]
		switch {
		case !ok,
			r.Live && !prev.Live,
			r.Live == prev.Live && r.StartedAt > prev.StartedAt:
			out[r.SessionID] = r
		}
	}
	return out
}

func (a *Adapter) startTime(env *discover.Env) func(proc.Process) (time.Time, bool) {
	if a.StartTime != nil {
		return a.StartTime
	}
	return func(p proc.Process) (time.Time, bool) { return env.Procs.StartTime(p.PID) }
}

// build turns a summary into a Session with its status.
func build(s *summary, path string, reg *regCheck, o owner, owned, procsOK bool, prices *discover.Prices, now time.Time, t proc.Table) discover.Session {
	out := discover.Session{
		ID:           s.ID,
		Adapter:      Name,
		Cwd:          s.Cwd,
		Model:        s.Model,
		Prompt:       s.Prompt,
		GitBranch:    s.GitBranch,
		AgentVersion: s.Version,
		Path:         path,
	}
	if len(s.Models) > 0 {
		out.Models = append([]string(nil), s.Models...)
	}
	out.StartedAt, out.LastActivity = discover.TimeOrNil(s.Started), discover.TimeOrNil(s.Activity)
	tok := s.Tokens()
	out.Tokens = &tok
	out.Slots = s.Slots.Clone()
	est, priced := prices.Estimate(s.Model, tok) // Qwen records no cost
	out.CostUSD, out.CostSource = discover.Cost(0, tok, est, priced)
	if !s.Sub.Zero() || !s.Inherited.Zero() {
		out.Extra = map[string]any{}
		if !s.Sub.Zero() {
			out.Extra["tokens_subagents"] = s.Sub
		}
		if !s.Inherited.Zero() {
			out.Extra["tokens_inherited"] = s.Inherited
		}
	}
	if reg != nil {
		out.Kind = reg.Kind
	}

	var v discover.Verdict
	switch {
	case reg != nil && reg.Live:
		v = liveVerdict(s, reg.Kind == "tui", now, func(since time.Time) bool { return startedSince(t, reg.PID, since) })
		v.Evidence, v.PID = discover.EvidenceRegistry, reg.PID
		v.Detail = join(reg.Detail, v.Detail)
	case owned && !o.Ambiguous:
		v = liveVerdict(s, false, now, nil)
		v.Evidence, v.PID, v.Inferred = discover.EvidenceProcess, o.PID, !o.ByArgv
		if o.ByArgv {
			v.Evidence = discover.EvidenceArgv
		}
		v.Detail = join(o.Detail, v.Detail)
	case reg != nil && !reg.Known:
		v = discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceRegistry, Detail: reg.Detail}
	case owned:
		v = discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceProcess, Inferred: true, Detail: o.Detail}
	default:
		oc, detail := s.outcome()
		if !procsOK && oc == discover.OutcomeOpen {
			v = discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceNone, Detail: "no process table; transcript " + detail}
			break
		}
		v = discover.TranscriptVerdict(oc, detail)
		if oc == discover.OutcomeError {
			v.Blocked = s.blocked()
		}
		switch {
		case reg != nil:
			v.Evidence, v.Detail = discover.EvidenceStaleRegistry, join(reg.Detail, v.Detail)
		case !procsOK:
			v.Detail += " (no process table)"
		}
	}
	v.Apply(&out)
	return out
}

// liveVerdict is the sub-state of a session whose process is alive. A TUI at
// rest is idle; a headless run works until it exits (the memory extractor runs
// after the reply), so it is running. started reports whether a process of
// the TUI's has started since a moment (nil: not known, never waiting).
func liveVerdict(s *summary, tui bool, now time.Time, started func(since time.Time) bool) discover.Verdict {
	if !tui {
		v := discover.Verdict{Status: discover.StatusRunning}
		if s.ErrAfter != "" {
			v.Detail = "last API call failed: " + s.ErrAfter
		}
		return v
	}
	switch s.Last {
	case lastNone:
		return discover.Verdict{Status: discover.StatusIdle, Detail: "no prompt yet"}
	case lastReply:
		return discover.Verdict{Status: discover.StatusIdle, Detail: "last turn answered"}
	}
	if s.ErrAfter != "" {
		if fastFail(s.ErrStatus, s.ErrAfter) {
			// Qwen gave up at once and waits for the user.
			return discover.Verdict{Status: discover.StatusIdle, Blocked: s.blocked(), Detail: "last turn failed: " + s.ErrAfter}
		}
		return discover.Verdict{Status: discover.StatusRunning, Detail: "retrying after: " + s.ErrAfter}
	}
	if s.Last == lastToolCall && !s.LastTS.IsZero() {
		// Qwen runs an approved shell command as a child process at once; none
		// started since the call: its approval dialog.
		if age := now.Sub(s.LastTS); started != nil && age >= approvalGrace && !started(s.LastTS.Add(-time.Second)) {
			return discover.Verdict{Status: discover.StatusWaiting, Inferred: true,
				Detail: fmt.Sprintf("tool call %s unanswered for %s and no process started to run it (inferred permission prompt)", s.PendingTool, age.Round(time.Second))}
		}
	}
	return discover.Verdict{Status: discover.StatusRunning}
}

// startedSince reports whether a descendant of pid started at or after since
// (a process whose start cannot be read counts, and so does a table that
// cannot be read: never a false "waiting").
func startedSince(t proc.Table, pid int, since time.Time) bool {
	if t == nil || !t.Available() {
		return true
	}
	for _, d := range proc.Descendants(t, pid) {
		if st, ok := t.StartTime(d.PID); !ok || !st.Before(since) {
			return true
		}
	}
	return false
}

// registryOnly is a live TUI that has not written its transcript yet.
func registryOnly(r regCheck) discover.Session {
	s := discover.Session{ID: r.SessionID, Adapter: Name, Cwd: r.Cwd, AgentVersion: r.QwenVersion, Kind: r.Kind}
	if r.StartedAt > 0 {
		t := time.UnixMilli(r.StartedAt).UTC()
		s.StartedAt, s.LastActivity = &t, &t
	}
	v := discover.Verdict{Status: discover.StatusIdle, Evidence: discover.EvidenceRegistry, PID: r.PID, Detail: join(r.Detail, "no prompt yet")}
	if r.Kind != "tui" {
		v.Status = discover.StatusRunning
	}
	v.Apply(&s)
	return s
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
