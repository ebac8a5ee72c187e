// Package claude is the Claude Code adapter's read side (notes: docs/agents/claude-code.md
// docs/agents/claude-code.md §1–5): sessions from the transcripts under the config root, liveness from
// Claude's registry and the process table, and the conversation for peek. It only
// reads Claude's files; its own parse index lives in agentctl's cache dir.
package claude

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/proc"
)

// Name is the adapter name.
const Name = "claude-code"

// Adapter reads Claude Code sessions. The zero value is ready to use; tests set
// the host identity and start-time conversion so they do not depend on the host.
type Adapter struct {
	// MachineID and PidNS identify this host for 2.1.329+ registry pidDomain
	// checks (default: /etc/machine-id and readlink /proc/self/ns/pid).
	MachineID func() string
	PidNS     func() string
	// StartMillis converts a process start to epoch ms (default: btime + field 22
	// on Linux). Used for registry entries without procStart and the process scan.
	StartMillis startMillis
	// Budget is how a listing spends the time its context leaves (nil:
	// discover.BudgetOf); tests run out of it on purpose.
	Budget func(context.Context) discover.Budget
}

// New returns the Claude adapter.
// ParsesFiles marks a listing as work on this machine's files (discover.FileParser).
func (*Adapter) ParsesFiles() {}

func New() *Adapter { return &Adapter{} }

// Name is the adapter name.
func (a *Adapter) Name() string { return Name }

func (a *Adapter) host() hostIdentity {
	h := defaultHost()
	if a.MachineID != nil {
		h.MachineID = a.MachineID
	}
	if a.PidNS != nil {
		h.PidNS = a.PidNS
	}
	return h
}

func (a *Adapter) startMillis(t proc.Table) startMillis {
	if a.StartMillis != nil {
		return a.StartMillis
	}
	return func(p proc.Process) (int64, bool) {
		st, ok := t.StartTime(p.PID)
		return st.UnixMilli(), ok
	}
}

// Discover lists every session: each transcript under <root>/projects, plus live
// registry entries whose transcript does not exist yet. With env.OnlyAlive it
// leaves out sessions that cannot be alive (see alivePossible).
func (a *Adapter) Discover(ctx context.Context, env *discover.Env) ([]discover.Session, error) {
	if env.OnlyAlive {
		return a.collect(ctx, env, selection{onlyAlive: true})
	}
	return a.collect(ctx, env, selection{})
}

// Find returns the sessions q names, exactly as Discover lists them: only their
// transcripts are stat'ed and read, with the registry and the process table
// judged in full. The one cross-session rule (a claude process with nothing but a
// cwd hosts the most recent session there) needs every session of that cwd: when
// a found session is in the cwd of such a process, Find lists everything.
func (a *Adapter) Find(ctx context.Context, env *discover.Env, q discover.Query) ([]discover.Session, error) {
	return a.collect(ctx, env, selection{query: &q})
}

// selection is what a collect call lists.
type selection struct {
	query     *discover.Query // only sessions it names (Find)
	onlyAlive bool            // may leave out sessions that cannot be alive
}

func (sel selection) want(id string) bool { return sel.query == nil || sel.query.Match(id) }

