// Package gemini is the Gemini CLI adapter's read side (notes:
// docs/agents/gemini.md). Sessions live in ~/.gemini/tmp/<project>/chats/ as
// JSONL patch logs (0.61) or single JSON objects (older CLIs); the project dir
// names the cwd. A session is reported once per header id, whatever files hold
// it (a resume can leave a stray second file with the same id).
//
// Liveness: Gemini CLI writes no pid, lock or registry. A session is alive only
// on agentctl's launch records (folded in by the core) or a gemini process
// whose cwd is the project root and which wrote the session since it started
// (evidence "process", inferred).
package gemini

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
	"github.com/agentctl/agentctl/proc"
)

// Name is the adapter name; Binary is the CLI's executable.
const (
	Name   = "gemini"
	Binary = "gemini"
)

// Adapter reads Gemini CLI sessions.
type Adapter struct {
	// Budget is a listing's time budget (nil: discover.BudgetOf); tests run
	// out of it on purpose.
	Budget func(context.Context) discover.Budget
}

// New returns the Gemini CLI adapter.
func New() *Adapter { return &Adapter{} }

// Name is the adapter name ("gemini").
func (a *Adapter) Name() string { return Name }

// ParsesFiles marks a listing as work on this machine's files (discover.FileParser).
func (*Adapter) ParsesFiles() {}

// MayHold reports whether a session can have this id: Gemini's ids are UUIDs
// (discover.IDShaper).
func (a *Adapter) MayHold(id string) bool { return discover.IsUUID(strings.ToLower(id)) }

// Discover lists every session under the data dir. For an alive-only listing
// with the process table showing no gemini process, only the sessions of
// agentctl's launch records can be alive: only theirs are read.
func (a *Adapter) Discover(ctx context.Context, env *discover.Env) ([]discover.Session, error) {
	if env.OnlyAlive && env.Procs != nil && env.Procs.Available() && len(candidates(env, runtimeDirs(env), nil)) == 0 {
		q := discover.Query{}
		for _, l := range env.Launches {
			if l.Adapter != Name {
				continue
			}
			for _, id := range []string{l.SessionID, l.CurrentSessionID()} {
				if id != "" {
					q.IDs = append(q.IDs, id)
				}
			}
		}
		if len(q.IDs) == 0 {
			return nil, nil
		}
		return a.list(ctx, env, &q)
	}
	return a.list(ctx, env, nil)
}

// Find returns the sessions q names, exactly as Discover lists them: it reads
// the files whose name carries a named id's first 8 characters (or no id at
// all), plus, when a gemini process runs in such a file's project, that
// project's other files (the process is tied to the session of its cwd written
// last); never another project's.
func (a *Adapter) Find(ctx context.Context, env *discover.Env, q discover.Query) ([]discover.Session, error) {
	if q.Prefix == "" && len(q.IDs) == 0 {
		return nil, nil
	}
	return a.list(ctx, env, &q)
}

// merged is one session: every file with its id, folded together.
type merged struct {
	ID    string
	Root  string
	Dir   string // the project's dir under tmp/ (…/.gemini/tmp/<slug>), as the CLI names it
	Start time.Time
	Last  time.Time
	Path  string     // the file that holds the conversation
	main  *summary   // that file's summary
	files []*summary // every file, oldest first
}

