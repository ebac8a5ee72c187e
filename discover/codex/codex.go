// Package codex is the Codex adapter's read side (notes: docs/agents/codex.md).
//
// Codex keeps one append-only JSONL rollout per thread under
// $CODEX_HOME/sessions/YYYY/MM/DD/ (local-time folders), an index of threads in
// state_<N>.sqlite and per-turn status in thread_history_<N>.sqlite. The rollout is
// the authority; the databases are a fast index that can lag or miss threads (TUI
// threads recorded under another CODEX_HOME, threads whose process died early).
// A thread is alive while a process holds the flock on
// thread-writer-locks/<id>.lock; file age is never evidence of life.
//
// Nothing here writes: databases are opened read-only without creating side files
// where that is safe (see internal/sqlitero), rollouts are read by seek (head and tail).
package codex

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/dirnames"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/internal/sqlitero"
)

// Name is the adapter name.
const Name = "codex"

// Adapter reads Codex threads. The zero value is not ready; use New. Tests replace
// Holders and OpenFiles to simulate live writers.
type Adapter struct {
	// Holders checks the thread-writer locks (Linux: /proc/locks; macOS: lsof).
	Holders Holders
	// OpenFiles lists a process's open files; used only when the lock directory
	// does not exist (Codex before thread-writer locks). nil: not available.
	OpenFiles OpenFiles
	// Budget is how a listing spends the time its context leaves (nil:
	// discover.BudgetOf); tests run out of it on purpose.
	Budget func(context.Context) discover.Budget
}

// New returns the Codex adapter with the platform's lock and fd readers.
// ParsesFiles marks a listing as work on this machine's files (discover.FileParser).
func (*Adapter) ParsesFiles() {}

func New() *Adapter {
	return &Adapter{Holders: defaultHolders(), OpenFiles: defaultOpenFiles()}
}

// Name is "codex".
func (a *Adapter) Name() string { return Name }

// Home is CODEX_HOME: $CODEX_HOME if set, else ~/.codex.
func Home(env *discover.Env) string {
	if h := env.LookupEnv("CODEX_HOME"); h != "" {
		return env.ExpandHome(h)
	}
	return filepath.Join(env.Home, ".codex")
}

// rolloutFile is one rollout found on disk.
type rolloutFile struct {
	Path string
	ID   string // the thread id, from the file name; "" when the name has no UUID
	// Rollout is the rollout's own id: the UUID after "_" in
	// rollout-<time>-<thread>_<rollout>.jsonl (a later file of a thread that
	// spans several, docs/agents/codex.md §1.1), else ID.
	Rollout    string
	Archived   bool
	Compressed bool // .jsonl.zst
}

// findRollouts lists sessions/**/rollout-*.jsonl[.zst] and
// archived_sessions/rollout-*.jsonl[.zst]. Only directory listings: no file is
// opened or stat'ed here. keep, when set, drops the rollouts whose name carries
// an id it rejects before anything is built for them (a lookup among tens of
// thousands of names keeps a few; those without an id are always kept). A
// lookup (keep set) reads the folders' names through names, which keeps them
// between commands (discover/dirnames) in the order of the ids they say:
// given the prefixes of the ids keep accepts, only their names are read from
// a kept listing, so its cost then does not grow with the history.
func findRollouts(home string, keep func(id string) bool, prefixes []string, names *dirnames.Cache) []rolloutFile {
	var out []rolloutFile
	var walk func(dir string, depth int, archived bool)
	walk = func(dir string, depth int, archived bool) {
		for _, e := range listRolloutDir(dir, keep, prefixes, names) {
			name := e.name
			if e.dir {
				if depth < 4 {
					walk(filepath.Join(dir, name), depth+1, archived)
				}
				continue
			}
			rf := rolloutFile{Path: filepath.Join(dir, name), Archived: archived}
			// The id is cut from Path, which is kept anyway, not from name.
			stem := rf.Path
			switch {
			case strings.HasSuffix(name, ".jsonl"):
				stem = strings.TrimSuffix(stem, ".jsonl")
			case strings.HasSuffix(name, ".jsonl.zst"):
				stem = strings.TrimSuffix(stem, ".jsonl.zst")
				rf.Compressed = true
			default:
				continue
			}
			rf.ID = idFromStem(stem)
			rf.Rollout = rolloutIDFromStem(stem)
			out = append(out, rf)
		}
	}
	walk(filepath.Join(home, "sessions"), 0, false)
	walk(filepath.Join(home, "archived_sessions"), 0, true)
	return out
}