func (a *Adapter) collect(ctx context.Context, env *discover.Env, sel selection) ([]discover.Session, error) {
	root := Root(env)
	procs := env.Procs
	if procs == nil {
		procs = &proc.Fake{NoProcs: true} // no table at all: liveness is unknown, never guessed
	}
	startMs := a.startMillis(procs)
	now := time.Now
	if env.Now != nil {
		now = env.Now
	}
	budgetOf := a.Budget
	if budgetOf == nil {
		budgetOf = discover.BudgetOf
	}
	sc := &scanner{budget: budgetOf(ctx)}
	var reg registry
	var claudes []claudeProc
	var stated []*fileState
	var err error
	if sel.onlyAlive && procs.Available() {
		// An alive-only listing starts from what can be alive; it lists the
		// transcripts only when that needs them (below).
		reg = readRegistry(ctx, root, procs, a.host(), startMs)
		claudes = findClaudeProcs(procs, startMs)
	} else {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the registry is independent of the transcripts
			defer wg.Done()
			reg = readRegistry(ctx, root, procs, a.host(), startMs)
		}()
		if sel.query != nil {
			stated, sc.unreadable, err = findTranscripts(root, *sel.query)
		} else {
			stated, err = sc.listAndStat(ctx, root)
		}
		wg.Wait()
		if procs.Available() {
			claudes = findClaudeProcs(procs, startMs)
		}
	}
	regs := reg.Entries
	regMoved := reg.changedWithin(midTurnRecent, now())
	scanCwds := cwdScanned(regs, claudes)
	subset := sel.onlyAlive && procs.Available() && len(scanCwds) == 0
	if sel.onlyAlive && procs.Available() {
		switch {
		case !subset:
			// A claude process the process scan may tie to any session of its
			// cwd: every transcript counts.
			stated, err = sc.listAndStat(ctx, root)
		case regMoved:
			// A mid-turn transcript written in the last minute may be unknown
			// (notLive): their ages are needed.
			stated, err = sc.listAndStat(ctx, root)
		default:
			// Only the sessions something alive names: their transcripts by name.
			stated, sc.unreadable, err = namedTranscripts(root, alivePossible(env, regs, claudes, true))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read Claude projects in %s: %w (check its permissions, or set CLAUDE_CONFIG_DIR)", root, err)
	}
	if u := sc.unreadable; len(u) > 0 {
		env.Warnf("%d project folder(s) could not be read and their sessions are missing (first: %v); check their permissions", len(u), u[0])
	}

	var ix *index.Index[*aggregate]
	if sel.query != nil || subset {
		// A lookup, or an alive-only listing that reads a few transcripts: the
		// entries of those, not the whole index (it is not pruned either).
		ix = index.LoadPoint[*aggregate](env.CacheDir(), Name, indexVersion)
	} else {
		ix = loadIndex(env.CacheDir())
	}
	sc.ix = ix
	defer ix.Close()

	// Which transcripts to read. Everything, unless only some sessions can matter.
	load := stated
	if subset && regMoved {
		keep := alivePossible(env, regs, claudes, true)
		load = load[:0:0]
		for _, f := range stated {
			// A transcript written in the last minute may end mid-turn (unknown).
			if keep[f.ID] || now().Sub(f.Mtime) < midTurnRecent {
				load = append(load, f)
			}
		}
	}
	sc.mustRead = mustRead(env, regs, claudes, now())
	fin := &finisher{a: a, env: env, sel: sel, regs: regs, regMoved: regMoved, procs: procs, claudes: claudes,
		root: root, now: now(), jobs: loadJobIndex(root), mustRead: sc.mustRead}
	var files []*fileState
	var errs []error
	if sel.query == nil && len(load) > 2*quickFirst {
		// A listing short of time may be taken before the whole history is
		// read and made (each step costs time in proportion to it): its most
		// wanted transcripts are read, and their sessions made and handed
		// over, first.
		head, rest := wantedFirstFiles(load, sc.mustRead)
		files, errs = sc.load(ctx, head, true)
		if _, serrs := sc.load(ctx, sc.subagentFiles(ctx, files), false); len(serrs) > 0 {
			errs = append(errs, serrs...)
		}
		if _, taken := fin.make(ctx, files, load, false); taken {
			_ = ix.Save()
			return nil, ctx.Err()
		}
		more, merrs := sc.load(ctx, rest, true)
		files, errs = append(files, more...), append(errs, merrs...)
	} else {
		files, errs = sc.load(ctx, load, true)
	}
	if w := discover.NameLeftOut(sc.late, "transcripts"); w != "" {
		env.Warnf("%s", w)
	}
	if _, serrs := sc.load(ctx, sc.subagentFiles(ctx, files), false); len(serrs) > 0 {
		errs = append(errs, serrs...)
	}
	var tooLong []string
	for _, f := range files {
		if f.Agg.TooLong > 0 {
			tooLong = append(tooLong, f.Path)
		}
		subs := f.Subs[:0]
		for _, sub := range f.Subs {
			if sub.Agg != nil {
				subs = append(subs, sub)
				if sub.Agg.TooLong > 0 {
					tooLong = append(tooLong, sub.Path)
				}
			}
		}
		f.Subs = subs
	}
	if w := discover.NameTooLong(tooLong); w != "" {
		env.Warnf("%s", w)
	}
	if sc.cut {
		// Out of time before every transcript was listed or read: keep what
		// was parsed (the next run continues from it) and list what was read,
		// in case the listing takes part of an answer (discover.Publish).
		_ = ix.Save()
		if sel.query != nil {
			return nil, ctx.Err()
		}
	}
	fin.late = len(sc.late)
	if sc.cut {
		fin.late = max(fin.late, len(stated)-len(files))
	}
	if sel.query != nil && len(scanCwds) > 0 {
		for _, f := range files {
			if scanCwds[f.Agg.Cwd] || scanCwds[f.Agg.LastCwd] {
				// Its status may depend on the other sessions of that cwd.
				_ = ix.Save()
				all, err := a.collect(ctx, env, selection{})
				var out []discover.Session
				for _, s := range all {
					if sel.want(s.ID) {
						out = append(out, s)
					}
				}
				return out, err
			}
		}
	}
	// A lookup needs its bucket's other transcripts for the fork rule (fork.go):
	// loaded before the index is saved, so that the next lookup finds them there
	// instead of parsing them again.
	var siblings []*fileState
	if sel.query != nil {
		forks := loadForks(env.CacheDir(), true)
		siblings = sc.bucketSiblings(ctx, files, forks)
		forks.Close()
	}
	if sel.query == nil && !sel.onlyAlive && !sc.cut {
		// A complete listing: record the buckets' fork tables for lookups.
		forks := loadForks(env.CacheDir(), false)
		recordForks(forks, sc.dirStamps, stated, files)
		forks.PruneUnseen(filepath.Join(root, "projects") + string(filepath.Separator))
		if err := forks.Save(); err != nil {
			env.Warnf("%v", err)
		}
	}
	if sel.query == nil && !subset && !sc.cut {
		ix.PruneUnseen(filepath.Join(root, "projects") + string(filepath.Separator))
	}
	if err := ix.Save(); err != nil {
		env.Warnf("%v", err)
	}
	if len(errs) > 0 {
		env.Warnf("%d transcripts could not be read and are missing (first: %v); check their permissions", len(errs), errs[0])
	}
	fin.siblings = siblings
	out, taken := fin.make(ctx, files, files, true)
	if taken {
		return nil, ctx.Err()
	}
	if sc.cut {
		return out, ctx.Err() // the listing takes what was published
	}
	return out, nil
}