func (a *Adapter) list(ctx context.Context, env *discover.Env, q *discover.Query) ([]discover.Session, error) {
	dirs := runtimeDirs(env)

	// agentctl's own launches: their live processes are the core's to report.
	skip := map[int]bool{}
	launchLive := map[string]bool{}
	procsOK := env.Procs != nil && env.Procs.Available()
	for _, l := range env.Launches {
		if l.Adapter != Name || !procsOK {
			continue
		}
		if proc.Check(env.Procs, l.Agent()).Alive {
			skip[l.PID] = true
			for _, d := range proc.Descendants(env.Procs, l.PID) {
				skip[d.PID] = true
			}
			launchLive[l.CurrentSessionID()] = true
		}
	}
	cands := candidates(env, dirs, skip)

	var files []sessionFile
	for _, d := range dirs {
		files = append(files, listFiles(d)...)
	}
	rs := map[string]*roots{}
	rootsOf := func(dir string) *roots {
		if rs[dir] == nil {
			rs[dir] = newRoots(dir)
		}
		return rs[dir]
	}
	if q != nil {
		// A lookup reads the files that may hold a named id, and, when a
		// gemini process runs in the project of one, every file of that
		// project: which session the process is tied to depends on them all
		// (attribute), and on nothing elsewhere.
		live := map[string]bool{}
		for _, c := range cands {
			live[c.Cwd] = true
		}
		projects := map[string]bool{}
		for _, f := range files {
			if f.mayHold(q) && live[filepath.Clean(rootsOf(f.Dir).root(f.Project, ""))] {
				projects[filepath.Join(f.Dir, f.Project)] = true
			}
		}
		kept := files[:0]
		for _, f := range files {
			if f.mayHold(q) || projects[filepath.Join(f.Dir, f.Project)] {
				kept = append(kept, f)
			}
		}
		files = kept
	}

	// A listing spends its time budget (docs/reading-limits.md): the files
	// of sessions that may be alive first and whole, then the newest; past
	// the give-up point the others are left out (Gemini CLI's files have no
	// parse index: a run short of time reads the same newest ones again).
	// A lookup reads its files whole, always.
	var budget discover.Budget
	if q == nil {
		budget = a.budgetOf(ctx)
	}
	must := mustRead(env, cands)
	var ix *index.Index[cached]
	if q == nil {
		ix = index.Load[cached](env.CacheDir(), Name, indexVersion)
	} else {
		ix = index.LoadPoint[cached](env.CacheDir(), Name, indexVersion)
	}
	defer ix.Close()
	sums, musts, late := readAll(ctx, env, ix, files, budget, must)
	if err := ctx.Err(); err != nil {
		_ = ix.Save() // keep what was parsed; the next run continues from it
		return nil, err
	}
	if q == nil && len(late) == 0 {
		ix.PruneUnseen("") // every file was looked at: forget the vanished
	}
	if err := ix.Save(); err != nil {
		env.Warnf("%v", err)
	}
	// A session with a file left out is left out whole (the file may hold
	// its conversation: a resume's stray file alone is no session to show).
	lateID8 := map[string]bool{}
	for i, f := range files {
		if sums[i] == nil && slices.Contains(late, filepath.Base(f.Path)) {
			lateID8[f.ID8] = true
		}
	}
	byID := map[string]*merged{}
	var order []*merged
	wanted := map[*merged]bool{} // may be alive: made first
	for i, f := range files {
		sum := sums[i]
		if sum == nil {
			continue
		}
		if f.ID8 != "" && lateID8[f.ID8] && !musts[i] {
			late = append(late, filepath.Base(f.Path))
			continue
		}
		if sum.ID == "" || sum.Kind == "subagent" {
			continue
		}
		if sum.BadUsage > 0 && (q == nil || q.Match(sum.ID)) {
			env.Warnf("gemini session %s: %d message(s) with impossible token counts left out of its totals (%s)", sum.ID, sum.BadUsage, f.Path)
		}
		m := byID[sum.ID]
		if m == nil {
			m = &merged{ID: sum.ID}
			byID[sum.ID] = m
			order = append(order, m)
		}
		m.add(sum, f.Path)
		wanted[m] = wanted[m] || musts[i]
		if m.Dir == "" || sum.Substantive() {
			m.Dir = filepath.Join(f.Dir, "tmp", f.Project)
		}
		if m.Root == "" {
			m.Root = rootsOf(f.Dir).root(f.Project, sum.ProjectHash)
		}
	}

	if w := discover.NameLeftOut(late, "Gemini CLI session files"); w != "" {
		env.Warnf("%s", w)
	}
	var owners map[*merged]owner
	if procsOK {
		var open []*merged
		for _, m := range order {
			if !launchLive[m.ID] {
				open = append(open, m)
			}
		}
		owners = attribute(cands, open)
	}

	reports := &errReports{dir: tmpDir(env)}
	prices := discover.NewPrices(defaultPrices, env.Config)
	out := make([]discover.Session, 0, len(order))
	// Made the most wanted first (those that may be alive, then the newest)
	// and handed to the listing as they are made (discover.Publish): one
	// whose time is up takes those, never nothing.
	sort.SliceStable(order, func(i, j int) bool {
		if wanted[order[i]] != wanted[order[j]] {
			return wanted[order[i]]
		}
		return order[i].Last.After(order[j].Last)
	})
	for k, m := range order {
		if k%publishEvery == 0 && !discover.Publish(ctx, out, len(order)-k+len(late)) {
			return nil, ctx.Err()
		}
		if q != nil && !q.Match(m.ID) {
			continue
		}
		o, owned := owners[m]
		if owned && o.PID != 0 {
			o.Asking = asking(env.Procs, o.PID, m.main.askedTools(), env.Now())
		}
		out = append(out, m.session(prices, reports, o, owned, procsOK))
	}
	if q == nil && !discover.Publish(ctx, out, len(late)) {
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

// mustRead is which files a listing short of time never leaves out, and reads
// first and whole: those whose name carries a launch record's id, and every
// file written since the earliest start of a gemini process (attribute ties a
// process to the session of its cwd it wrote last: it must see them all).
func mustRead(env *discover.Env, cands []candidate) func(id8 string, mtime time.Time) bool {
	named := map[string]bool{}
	for _, l := range env.LaunchesFor(Name) {
		for _, id := range []string{l.SessionID, l.CurrentSessionID()} {
			if len(id) >= 8 {
				named[strings.ToLower(id[:8])] = true
			}
		}
	}
	var since discover.WrittenSince
	for _, c := range cands {
		since.Open(c.Start, resumeSlack)
	}
	return func(id8 string, mtime time.Time) bool { return (id8 != "" && named[id8]) || since.Holds(mtime) }
}

// readAll parses files (in their order, for the caller) under budget: the
// ones must names first (musts: which), then the newest. Past the give-up
// point the others are left out, and so is one whose read the budget cut:
// late names them.
func readAll(ctx context.Context, env *discover.Env, ix *index.Index[cached], files []sessionFile, budget discover.Budget, must func(string, time.Time) bool) (sums []*summary, musts []bool, late []string) {
	sums, musts = make([]*summary, len(files)), make([]bool, len(files))
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	var mustOf func(int) bool
	if !budget.StopAt.IsZero() {
		mtimes := make([]time.Time, len(files))
		discover.Spread(ctx, len(files), func(i int) {
			if fi, err := os.Stat(files[i].Path); err == nil {
				mtimes[i] = fi.ModTime()
			}
		})
		sort.SliceStable(order, func(a, b int) bool { return mtimes[order[a]].After(mtimes[order[b]]) })
		mustOf = func(i int) bool { return must(files[i].ID8, mtimes[i]) }
	}
	flags := discover.MustFirst(order, mustOf)
	for k, i := range order {
		musts[i] = flags[k]
	}
	var mu sync.Mutex
	leftOut := func(f sessionFile) {
		mu.Lock()
		late = append(late, filepath.Base(f.Path))
		mu.Unlock()
	}
	discover.ParallelWith(ctx, len(order), func(k int, buf *jsonl.Buffer) {
		f := files[order[k]]
		b := budget
		if flags[k] {
			b = discover.Budget{}
		}
		sum, partial, err := readFile(ix, f.Path, buf, b)
		switch {
		case err != nil:
			if !errors.Is(err, fs.ErrNotExist) { // Gemini's own cleanup may have just removed it
				env.Warnf("gemini: %v", err)
			}
		case partial:
			leftOut(f)
		default:
			sums[order[k]] = sum
		}
	})
	return sums, musts, late
}

// readFile is one session file's summary: the parse index's while the file
// is unchanged, else parsed by its extension, through buf (a worker's, reused)
// and under budget. partial: the budget gave up before the file was read, or
// ended the read of a JSONL file before its end (not kept).
func readFile(ix *index.Index[cached], path string, buf *jsonl.Buffer, budget discover.Budget) (_ *summary, partial bool, _ error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false, err
	}
	stamp := index.StampOf(fi)
	if e, ok := ix.Get(path); ok && e.Plan(stamp) == index.Fresh {
		return fromCached(e.Payload), false, nil
	}
	if budget.GivenUp() {
		return nil, true, nil
	}
	f, err := agentfs.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, false, err
	}
	stamp = index.StampOf(fi)
	// Bounded by the size now: the line reader then sizes its buffer to the
	// file, and a line the CLI appends meanwhile waits for the next listing.
	r := &io.LimitedReader{R: f, N: fi.Size()}
	var s *summary
	next := fi.Size()
	if strings.HasSuffix(path, ".json") {
		s, err = readJSON(r)
	} else {
		s, next, partial, err = readJSONLUntil(r, buf, budget)
	}
	if err != nil || partial {
		return s, partial, err
	}
	if c, err := index.PrefixSum(f, next); err == nil {
		ix.Put(path, index.Entry[cached]{Stamp: stamp, Offset: next, Check: c, Payload: toCached(s)})
	}
	return s, false, nil
}