// rolloutEntry is a directory or a rollout-* file name of a sessions folder.
type rolloutEntry struct {
	name string
	dir  bool
}

// listRolloutDir returns dir's subdirectories and rollout-* names, sorted by
// name (os.ReadDir's order). With keep, names whose id keep rejects are left
// out before a string is made of them: a lookup reads the names of a big
// history's folders without allocating for each.
func listRolloutDir(dir string, keep func(id string) bool, prefixes []string, names *dirnames.Cache) []rolloutEntry {
	var out []rolloutEntry
	if keep == nil {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil
		}
		for _, e := range ents {
			if e.IsDir() || strings.HasPrefix(e.Name(), "rollout-") {
				out = append(out, rolloutEntry{e.Name(), e.IsDir()})
			}
		}
		return out
	}
	_, _ = names.EachMatch(dir, prefixes, func(b []byte, kind index.EntryKind) {
		if kind == index.KindDir {
			out = append(out, rolloutEntry{string(b), true})
			return
		}
		if !bytes.HasPrefix(b, []byte("rollout-")) {
			return
		}
		// A view of the listing's buffer, used only during this call.
		if id := rolloutKey(b); id != nil && !keep(unsafe.String(unsafe.SliceData(id), len(id))) {
			return
		}
		out = append(out, rolloutEntry{string(b), false})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// openNames opens the kept listings of the sessions folders, keyed by the
// thread id a rollout's name says.
func openNames(env *discover.Env) *dirnames.Cache {
	// "-threads": the key became the thread id of a later file (idFromStem).
	return dirnames.Open(env.CacheDir(), Name+"-threads", rolloutKey)
}

// openLockNames opens the kept listing of thread-writer-locks, keyed by the
// thread id a lock's name says.
func openLockNames(env *discover.Env) *dirnames.Cache {
	return dirnames.Open(env.CacheDir(), Name+"-locks", lockKey)
}

// lockKey is the thread id of "<uuid>.lock", in lower case ("" for other
// names: .coordination.lock is Codex-internal).
func lockKey(name []byte) []byte {
	stem, ok := bytes.CutSuffix(name, []byte(".lock"))
	if !ok || len(stem) != 36 {
		return nil
	}
	id := strings.ToLower(string(stem))
	if !discover.IsUUIDAnyCase(id) {
		return nil
	}
	return []byte(id)
}

// rolloutKey is the id a rollout-* name says ("" for other names).
func rolloutKey(name []byte) []byte {
	if !bytes.HasPrefix(name, []byte("rollout-")) {
		return nil
	}
	stem := bytes.TrimSuffix(bytes.TrimSuffix(name, []byte(".zst")), []byte(".jsonl"))
	id := idFromStem(unsafe.String(unsafe.SliceData(stem), len(stem)))
	if id == "" {
		return nil
	}
	if len(stem) >= 36 && string(stem[len(stem)-36:]) == id {
		return stem[len(stem)-36:] // no copy for a lower-case id
	}
	if len(stem) >= 73 && string(stem[len(stem)-73:len(stem)-37]) == id {
		return stem[len(stem)-73 : len(stem)-37] // a later file of the thread
	}
	return []byte(id)
}

// queryPrefixes are the key prefixes of the ids q names.
func queryPrefixes(q *discover.Query) []string {
	var out []string
	if q.Prefix != "" {
		out = append(out, q.Prefix)
	}
	return append(out, q.IDs...)
}

// idFromStem returns the thread id a rollout's name says: the UUID at the end
// of "rollout-<local time>-<uuid>", or the first of the two UUIDs of
// "rollout-<local time>-<thread>_<rollout>" (a later file of a thread that spans
// several files, docs/agents/codex.md §1.1). A lookup calls it for every name of
// a big history: no allocation unless the name holds upper-case hex.
func idFromStem(stem string) string {
	last := uuidAt(stem, len(stem)-36)
	if last == "" {
		return ""
	}
	if len(stem) >= 73 && stem[len(stem)-37] == '_' {
		if thread := uuidAt(stem, len(stem)-73); thread != "" {
			return thread
		}
	}
	return last
}

// rolloutIDFromStem returns the rollout's own id: the UUID at the end of its
// name ("" when there is none).
func rolloutIDFromStem(stem string) string { return uuidAt(stem, len(stem)-36) }

// uuidAt returns the UUID at s[i:i+36] in lower case, or "".
func uuidAt(s string, i int) string {
	if i < 0 || len(s) < i+36 {
		return ""
	}
	id := s[i : i+36]
	if id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return ""
	}
	var seen uint8 // discover.HexClass bits of the digits
	for _, g := range [...]string{id[:8], id[9:13], id[14:18], id[19:23], id[24:]} {
		for i := 0; i < len(g); i++ {
			k := discover.HexClass[g[i]]
			if k == 0 {
				return ""
			}
			seen |= k
		}
	}
	if seen&discover.UpperHex != 0 {
		return strings.ToLower(id)
	}
	return id
}

// uuidTime is the creation time in a UUIDv7 (first 48 bits, Unix ms): the
// last-resort "started" value.
func uuidTime(id string) time.Time {
	if !discover.IsUUIDAnyCase(id) || id[14] != '7' {
		return time.Time{}
	}
	hex := id[0:8] + id[9:13]
	var ms int64
	for _, c := range hex {
		ms <<= 4
		switch {
		case c >= '0' && c <= '9':
			ms |= int64(c - '0')
		case c >= 'a' && c <= 'f':
			ms |= int64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			ms |= int64(c-'A') + 10
		}
	}
	return time.UnixMilli(ms).UTC()
}

// state is everything read once per command and shared by the per-thread work.
type state struct {
	home    string
	ix      *index.Index[*summary]
	rows    map[string]*threadRow // nil: no usable state DB (rollout-only mode), or no longer needed
	hist    *history              // nil: no usable thread_history DB
	live    *liveness
	launchs map[string][]launchRef
	prices  *discover.Prices
	slots   bool // Env.Slots: count every rollout's slots (summary.NoSlots)
}

// Discover lists every thread: the state DB's rows plus rollouts it does not
// know, each with a status from the lock holder and the latest turn. With
// env.OnlyAlive it leaves out threads that cannot be alive (see collect).
func (a *Adapter) Discover(ctx context.Context, env *discover.Env) ([]discover.Session, error) {
	if env.OnlyAlive {
		if q, lv := a.aliveQuery(ctx, env); q != nil {
			return a.collect(ctx, env, q, lv)
		}
	}
	return a.collect(ctx, env, nil, nil)
}

// aliveQuery is, when thread-writer locks can be checked, the Query naming every
// thread that may be alive: those whose lock is held (nothing else is alive once
// locks are checkable) and those agentctl's launch records name (the core may
// find the launch alive). Find for it lists them exactly as Discover would, with
// the liveness returned. nil when liveness needs the rollouts (open-fd mode) or
// cannot be checked.
func (a *Adapter) aliveQuery(ctx context.Context, env *discover.Env) (*discover.Query, *liveness) {
	home := Home(env)
	if st, err := os.Stat(home); err != nil || !st.IsDir() {
		return nil, nil
	}
	needRollouts := false
	lv := a.checkLiveness(ctx, env, home, func() map[string]string { needRollouts = true; return nil }, nil)
	if needRollouts || !lv.checkable {
		return nil, nil
	}
	q := &discover.Query{}
	for id := range lv.holders {
		q.IDs = append(q.IDs, id)
	}
	for _, l := range env.LaunchesFor(Name) {
		q.IDs = append(q.IDs, l.SessionID, l.CurrentSessionID())
	}
	if len(q.IDs) > 500 {
		return nil, nil // too many to name in one query: list everything
	}
	sort.Strings(q.IDs)
	return q, lv
}

// Find returns the threads q names, exactly as Discover lists them: a thread's
// status depends only on its own rollout, DB rows and lock, so only the rollouts
// whose file name carries a matching id (and those whose name carries none) are
// read, and the databases are queried for matching ids only. The lock directory
// is judged in full, as Discover does.
func (a *Adapter) Find(ctx context.Context, env *discover.Env, q discover.Query) ([]discover.Session, error) {
	return a.collect(ctx, env, &q, nil)
}

// collect lists the threads q names (nil: all of them). lv is the liveness
// already read for this command (nil: read it here).
func (a *Adapter) collect(ctx context.Context, env *discover.Env, q *discover.Query, lv *liveness) ([]discover.Session, error) {
	if q != nil && q.Prefix == "" && len(q.IDs) == 0 {
		return nil, nil // names nothing (alive-only, no lock held, no launch): read nothing
	}
	home := Home(env)
	if st, err := os.Stat(home); err != nil || !st.IsDir() {
		return nil, nil // Codex not used on this machine
	}
	// A rollout's summary is its head and tail, read by seek: a lookup reads its
	// few rollouts rather than load an index that holds every thread's.
	cache := env.CacheDir()
	if q != nil {
		cache = ""
	}
	st := &state{home: home, ix: index.Load[*summary](cache, Name, indexVersion), prices: discover.NewPrices(defaultPrices, env.Config), slots: env.Slots}
	var keep func(string) bool
	if q != nil {
		keep = q.Match
	}
	var names *dirnames.Cache
	var prefixes []string
	if q != nil {
		names, prefixes = openNames(env), queryPrefixes(q)
	}
	files := findRollouts(home, keep, prefixes, names)
	if err := names.Save(); err != nil {
		env.Warnf("%v", err)
	}
	if q != nil {
		kept := files[:0]
		for _, rf := range files {
			// A name without an id: the id is in its session_meta, read below.
			if rf.ID == "" || q.Match(rf.ID) {
				kept = append(kept, rf)
			}
		}
		files = kept
	}

	dbHome := sqliteHome(env.LookupEnv, home)
	if p := newestDB(dbHome, "state_"); p != "" {
		note, err := sqlitero.Read(ctx, p, func(ctx context.Context, db *sql.DB) (err error) {
			st.rows, err = readThreads(ctx, db, q)
			return err
		})
		if note != "" {
			env.Warnf("%s", note)
		}
		if err != nil {
			st.rows = nil
			env.Warnf("%s: %v; listing from rollouts only", p, err)
		}
	}
	if p := newestDB(dbHome, "thread_history_"); p != "" {
		_, err := sqlitero.Read(ctx, p, func(ctx context.Context, db *sql.DB) (err error) {
			st.hist, err = readHistory(ctx, db, histQuery(q, files))
			return err
		})
		if err != nil {
			st.hist = nil
		}
	}

	// One job per thread: rollouts first, then DB rows without a rollout found.
	// A thread may span several rollouts (docs/agents/codex.md §1.1): they are
	// one job, read from the newest (rf) and, for what only the first knows (the
	// prompt, the start), the first.
	type job struct {
		id    string
		rf    *rolloutFile
		first *rolloutFile   // the thread's first rollout when it spans several, else nil
		parts []*rolloutFile // all of them, first to newest (nil: just rf)
		row   *threadRow
	}
	var jobs []job
	seen := make(map[string]int, len(files)) // thread id → its job
	zst := 0
	for i := range files {
		rf := &files[i]
		if rf.ID != "" {
			if k, ok := seen[rf.ID]; ok {
				j := &jobs[k]
				if j.parts == nil {
					j.parts = []*rolloutFile{j.rf}
				}
				dup := false
				for _, p := range j.parts {
					dup = dup || p.Rollout == rf.Rollout
				}
				if !dup { // the same rollout in sessions/ and archived_sessions/: first wins
					j.parts = append(j.parts, rf)
				}
				continue
			}
		}
		if rf.Compressed {
			zst++
		}
		if rf.ID != "" {
			seen[rf.ID] = len(jobs)
		}
		jobs = append(jobs, job{id: rf.ID, rf: rf, row: st.rows[rf.ID]})
	}
	for k := range jobs {
		j := &jobs[k]
		if len(j.parts) < 2 {
			j.parts = nil
			continue
		}
		orderParts(j.parts)
		j.rf, j.first = newestPart(j.parts, j.row), j.parts[0]
		if j.first == j.rf {
			j.first = nil
		}
	}
	for _, id := range sortedIDs(st.rows) {
		if _, ok := seen[id]; ok {
			st.rows[id].RolloutPath = "" // the rollout found on disk is used: free the copy
			continue
		}
		row := st.rows[id]
		var rf *rolloutFile
		if row.RolloutPath != "" {
			if _, err := os.Stat(row.RolloutPath); err == nil {
				stem := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(row.RolloutPath), ".zst"), ".jsonl")
				rf = &rolloutFile{Path: row.RolloutPath, ID: id, Rollout: rolloutIDFromStem(stem), Compressed: strings.HasSuffix(row.RolloutPath, ".zst")}
			}
		}
		jobs = append(jobs, job{id: id, rf: rf, row: row})
	}
	// The rows are needed again only to look up the id a rollout without one in
	// its name declares; otherwise each row is let go once its thread is listed
	// (below), rather than all of them staying until the last one is.
	idless := false
	for _, j := range jobs {
		idless = idless || j.id == ""
	}
	if !idless {
		st.rows = nil
	}
	if zst > 0 {
		env.Warnf("%d compressed rollouts (.jsonl.zst) listed from their file names and the state DB only: reading zstd is not supported yet", zst)
	}

	rollouts := func() map[string]string { // only without thread-writer locks
		m := make(map[string]string, len(jobs))
		for _, j := range jobs {
			if j.id != "" && j.rf != nil {
				m[j.id] = j.rf.Path
			}
		}
		return m
	}
	st.live = lv
	if st.live == nil {
		st.live = a.checkLiveness(ctx, env, home, rollouts, q)
	}
	st.launchs = launchRefs(env)

	// First every rollout's summary (from the index, or read), then the sessions:
	// the index is saved and let go in between, so a listing never holds it and
	// all the sessions at once.
	//
	// Rollouts are read newest first (the jobs are in the order of the dated
	// folders and of the names, which start with the creation time: read
	// backwards), so that when the budget gives up (a cold index on a cold
	// disk) the rollouts left unread, and out of this listing, are the oldest;
	// the adapter then answers in time with the rest instead of not at all.
	// The threads that may be alive (a writer holds their lock or their
	// rollout, or agentctl launched them) are read before all others and never
	// left out: a slow disk costs a listing old threads, never a live one.
	reads := make([]rolloutRead, len(jobs))
	firsts := make([]rolloutRead, len(jobs)) // a thread's first rollout, when it spans several
	budgetOf := a.Budget
	if budgetOf == nil {
		budgetOf = discover.BudgetOf
	}
	budget := budgetOf(ctx)
	mayLive := map[string]bool{}
	for id := range st.live.holders {
		mayLive[id] = true
	}
	for _, l := range env.LaunchesFor(Name) {
		mayLive[l.SessionID], mayLive[l.CurrentSessionID()] = true, true
	}
	order := make([]int, len(jobs))
	for k := range order {
		order[k] = len(jobs) - 1 - k
	}
	must := discover.MustFirst(order, func(i int) bool { return jobs[i].id != "" && mayLive[jobs[i].id] })
	discover.ParallelWith(ctx, len(order), func(k int, sc *scratch) {
		i := order[k]
		j := &jobs[i]
		if j.rf == nil || j.rf.Compressed {
			return
		}
		needHead := j.row == nil || j.row.FirstUserMessage == "" || j.row.Cwd == "" || j.id == ""
		needCtx := j.row == nil || j.row.Cwd == "" || j.row.Model == ""
		r := &reads[i]
		c := st.cached(j.rf.Path, needHead, needCtx)
		if budget.GivenUp() && !c.fresh && !must[k] {
			r.late = true
			return
		}
		r.sum, r.size, r.mtime, r.err = st.summarize(c, j.rf.Path, needHead, needCtx, sc)
		if j.first != nil && !j.first.Compressed {
			f := &firsts[i]
			f.sum, f.size, f.mtime, f.err = st.summarize(st.cached(j.first.Path, true, false), j.first.Path, true, false, sc)
		}
	})
	var late []string
	for i := range reads {
		if reads[i].late {
			late = append(late, filepath.Base(jobs[i].rf.Path))
		}
	}
	if w := discover.NameLeftOut(late, "rollouts"); w != "" {
		env.Warnf("%s", w)
	}
	if err := ctx.Err(); err != nil {
		_ = st.ix.Save() // keep what was parsed; the next run continues from it
		return nil, err
	}
	if q == nil {
		st.ix.PruneUnseen(home + string(filepath.Separator)) // a complete scan: forget vanished rollouts
	}
	if err := st.ix.Save(); err != nil {
		env.Warnf("%v", err)
	}
	st.ix = nil

	// The rollouts by their own ids, for the forks' history chains (built once,
	// when a fork asks).
	ownIDs := sync.OnceValue(func() func(rollout, from string) string {
		m := make(map[string]string, len(files))
		for _, rf := range files {
			if rf.Rollout != "" && !rf.Compressed {
				if _, ok := m[rf.Rollout]; !ok {
					m[rf.Rollout] = rf.Path
				}
			}
		}
		return func(rollout, from string) string {
			if p, ok := m[rollout]; ok {
				return p
			}
			if q != nil { // a lookup lists only its threads' rollouts
				return findRolloutByOwnID(env, rollout, from)
			}
			return ""
		}
	})
	out := make([]discover.Session, len(jobs))
	ok := make([]bool, len(jobs))
	var warnMu sync.Mutex
	unreadable := 0
	discover.ParallelWith(ctx, len(jobs), func(i int, sc *scratch) {
		j, r, first := jobs[i], reads[i], firsts[i]
		jobs[i].row, reads[i], firsts[i] = nil, rolloutRead{}, rolloutRead{} // each row and summary goes once used
		if r.late {
			return // left out, named above
		}
		s, good, err := st.session(env, j.id, j.rf, j.row, r, sc)
		if good && j.parts != nil {
			st.spanning(&s, j.parts, first)
		}
		// A fork says what it inherited; its first rollout names the parent.
		if firstPath, sum := j.rf, r.sum; good && sum != nil {
			if j.first != nil {
				firstPath, sum = j.first, first.sum
			}
			if sum != nil && sum.ForkedFrom != "" {
				st.forkExtra(&s, sum.ForkedFrom, historyChain(firstPath.Path, ownIDs()))
			}
		}
		if err != nil {
			warnMu.Lock()
			unreadable++
			if unreadable <= 3 {
				env.Warnf("%v", err)
			}
			warnMu.Unlock()
		}
		out[i], ok[i] = s, good
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if unreadable > 3 {
		env.Warnf("%d more rollouts could not be read", unreadable-3)
	}
	// A rollout without a UUID in its name gets its id from session_meta, which
	// may repeat one already listed: keep the first.
	res := out[:0]
	listed := make(map[string]bool, len(out))
	for i := range out {
		if ok[i] && !listed[out[i].ID] && (q == nil || q.Match(out[i].ID)) {
			listed[out[i].ID] = true
			res = append(res, out[i])
		}
	}
	return res, nil
}

// spanning completes the session of a thread that spans several rollouts
// (docs/agents/codex.md §1.1), built from the newest (its tokens, tail and
// status): the first rollout gives the first prompt and the start, and
// rollout_files says how many there are.
func (st *state) spanning(s *discover.Session, parts []*rolloutFile, first rolloutRead) {
	if s.Extra == nil {
		s.Extra = map[string]any{}
	}
	s.Extra["rollout_files"] = len(parts)
	if first.sum == nil || first.sum.Head == nil {
		return
	}
	h := first.sum.Head
	if h.Prompt != "" {
		if s.Title == s.Prompt {
			s.Title = h.Prompt
		}
		s.Prompt = h.Prompt
	}
	// threads.created_at_ms is the newest rollout's: the thread started with
	// its first.
	if !h.Started.IsZero() && (s.StartedAt == nil || h.Started.Before(*s.StartedAt)) {
		s.StartedAt = discover.TimeOrNil(h.Started)
	}
}

// histQuery is q for thread_history, which keys turns by rollout: the ids of
// the later rollouts of the threads q names are added (nil: everything).
func histQuery(q *discover.Query, files []rolloutFile) *discover.Query {
	if q == nil {
		return nil
	}
	hq := *q
	hq.IDs = append([]string(nil), q.IDs...)
	for _, rf := range files {
		if rf.Rollout != "" && rf.Rollout != rf.ID {
			hq.IDs = append(hq.IDs, rf.Rollout)
		}
	}
	return &hq
}

// orderParts sorts a thread's rollouts first to newest: the one named by the
// thread id alone first, then the later ones by their own ids (UUIDv7s, whose
// order is their creation order; the names' times have only seconds).
func orderParts(parts []*rolloutFile) {
	sort.SliceStable(parts, func(a, b int) bool {
		pa, pb := parts[a], parts[b]
		if (pa.Rollout == pa.ID) != (pb.Rollout == pb.ID) {
			return pa.Rollout == pa.ID
		}
		return pa.Rollout < pb.Rollout
	})
}

// newestPart is the rollout a thread continues in: the one the state DB's
// threads.rollout_path names (Codex switches it on a revert), else the newest.
func newestPart(parts []*rolloutFile, row *threadRow) *rolloutFile {
	if row != nil && row.RolloutPath != "" {
		want := filepath.Base(row.RolloutPath)
		for _, p := range parts {
			if p.Path == row.RolloutPath || filepath.Base(p.Path) == want {
				return p
			}
		}
	}
	return parts[len(parts)-1]
}

// rolloutRead is what summarize returned for one rollout.
type rolloutRead struct {
	sum   *summary // nil: not read (no rollout, compressed, or err)
	size  int64
	mtime time.Time
	err   error
	late  bool // not read: the budget gave up first
}

// session builds one thread's Session from its DB row (may be nil) and rollout
// (may be nil) as read. ok is false when there is nothing to show (no id).
func (st *state) session(env *discover.Env, id string, rf *rolloutFile, row *threadRow, r rolloutRead, sc *scratch) (discover.Session, bool, error) {
	var head headInfo
	var tail tailInfo
	var slots discover.Slots
	var size int64
	var mtime time.Time
	haveTail, haveHead := false, false
	var readErr error
	if rf != nil && !rf.Compressed {
		if r.err == nil && r.sum != nil {
			tail, size, mtime, haveTail = r.sum.Tail, r.size, r.mtime, true
			slots = r.sum.Slots
			if r.sum.Head != nil {
				head, haveHead = *r.sum.Head, true
			}
		} else if r.err != nil {
			readErr = discover.Errorf(rf.Path, r.err)
		}
	}
	if id == "" {
		id = strings.ToLower(head.ID)
		if row == nil {
			row = st.rows[id]
		}
	}
	if id == "" {
		return discover.Session{}, false, readErr
	}

	s := discover.Session{ID: id, Adapter: Name, Extra: map[string]any{}}
	if rf != nil {
		s.Path = rf.Path
		if rf.Archived {
			s.Extra["archived"] = true
		}
		if rf.Compressed {
			s.Extra["compressed"] = true
		}
	}

	// Fields: the DB row first where docs/agents/codex.md prefers it, then the rollout.
	if row != nil {
		s.Cwd, s.Model, s.Prompt = row.Cwd, row.Model, row.FirstUserMessage
		s.Title = row.Name
		if s.Title == "" {
			s.Title = row.Title
		}
		s.GitBranch, s.AgentVersion, s.Entrypoint, s.PermissionMode = row.GitBranch, row.CLIVersion, row.Originator, row.Approval
		s.StartedAt, s.LastActivity = discover.MilliOrNil(row.CreatedMS), discover.MilliOrNil(row.UpdatedMS)
		setExtra(s.Extra, "provider", row.Provider)
		setExtra(s.Extra, "source", row.Source)
		setExtra(s.Extra, "parent_thread_id", row.ParentID)
		if row.Archived {
			s.Extra["archived"] = true
		}
	}
	if haveTail {
		if s.Cwd == "" {
			s.Cwd = tail.Cwd
		}
		if s.Model == "" {
			s.Model = tail.Model
		}
		if s.Model == "" {
			s.Model = tail.SettingsModel
		}
		if s.PermissionMode == "" {
			s.PermissionMode = tail.Approval
		}
		if !tail.LastTS.IsZero() && (s.LastActivity == nil || tail.LastTS.After(*s.LastActivity)) {
			t := tail.LastTS
			s.LastActivity = &t
		}
		if n := tail.BadTokens; n > 0 {
			kept := "so it has no token totals"
			if tail.Tokens != nil {
				kept = "the previous valid one is used"
			}
			env.Warnf("session %s: %d token_count record(s) with a negative or impossible cumulative count skipped; %s (%s)", id, n, kept, rf.Path)
		}
		if u := tail.Tokens; u != nil {
			tok := tokensOf(u)
			s.Tokens = &tok
			if st.slots {
				s.Slots = slots.Clone()
			}
			s.Extra["tokens_total"] = u.Total
			if u.Reasoning > 0 {
				s.Extra["tokens_reasoning"] = u.Reasoning
			}
		}
	}
	if row != nil && row.HasTokens && row.TokensUsed > 0 && s.Extra["tokens_total"] == nil {
		s.Extra["tokens_total"] = row.TokensUsed
	}
	if haveHead {
		if s.Cwd == "" {
			s.Cwd = head.Cwd
		}
		if s.Prompt == "" {
			s.Prompt = head.Prompt
		}
		if s.GitBranch == "" && row == nil {
			s.GitBranch = head.GitBranch
		}
		if s.AgentVersion == "" {
			s.AgentVersion = head.CLIVersion
		}
		if s.Entrypoint == "" {
			s.Entrypoint = head.Originator
		}
		if s.StartedAt == nil {
			s.StartedAt = discover.TimeOrNil(head.Started)
		}
		if row == nil {
			setExtra(s.Extra, "provider", head.Provider)
			setExtra(s.Extra, "source", head.Source)
		}
	}
	if s.Title == "" {
		s.Title = s.Prompt
	}
	if s.StartedAt == nil {
		s.StartedAt = discover.TimeOrNil(uuidTime(id))
	}
	if s.LastActivity == nil {
		s.LastActivity = discover.TimeOrNil(mtime)
	}

	if s.Tokens != nil {
		// Codex records no cost: an estimate at the session's (last) model.
		est, priced := estimate(st.prices, s.Model, *s.Tokens)
		s.CostUSD, s.CostSource = discover.Cost(0, *s.Tokens, est, priced)
	}
	st.applyStatus(env, &s, rf, row, haveTail, tail, size)
	if len(s.Extra) == 0 {
		s.Extra = nil
	}
	sc.sh.Share(&s)
	return s, true, readErr
}

func setExtra(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// launchRef is the part of a launch record the status needs.
type launchRef struct {
	log      string
	launched time.Time
}

// launchRefs indexes agentctl's Codex launch records by session id, newest last.
// The core folds the records' PIDs in after Discover; here they only point at the
// launch log, which can say a turn failed when the rollout cannot.
func launchRefs(env *discover.Env) map[string][]launchRef {
	out := map[string][]launchRef{}
	for _, l := range env.LaunchesFor(Name) {
		id := l.CurrentSessionID()
		if id == "" || l.Log == "" {
			continue
		}
		out[id] = append(out[id], launchRef{log: l.Log, launched: l.LaunchedAt})
	}
	return out
}

// daemonPID reads app-server-daemon/daemon.pid (the TUI's background daemon).
func daemonPID(home string) int {
	b, err := agentfs.ReadFile(filepath.Join(home, "app-server-daemon", "daemon.pid"))
	if err != nil {
		return 0
	}
	var d struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(b, &d) != nil {
		return 0
	}
	return d.PID
}

// MayHold reports whether a thread can have this id: thread ids are UUIDs
// (docs/agents/codex.md), so an exact id of another agent's shape resolves
// without waiting for this adapter (discover.FindFor).
func (a *Adapter) MayHold(id string) bool { return discover.IsUUIDAnyCase(id) }