// quickFirst is how many sessions a large listing makes first, before the
// rest (finisher.make).
const quickFirst = 1000

// finisher makes a listing's sessions from its read transcripts.
type finisher struct {
	a        *Adapter
	env      *discover.Env
	sel      selection
	regs     []regCheck
	regMoved bool
	procs    proc.Table
	claudes  []claudeProc
	root     string
	now      time.Time
	jobs     *jobIndex
	siblings []*fileState
	mustRead func(*fileState) bool
	late     int // transcripts the listing left unread
}

// make makes the sessions of files (all: every transcript read; registry and
// argv sessions are those without one in all), handing them to the listing
// as they are made (discover.Publish). A final make warns and lets the
// transcripts' aggregates go; a first one (of the most wanted files) does
// neither. taken: the listing took what was published and wants no more.
func (fn *finisher) make(ctx context.Context, files, all []*fileState, final bool) (out []discover.Session, taken bool) {
	env, sel, regs, procs, claudes, jobs := fn.env, fn.sel, fn.regs, fn.procs, fn.claudes, fn.jobs
	if !final {
		env = env.WithWarn(func(string) {})
		files = append([]*fileState(nil), files...)
	}
	siblings := fn.siblings
	have := make(map[string]bool, len(all)) // before dedupe, which reorders all's array
	for _, f := range all {
		have[f.ID] = true
	}
	transcripts := len(have) // the listing's, one per session id
	// Fork families are per bucket, before dedupe (a hand-made copy elsewhere
	// does not change what a fork copied from its parent).
	if sel.query != nil {
		markInherited(ctx, append(siblings, files...))
	} else {
		markInherited(ctx, files)
	}
	files = dedupe(env, files)
	var partial []string
	for _, f := range files {
		if !f.Complete {
			partial = append(partial, f.ID)
		}
	}
	if w := discover.NameIncomplete(partial, "transcripts"); w != "" {
		env.Warnf("%s", w)
	}

	cands := make([]candidate, 0, len(files)+len(regs))
	for _, f := range files {
		cands = append(cands, candidate{ID: f.ID, Cwd: f.Agg.Cwd, LastCwd: f.Agg.LastCwd, LastMs: f.Agg.LastMs,
			Mtime: f.Mtime, Entrypoint: f.Agg.Entrypoint, Agg: f.Agg, Job: jobs.of(f.ID)})
	}
	var regOnly []*regCheck
	for i := range regs {
		r := &regs[i]
		if r.Verdict == regLive && !have[r.SessionID] && sel.want(r.SessionID) {
			have[r.SessionID] = true
			regOnly = append(regOnly, r)
			cands = append(cands, candidate{ID: r.SessionID, Cwd: r.Cwd, Entrypoint: r.Entrypoint, Job: jobs.of(r.SessionID)})
		}
	}
	// A live claude whose argv names a session that has neither a transcript nor
	// a registry entry yet (the moment after `claude --session-id X` starts): the
	// process is the truth about life (docs/agents/claude-code.md §4.2), so the
	// session exists, with no prompt yet. Only a process of this config root
	// counts: its environment must put its root here.
	var argvOnly []claudeProc
	for _, p := range claudes {
		id := p.Flags.Names
		if id == "" || have[id] || !sel.want(id) || !p.HasStart || !inRoot(procs, p.PID, fn.root) {
			continue
		}
		have[id] = true
		argvOnly = append(argvOnly, p)
		ep := "cli"
		if p.Flags.Print {
			ep = "sdk-cli"
		}
		cands = append(cands, candidate{ID: id, Cwd: p.Cwd, Entrypoint: ep, Job: jobs.of(id)})
	}
	verdicts := judge(cands, regs, fn.regMoved, procs, claudes, fn.now)

	prices := newPriceTable(env.Config)
	warned := map[string]bool{}
	unknownModel := func(m string) {
		if !warned[m] {
			warned[m] = true
			env.Warnf("no price for model %s; its sessions have no cost estimate (add it to `prices` in config.json)", m)
		}
	}
	out = make([]discover.Session, 0, len(cands))
	bg := backgroundOf(regs)
	// The sessions are made the most wanted first — those without a
	// transcript (alive by the registry or an argv), those that may be alive,
	// then the newest — and handed to the listing as they are made
	// (discover.Publish): one short of time takes those, never nothing.
	for i, r := range regOnly {
		out = append(out, registrySession(r, verdicts[len(files)+i]))
		markBackground(&out[len(out)-1], bg, cands[len(files)+i].Job)
	}
	for i, p := range argvOnly {
		k := len(files) + len(regOnly) + i
		out = append(out, argvSession(p, cands[k].Entrypoint, verdicts[k]))
	}
	// Left out: the transcripts not made yet, and those the budget or the
	// deadline left unread.
	left := transcripts + len(cands) - len(files) + fn.late // sessions of the listing, and unread
	publish := func() bool { return discover.Publish(ctx, out, left-len(out)) }
	if !publish() {
		return nil, true
	}
	for k, i := range wantedFirst(files, fn.mustRead) {
		f := files[i]
		if n := f.Agg.BadUsage; n > 0 && final {
			env.Warnf("session %s: %d usage record(s) with a negative or impossible token count left out of its totals (%s)", f.ID, n, f.Path)
		}
		out = append(out, toSession(f, verdicts[i], prices, unknownModel))
		markBackground(&out[len(out)-1], bg, cands[i].Job)
		if final {
			// Done with the aggregate: the sessions keep what they need, and a big
			// history's aggregates need not all stay until the last is converted.
			f.Agg, cands[i].Agg = nil, nil
		}
		if k%publishEvery == publishEvery-1 && !publish() {
			return nil, true
		}
	}
	return out, !publish()
}