// add folds one file into the session. The conversation is the file with real
// content (a stray resume file holds only a header and the context), the
// latest active of them; tokens and prompts are kept per file and merged by
// message id.
func (m *merged) add(s *summary, path string) {
	m.files = append(m.files, s)
	sort.SliceStable(m.files, func(i, j int) bool { return m.files[i].Start.Before(m.files[j].Start) })
	if !s.Start.IsZero() && (m.Start.IsZero() || s.Start.Before(m.Start)) {
		m.Start = s.Start
	}
	if s.Last.After(m.Last) {
		m.Last = s.Last
	}
	better := m.main == nil ||
		(s.Substantive() && !m.main.Substantive()) ||
		(s.Substantive() == m.main.Substantive() && s.Last.After(m.main.Last))
	if better {
		m.main, m.Path = s, path
	}
}

// facts merges the files' counts: one usage per gemini message id (the file
// written last wins), one prompt per user message id.
func (m *merged) facts() (tok discover.Tokens, slots discover.Slots, prompts int, first, model string, models []string) {
	if len(m.files) == 1 {
		s := m.files[0]
		tok, slots = s.Tokens()
		return tok, slots, s.Prompts(), s.FirstPrompt, s.Model, s.Models
	}
	byLast := append([]*summary(nil), m.files...)
	sort.SliceStable(byLast, func(i, j int) bool { return byLast[i].Last.Before(byLast[j].Last) })
	all := newSummary()
	for _, s := range byLast {
		for _, id := range s.usageOrder {
			if _, ok := all.usage[id]; !ok {
				all.usageOrder = append(all.usageOrder, id)
			}
			all.usage[id] = s.usage[id]
		}
		for id := range s.prompts {
			all.prompts[id] = true
		}
		if s.Model != "" {
			model = s.Model
		}
	}
	for _, s := range m.files { // oldest first
		if first == "" {
			first = s.FirstPrompt
		}
		for _, x := range s.Models {
			if !contains(models, x) {
				models = append(models, x)
			}
		}
	}
	tok, slots = all.Tokens()
	return tok, slots, all.Prompts(), first, model, models
}

