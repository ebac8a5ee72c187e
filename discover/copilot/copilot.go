// Package copilot is the GitHub Copilot CLI adapter's read side (notes:
// docs/agents/copilot.md). Every session is a directory
// ~/.copilot/session-state/<id>/ (COPILOT_HOME replaces ~/.copilot) holding
// events.jsonl, the authoritative event log, and workspace.yaml.
//
// Liveness: a Copilot process holding a session keeps inuse.<pid>.lock in its
// directory and removes it on a clean exit, so no lock means no live process;
// a lock whose pid is gone, is not copilot or started after the lock was
// written is stale (SIGKILL). Running vs idle comes from the event log (a turn
// in flight) and, for the TUI, open-sessions-state.json's "working".
package copilot

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
)

// indexVersion is the parse index's version: bump it whenever what summary
// means changes (its shape is checked by the index itself).
const indexVersion = 2 // 2: the binary format (codec.go)

// Name is the adapter name; Binary the CLI's executable; EnvHome the variable
// that replaces ~/.copilot.
const (
	Name    = "copilot"
	Binary  = "copilot"
	EnvHome = "COPILOT_HOME"
)

// Adapter reads GitHub Copilot CLI sessions.
type Adapter struct {
	// Budget is a full listing's time budget (nil: discover.BudgetOf);
	// tests run out of it on purpose.
	Budget func(context.Context) discover.Budget
}

// New returns the Copilot adapter.
func New() *Adapter { return &Adapter{} }

// Name is the adapter name ("copilot").
func (*Adapter) Name() string { return Name }

// ParsesFiles marks a listing as work on this machine's files (discover.FileParser).
func (*Adapter) ParsesFiles() {}

// DataDir is ~/.copilot, or $COPILOT_HOME (discover.DataDirer).
func (*Adapter) DataDir(env *discover.Env) string {
	if d := strings.TrimSpace(env.LookupEnv(EnvHome)); d != "" {
		return env.ExpandHome(d)
	}
	return filepath.Join(env.Home, ".copilot")
}

// Discover lists every session directory that has an event log (or a live
// holder). With env.OnlyAlive only the sessions with a live lock holder or a
// launch record of agentctl's are read.
func (a *Adapter) Discover(ctx context.Context, env *discover.Env) ([]discover.Session, error) {
	return a.list(ctx, env, nil)
}

// Find returns the sessions q names, exactly as Discover lists them: a
// session's id is its directory's name, so only the named directories are read.
func (a *Adapter) Find(ctx context.Context, env *discover.Env, q discover.Query) ([]discover.Session, error) {
	return a.list(ctx, env, &q)
}