// publishEvery is how many sessions a listing makes between two hand-overs of
// what it has (discover.Publish).
const publishEvery = 32

// wantedFirst is the order in which a listing makes files' sessions: those
// must names (that may be alive) first, then the newest.
func wantedFirst(files []*fileState, must func(*fileState) bool) []int {
	type key struct {
		wanted bool
		ms     int64
		i      int
	}
	keys := make([]key, len(files))
	for i, f := range files {
		keys[i] = key{must != nil && must(f), lastSeenMs(f), i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case a.wanted != b.wanted:
			if a.wanted {
				return -1
			}
			return 1
		case a.ms != b.ms:
			return cmp.Compare(b.ms, a.ms)
		}
		return cmp.Compare(a.i, b.i)
	})
	order := make([]int, len(files))
	for k, c := range keys {
		order[k] = c.i
	}
	return order
}

// wantedFirstFiles splits the transcripts to read into the quickFirst a
// listing reads and makes first — those must names (that may be alive), then
// the most recently written — and the rest.
func wantedFirstFiles(files []*fileState, must func(*fileState) bool) (head, rest []*fileState) {
	type key struct {
		wanted bool
		ns     int64
		i      int
	}
	keys := make([]key, len(files))
	for i, f := range files {
		keys[i] = key{must != nil && must(f), f.Stamp.MtimeNs, i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case a.wanted != b.wanted:
			if a.wanted {
				return -1
			}
			return 1
		case a.ns != b.ns:
			return cmp.Compare(b.ns, a.ns)
		}
		return cmp.Compare(a.i, b.i)
	})
	n := min(quickFirst, len(files))
	head, rest = make([]*fileState, 0, n), make([]*fileState, 0, len(files)-n)
	for k, c := range keys {
		if k < n {
			head = append(head, files[c.i])
		} else {
			rest = append(rest, files[c.i])
		}
	}
	return head, rest
}