// session turns a merged session into a Session with its status
// (docs/agents/gemini.md "Status").
func (m *merged) session(prices *discover.Prices, reports *errReports, o owner, owned, procsOK bool) discover.Session {
	tok, slots, prompts, first, model, models := m.facts()
	s := discover.Session{
		ID:      m.ID,
		Adapter: Name,
		Cwd:     m.Root,
		Model:   model,
		Prompt:  first,
		Path:    m.Path,
		Tokens:  &tok,
		Slots:   slots,
		Extra:   map[string]any{"user_prompts": prompts},
	}
	if len(models) > 0 {
		s.Models = append([]string(nil), models...)
	}
	s.StartedAt, s.LastActivity = discover.TimeOrNil(m.Start), discover.TimeOrNil(m.Last)
	est, priced := estimate(prices, models, model, tok)
	s.CostUSD, s.CostSource = discover.Cost(0, tok, est, priced)

	outcome, detail := m.main.outcome()
	// why is what the blocked reason is read from: the detail without the
	// report's path (a temp dir's random digits once read as a 429).
	why := detail
	if m.main.RolledBack && outcome == discover.OutcomeError {
		// The reason is only in the CLI's error report in the temp dir.
		f := m.main.Failed
		f.ProjectDir = m.Dir
		if msg, path := reports.find(f); path != "" {
			detail += "; error report " + path + ": " + discover.OneLine(msg, 200)
			why += "; " + msg
		}
	}
	var v discover.Verdict
	switch {
	case owned && o.PID != 0:
		v = discover.Verdict{Status: discover.StatusRunning, Evidence: discover.EvidenceProcess, Inferred: true, PID: o.PID, Detail: o.Detail}
		switch outcome {
		case discover.OutcomeOpen:
			if o.Asking != "" {
				v.Status = discover.StatusWaiting
				v.Detail = o.Detail + "; " + o.Asking
			}
		case discover.OutcomeDone, discover.OutcomeNone, discover.OutcomeAborted:
			v.Status = discover.StatusIdle
			v.Detail = o.Detail + "; last turn: " + detail
		case discover.OutcomeError:
			// The TUI shows the failure and waits for the next prompt.
			v.Status = discover.StatusIdle
			v.Detail = o.Detail + "; last turn: " + detail
			v.Blocked = discover.BlockedBy(detail)
		}
	case owned:
		v = discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceProcess, Inferred: true, Detail: o.Detail}
	case !procsOK && outcome == discover.OutcomeOpen:
		v = discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceNone, Detail: "no process table; " + detail}
	default:
		v = discover.TranscriptVerdict(outcome, detail)
		if !procsOK {
			v.Detail += " (no process table)"
		}
	}
	if outcome == discover.OutcomeError && (v.Status == discover.StatusFailed || v.Status == discover.StatusIdle) {
		v.Blocked = discover.BlockedBy(why)
	}
	v.Apply(&s)
	return s
}

// estimate prices tokens from config.prices (Gemini records no cost), when the
// session used one model with a price: the per-message split by model is not
// kept.
func estimate(prices *discover.Prices, models []string, model string, t discover.Tokens) (float64, bool) {
	if len(models) > 1 {
		return 0, false
	}
	return prices.Estimate(model, t)
}

// Explain says what liveness rests on for Gemini (discover.Explainer): there is
// no registry to consult, so a live status is always an inference.
func (a *Adapter) Explain(ctx context.Context, env *discover.Env, s discover.Session) []discover.Signal {
	says := "Gemini CLI keeps no pid, lock or live-session file: liveness is inferred from a gemini node process whose cwd is the project root and which wrote the session since it started"
	return []discover.Signal{{Source: "registry", Found: false, Says: says}}
}