func (a *Adapter) list(ctx context.Context, env *discover.Env, q *discover.Query) ([]discover.Session, error) {
	root := a.DataDir(env)
	stateDir := filepath.Join(root, "session-state")
	launched := map[string]bool{}
	for _, l := range env.LaunchesFor(Name) {
		for _, id := range []string{l.SessionID, l.CurrentSessionID()} {
			if id != "" {
				launched[id] = true
			}
		}
	}
	if q == nil && env.OnlyAlive && env.Procs != nil && env.Procs.Available() && !anyCopilot(env, env.Procs) {
		// No copilot process runs, so no inuse lock can be held: only the
		// sessions of agentctl's launch records can be alive, and only
		// theirs are read (no session folder is listed otherwise).
		q = &discover.Query{}
		for id := range launched {
			q.IDs = append(q.IDs, id)
		}
		if len(q.IDs) == 0 {
			return nil, nil
		}
	}
	ents, err := os.ReadDir(stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, discover.Errorf(stateDir, err)
	}
	// The parse index keeps each events.jsonl's summary while the file is
	// unchanged (same file, size and mtime): an appended file is parsed again
	// whole, which for Copilot's logs (tens of KB a session) costs less than
	// carrying the dedupe state needed to resume.
	var ix *index.Index[summary]
	if q == nil {
		ix = index.Load[summary](env.CacheDir(), Name, indexVersion)
	} else {
		ix = index.LoadPoint[summary](env.CacheDir(), Name, indexVersion)
	}
	defer ix.Close()
	// First what each session folder says of liveness (its inuse locks) and
	// how new its event log is: a listing reads the sessions that may be
	// alive first, then the newest, so that one short of time lists those.
	type dirState struct {
		id, dir string
		files   []os.DirEntry
		locks   lockState
		mtime   time.Time
		stamp   index.Stamp // events.jsonl's, for a listing short of time
		must    bool        // may be alive: never left out
	}
	var dirs []*dirState
	for _, e := range ents {
		id := e.Name()
		if !e.IsDir() || strings.HasPrefix(id, ".") {
			continue // .session-operation-locks and the like
		}
		if q != nil && !q.Match(id) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dir := filepath.Join(stateDir, id)
		files, err := os.ReadDir(dir)
		if err != nil {
			env.Warnf("copilot session %s: %v", id, err)
			continue
		}
		locks := checkLocks(env, readLocks(dir, files))
		if env.OnlyAlive && locks.Live == nil && !locks.Unknown && !launched[id] {
			continue // certainly not alive
		}
		d := &dirState{id: id, dir: dir, files: files, locks: locks, must: locks.Live != nil || locks.Unknown || launched[id]}
		if q == nil {
			for _, f := range files {
				if f.Name() == "events.jsonl" {
					if fi, err := f.Info(); err == nil {
						d.mtime, d.stamp = fi.ModTime(), index.StampOf(fi)
					}
				}
			}
		}
		dirs = append(dirs, d)
	}
	sort.SliceStable(dirs, func(i, j int) bool {
		if dirs[i].must != dirs[j].must {
			return dirs[i].must
		}
		return dirs[i].mtime.After(dirs[j].mtime)
	})
	// A full listing spends its time budget (docs/reading-limits.md): past
	// the give-up point the sessions not read yet are left out and named, and
	// so is a session whose log read the budget cut (its entry is not kept:
	// Copilot's logs are parsed whole). The sessions that may be alive are
	// read whole whatever the budget, and a lookup reads its few sessions
	// whole, always.
	var budget discover.Budget
	if q == nil {
		budget = a.budgetOf(ctx)
	}
	var open openState
	for _, d := range dirs {
		if d.locks.Live != nil {
			open = readOpenState(root)
			break
		}
	}
	prices := discover.NewPrices(nil, env.Config)
	out := make([]discover.Session, 0, len(dirs))
	var late []string
	// Read on the listing's workers, publishEvery folders at a time, each
	// batch's sessions kept in order and handed over as it is done.
	type result struct {
		s  discover.Session
		st readState
	}
	res := make([]result, publishEvery)
	for start := 0; start < len(dirs); start += publishEvery {
		batch := dirs[start:min(start+publishEvery, len(dirs))]
		discover.Parallel(ctx, len(batch), func(k int) {
			d := batch[k]
			if !d.must && budget.GivenUp() && !ix.Fresh(filepath.Join(d.dir, "events.jsonl"), d.stamp) {
				res[k] = result{st: cut}
				return
			}
			b := budget
			if d.must {
				b = discover.Budget{}
			}
			s, st := readSession(env, ix, d.id, d.dir, d.files, d.locks, open, prices, b)
			res[k] = result{s, st}
		})
		if err := ctx.Err(); err != nil {
			_ = ix.Save() // keep what was parsed; the next run continues from it
			if q != nil {
				return nil, err
			}
			return out, err // the listing takes what was published
		}
		for k, r := range res[:len(batch)] {
			switch r.st {
			case cut:
				late = append(late, batch[k].id)
			case listed:
				out = append(out, r.s)
			}
		}
		if !discover.Publish(ctx, out, len(dirs)-start-len(batch)+len(late)) {
			_ = ix.Save()
			return nil, ctx.Err()
		}
	}
	if w := discover.NameLeftOut(late, "Copilot sessions"); w != "" {
		env.Warnf("%s", w)
	}
	if q == nil && !env.OnlyAlive && len(late) == 0 {
		ix.PruneUnseen("") // every file was looked at: forget the vanished
	}
	if err := ix.Save(); err != nil {
		env.Warnf("%v", err)
	}
	discover.Publish(ctx, out, len(late))
	// Sorted in a copy: the listing may hold what was published.
	out = append([]discover.Session(nil), out...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// publishEvery is how many sessions a listing makes between two hand-overs of
// what it has (discover.Publish).
const publishEvery = 32

// readState is what became of one session folder.
type readState int

const (
	skipped readState = iota // no session to list
	listed
	cut // not listed: the budget cut the read of its event log
)

// budgetOf is the listing's time budget (Adapter.Budget, else ctx's).
func (a *Adapter) budgetOf(ctx context.Context) discover.Budget {
	if a.Budget != nil {
		return a.Budget(ctx)
	}
	return discover.BudgetOf(ctx)
}

// workspace is workspace.yaml: small, flat, written by Copilot; unknown keys
// are ignored.
type workspace struct {
	ID        string `yaml:"id"`
	Cwd       string `yaml:"cwd"`
	Branch    string `yaml:"branch"`
	Name      string `yaml:"name"`
	UserNamed bool   `yaml:"user_named"`
	CreatedAt string `yaml:"created_at"`
	UpdatedAt string `yaml:"updated_at"`
}

func readWorkspace(dir string) (workspace, bool) {
	b, err := readSmall(filepath.Join(dir, "workspace.yaml"), 1<<20)
	if err != nil {
		return workspace{}, false
	}
	return parseWorkspace(b)
}

func parseWorkspace(b []byte) (workspace, bool) {
	var w workspace
	err := yaml.Unmarshal(b, &w)
	var te *yaml.TypeError
	if err != nil && !errors.As(err, &te) {
		return workspace{}, false
	}
	return w, true // a value of the wrong type leaves the others read
}

// readSession builds one session from its directory: skipped for a directory
// that holds no session to list (no events.jsonl and no live holder: a TUI
// closed before its first prompt), cut when the budget ended the read of its
// event log before its end (left out).
func readSession(env *discover.Env, ix *index.Index[summary], id, dir string, files []os.DirEntry, locks lockState, open openState, prices *discover.Prices, budget discover.Budget) (discover.Session, readState) {
	path := filepath.Join(dir, "events.jsonl")
	var sum *summary
	hasEvents := false
	for _, f := range files {
		if f.Name() == "events.jsonl" && !f.IsDir() {
			hasEvents = true
		}
	}
	if hasEvents {
		var st readState
		if sum, st = parseCached(env, ix, id, path, budget); st != listed {
			return discover.Session{}, st
		}
	}
	if sum == nil {
		if locks.Live == nil && !locks.Unknown {
			return discover.Session{}, skipped
		}
		sum = &summary{}
		path = ""
	}
	ws, _ := readWorkspace(dir)
	if sum.ID != "" && sum.ID != id {
		env.Warnf("copilot session directory %s holds the events of session %s; listed under the directory's name, which is what copilot --resume takes", id, sum.ID)
	}
	s := discover.Session{
		ID:           id,
		Adapter:      Name,
		Cwd:          nonEmpty(sum.Cwd, ws.Cwd),
		Model:        sum.model(),
		Prompt:       sum.Prompt,
		GitBranch:    nonEmpty(sum.Branch, ws.Branch),
		AgentVersion: sum.Version,
		Path:         path,
	}
	if ws.UserNamed {
		s.Title = strings.TrimSpace(ws.Name)
	}
	if sum.LastCwd != "" && sum.LastCwd != s.Cwd {
		s.LastCwd = sum.LastCwd
	}
	if len(sum.Models) > 1 {
		s.Models = append([]string(nil), sum.Models...)
	}
	started := sum.Started
	if started.IsZero() {
		started = parseTime(ws.CreatedAt)
	}
	if !started.IsZero() {
		s.StartedAt = &started
	}
	last := sum.Last
	if last.IsZero() {
		last = parseTime(ws.UpdatedAt)
	}
	if !last.IsZero() {
		s.LastActivity = &last
	}
	if path != "" {
		tok := sum.tokens()
		s.Tokens = &tok
		if sum.Usage > 0 {
			s.Slots = sum.Slots.Clone()
		}
		// Copilot's own usage "cost" counts premium requests, not dollars:
		// only an estimate from configured prices is a cost in USD.
		est, priced := estimate(prices, sum, tok)
		s.CostUSD, s.CostSource = discover.Cost(0, tok, est, priced)
		if sum.BadUsage > 0 {
			env.Warnf("copilot session %s: %d usage record(s) unreadable or with impossible token counts left out of its totals (%s)", id, sum.BadUsage, path)
		}
		if sum.Usage == 0 && sum.HaveShutdown && !tok.Zero() {
			s.Extra = map[string]any{"tokens_source": "session.shutdown"}
		}
		if !sum.Sub.Zero() && sum.Usage > 0 {
			s.Extra = map[string]any{"tokens_subagents": sum.Sub}
		}
	}
	verdict(sum, locks, open, id).Apply(&s)
	return s, listed
}

// parseCached is the summary of one events.jsonl, from the index when the file
// is unchanged since it was parsed: skipped when it cannot be read, cut when
// the budget ended the read before the end of the file.
func parseCached(env *discover.Env, ix *index.Index[summary], id, path string, budget discover.Budget) (*summary, readState) {
	f, err := os.Stat(path)
	if err != nil {
		env.Warnf("copilot session %s: %v", id, err)
		return nil, skipped
	}
	stamp := index.StampOf(f)
	if e, ok := ix.Get(path); ok && e.Plan(stamp) == index.Fresh {
		sum := e.Payload
		return &sum, listed
	}
	fd, err := agentfs.Open(path)
	if err != nil {
		env.Warnf("copilot session %s: %v", id, err)
		return nil, skipped
	}
	defer fd.Close()
	// Bounded by the size now: what Copilot appends meanwhile is the next
	// listing's.
	sum, next, partial, err := parseEventsUntil(io.LimitReader(fd, stamp.Size), budget)
	switch {
	case err != nil:
		env.Warnf("copilot session %s: read %s: %v", id, path, err)
		return sum, listed // what was read, not indexed
	case partial:
		return nil, cut
	}
	if c, err := index.PrefixSum(fd, next); err == nil {
		ix.Put(path, index.Entry[summary]{Stamp: stamp, Offset: next, Check: c, Payload: *sum})
	}
	return sum, listed
}

// verdict is the session's status (docs/agents/copilot.md "Status").
func verdict(sum *summary, locks lockState, open openState, id string) discover.Verdict {
	switch {
	case locks.Live != nil:
		v := discover.Verdict{Status: discover.StatusIdle, Evidence: discover.EvidenceRegistry, PID: locks.Live.PID, Detail: locks.Detail}
		switch {
		case sum.waiting():
			v.Status = discover.StatusWaiting
			v.Detail += "; a permission request is unanswered"
		case sum.inFlight() || open.working(id):
			v.Status = discover.StatusRunning
			v.Detail += "; a turn is in flight"
		case sum.failed():
			// Copilot gave up on the provider (after its own retries) and is
			// still up: idle, blocked when the error says why.
			d := sum.errDetail()
			v.Blocked = discover.BlockedBy(d)
			v.Detail += "; last turn: " + d
		case locks.Headless:
			// Before its prompt is on disk (the request goes out first) and
			// between its turns, a headless run is at work until it exits.
			v.Status = discover.StatusRunning
			v.Detail += "; a headless run (its command line) is at work until it exits"
		}
		return v
	case locks.Unknown:
		return discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceNone, Detail: locks.Detail}
	}
	v := discover.TranscriptVerdict(sum.outcome())
	if locks.Stale {
		v.Detail += "; " + locks.Detail
	}
	return v
}

// estimate prices the tokens from configured prices when every model that
// answered has one (one model: the usual case).
func estimate(prices *discover.Prices, sum *summary, t discover.Tokens) (float64, bool) {
	if len(sum.Models) > 1 {
		return 0, false
	}
	return prices.Estimate(sum.model(), t)
}