// lastSeenMs is when a transcript's session was last active, in epoch ms, as
// its listing sorts it (its last line's time, else its mtime).
func lastSeenMs(f *fileState) int64 {
	if f.Agg != nil && f.Agg.LastMs > 0 {
		return f.Agg.LastMs
	}
	return f.Mtime.UnixMilli()
}

// cwdScanned returns the cwds of the claude processes that judge's process scan
// considers (tied to no session by the registry or argv, start time and cwd
// known): the only rule that makes one session's status depend on others.
func cwdScanned(regs []regCheck, claudes []claudeProc) map[string]bool {
	tied := tiedPIDs(regs, claudes)
	var out map[string]bool
	for _, p := range claudes {
		if tied[p.PID] || !p.HasStart || p.Cwd == "" {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[p.Cwd] = true
	}
	return out
}

// alivePossible lists the sessions that may be alive without their transcript's
// help once no process scan applies: those the registry names (live, or unknown
// and foreign entries), those a claude argv names, and those agentctl's launch
// records name (a live launch PID makes them alive). judge's other live or
// unknown verdicts need a recent transcript, which the caller keeps by mtime.
// Without stale, the entries whose process is gone or recycled name nothing.
func alivePossible(env *discover.Env, regs []regCheck, claudes []claudeProc, stale bool) map[string]bool {
	keep := map[string]bool{}
	for i := range regs {
		if v := regs[i].Verdict; stale || (v != regStale && v != regRecycled) {
			keep[regs[i].SessionID] = true
		}
	}
	for _, p := range claudes {
		if p.Flags.Names != "" {
			keep[p.Flags.Names] = true
		}
	}
	for _, l := range env.LaunchesFor(Name) {
		keep[l.SessionID] = true
		keep[l.CurrentSessionID()] = true
	}
	return keep
}

// namedTranscripts stats the transcripts of the given session ids, as Find does
// (each id by name in every project folder). No ids: nothing is read.
func namedTranscripts(root string, ids map[string]bool) ([]*fileState, []error, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	q := discover.Query{IDs: make([]string, 0, len(ids))}
	for id := range ids {
		if id != "" {
			q.IDs = append(q.IDs, id)
		}
	}
	sort.Strings(q.IDs)
	return findTranscripts(root, q)
}

// dedupe keeps one transcript per session id: copies in two buckets only happen by
// hand, and the newest is the one Claude would resume.
func dedupe(env *discover.Env, files []*fileState) []*fileState {
	sort.SliceStable(files, func(i, j int) bool {
		if files[i].ID != files[j].ID {
			return files[i].ID < files[j].ID
		}
		return files[i].Mtime.After(files[j].Mtime)
	})
	out := files[:0]
	for i, f := range files {
		if i > 0 && files[i-1].ID == f.ID {
			env.Warnf("session %s has several transcripts; using the newest, %s (ignoring %s)", f.ID, out[len(out)-1].Path, f.Path)
			continue
		}
		out = append(out, f)
	}
	return out
}
