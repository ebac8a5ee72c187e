package discover

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/meta"
)

// DefaultTimeout is the per-adapter budget (--timeout, AGENTCTL_ADAPTER_TIMEOUT).
const DefaultTimeout = 5 * time.Second

// Result is what one fan-out over the adapters produced.
type Result struct {
	Sessions []Session
	Warnings []string
	// Per adapter: whether it answered without error, and how long it took.
	Up      map[string]bool
	Elapsed map[string]time.Duration
}

// All runs every adapter in parallel, each under its own timeout, and merges their
// sessions with agentctl's launch records. A failing or slow adapter becomes a
// warning; it never changes another adapter's results or any session's status.
func All(ctx context.Context, env *Env, adapters []Adapter, timeout time.Duration) Result {
	return fanOut(ctx, env, adapters, timeout, nil)
}

// FindAll is All for the sessions q names: its Sessions are exactly All's that q
// matches (launch records applied), in the same order. Adapters that implement
// Finder look up only those sessions; the others' full listing is filtered.
func FindAll(ctx context.Context, env *Env, adapters []Adapter, timeout time.Duration, q Query) Result {
	return fanOut(ctx, env, adapters, timeout, &q)
}

// List is All for a caller that reads the sessions once, in order (`list`): the
// Listing never copies the sessions into one array, and a large one (Env.Large)
// keeps each adapter's sessions packed (packed.go) from the moment it answers,
// unless env asks for usage slots. Its order and contents
// are exactly All's; Result.Sessions is nil.
func List(ctx context.Context, env *Env, adapters []Adapter, timeout time.Duration) (Result, *Listing) {
	return gatherFor(ctx, env, adapters, timeout, nil, "", env.Large && !env.Slots)
}

// Listing is a fan-out's sessions in All's order, kept where the adapters put
// them, or packed (List).
type Listing struct {
	chunks  []chunk // per adapter, then the sessions launch records added
	order   []sref
	scratch *unpacked // View's
}

// chunk is one adapter's sessions: as it returned them (ss), or packed (p), with
// the ones launch records changed decoded in edited.
type chunk struct {
	ss     []Session
	p      *packed
	edited map[int32]*Session
}

func (c *chunk) len() int {
	if c.p != nil {
		return c.p.Len()
	}
	return len(c.ss)
}

// sref locates a session: chunk and index in it.
type sref struct{ c, i int32 }

// at is the session at r. A packed one is decoded afresh on every call, so it
// must only be changed through edit.
func (ls *Listing) at(r sref) *Session { return ls.get(r, nil) }

// get is the session at r; a packed one is decoded into *scratch (allocated
// once) or, with scratch nil, into memory of its own.
func (ls *Listing) get(r sref, scratch **unpacked) *Session {
	c := &ls.chunks[r.c]
	if c.p == nil {
		return &c.ss[r.i]
	}
	if s, ok := c.edited[r.i]; ok {
		return s
	}
	if scratch == nil {
		return c.p.session(int(r.i))
	}
	if *scratch == nil {
		*scratch = new(unpacked)
	}
	return c.p.sessionInto(int(r.i), *scratch)
}

// edit is the session at r, to be changed in place.
func (ls *Listing) edit(r sref) *Session {
	c := &ls.chunks[r.c]
	if c.p == nil {
		return &c.ss[r.i]
	}
	s, ok := c.edited[r.i]
	if !ok {
		if c.edited == nil {
			c.edited = map[int32]*Session{}
		}
		s = c.p.session(int(r.i))
		c.edited[r.i] = s
	}
	return s
}

// id is the id of the session at r.
func (ls *Listing) id(r sref) string {
	c := &ls.chunks[r.c]
	switch s, ok := c.edited[r.i]; {
	case c.p == nil:
		return c.ss[r.i].ID
	case ok:
		return s.ID
	}
	return c.p.id(int(r.i))
}

// Len is the number of sessions.
func (ls *Listing) Len() int { return len(ls.order) }

// At returns the i-th session in order. Changing it may change nothing in ls.
func (ls *Listing) At(i int) *Session { return ls.at(ls.order[i]) }

// View is At for a caller that is done with the session before its next call
// to View: a packed session is decoded into the same memory each time. It is
// for printing tens of thousands of sessions.
func (ls *Listing) View(i int) *Session { return ls.view(ls.order[i]) }

func (ls *Listing) view(r sref) *Session { return ls.get(r, &ls.scratch) }

// Filter drops the sessions f does not keep, keeping the order of the others:
// Keep(f.Keep), but a filter of alive and last activity alone (`list -a
// --since`) is decided from a packed session's sort key, without decoding it.
func (ls *Listing) Filter(f Filter) {
	if !f.byTime() {
		ls.Keep(f.Keep)
		return
	}
	out := ls.order[:0]
	for _, r := range ls.order {
		c := &ls.chunks[r.c]
		var ok bool
		if _, edited := c.edited[r.i]; c.p != nil && !edited {
			k := c.p.keys[r.i]
			ok = f.keepAt(k.alive, k.unknown, time.Unix(k.sec, int64(k.nsec)))
		} else {
			ok = f.keep(ls.view(r))
		}
		if ok {
			out = append(out, r)
		}
	}
	ls.order = out
}

// Keep drops the sessions keep rejects, keeping the order of the others. keep
// is done with the session it is shown when it returns (View).
func (ls *Listing) Keep(keep func(*Session) bool) {
	out := ls.order[:0]
	for _, r := range ls.order {
		if keep(ls.view(r)) {
			out = append(out, r)
		}
	}
	ls.order = out
}

// Sessions copies the sessions, in order, into one slice.
func (ls *Listing) Sessions() []Session {
	if len(ls.order) == 0 {
		return nil
	}
	out := make([]Session, len(ls.order))
	for j, r := range ls.order {
		out[j] = *ls.at(r)
	}
	return out
}

func fanOut(ctx context.Context, env *Env, adapters []Adapter, timeout time.Duration, q *Query) Result {
	res, ls := gather(ctx, env, adapters, timeout, q)
	res.Sessions = ls.Sessions()
	return res
}

// gather runs the adapters and arranges their answers: launch records applied,
// sorted.
func gather(ctx context.Context, env *Env, adapters []Adapter, timeout time.Duration, q *Query) (Result, *Listing) {
	return gatherFor(ctx, env, adapters, timeout, q, "", false)
}

// gatherFor is gather that, with exact != "", stops waiting for the adapters
// that cannot change how exact resolves (FindFor), and with pack keeps each
// adapter's sessions packed from the moment it answers.
func gatherFor(ctx context.Context, env *Env, adapters []Adapter, timeout time.Duration, q *Query, exact string, pack bool) (Result, *Listing) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	type answer struct {
		name    string
		chunk   chunk
		err     error
		elapsed time.Duration
	}
	var mu sync.Mutex
	res := Result{Up: map[string]bool{}, Elapsed: map[string]time.Duration{}}
	closed := false // set once collected: warnings of adapters not waited for are dropped
	answers := make(chan answer, len(adapters))
	// Adapters not waited for (FindFor) are cancelled when the answer is in.
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	// A full listing gives the adapters that parse files turns, one per core:
	// on two cores, four adapters at once took longer than two at a time and
	// held every adapter's parse index and half-built sessions at the same
	// moment (list -a at 10,000 sessions per agent, median of 12 runs: 0.64 s
	// and 124 MB peak against 0.61 s and 104 MB). A packed listing (List, when
	// large) holds little but the work of the adapters in their turn, so it
	// gives one turn per two cores: each adapter parses on every core anyway,
	// and what `list -a` holds at its peak is then one adapter's work, not two
	// (on two cores, 10,000 sessions per agent: 72 MB instead of 98 MB, for
	// 0.1 s more).
	// Nobody waits for a turn longer than a quarter of the timeout, so an
	// adapter stuck on a file costs the others that at most; the others (a
	// gateway's API) and lookups never wait.
	var turns chan struct{}
	switch {
	case pack:
		turns = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))
	case q == nil:
		turns = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	}
	turnBy := time.Now().Add(timeout / 4)
	// A full listing takes what an adapter still at work when the time is up
	// has made so far (Publish): its newest sessions, never nothing.
	progs := map[string]*progress{}
	if q == nil && exact == "" {
		for _, a := range adapters {
			progs[a.Name()] = &progress{}
		}
	}
	for _, a := range adapters {
		a := a
		prog := progs[a.Name()]
		go func() {
			actx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if prog != nil {
				actx = context.WithValue(actx, progressKey{}, prog)
			}
			aenv := env.WithWarn(func(msg string) {
				mu.Lock()
				if !closed {
					res.Warnings = append(res.Warnings, a.Name()+": "+msg)
				}
				mu.Unlock()
			})
			release := func() {}
			if _, ok := a.(FileParser); ok && turns != nil {
				release = sync.OnceFunc(takeTurn(actx, turns, turnBy))
				defer release()
			}
			start := time.Now()
			var ss []Session
			var err error
			if f, ok := a.(Finder); ok && q != nil {
				ss, err = f.Find(actx, aenv, *q)
			} else {
				ss, err = a.Discover(actx, aenv)
			}
			if q != nil {
				ss = matching(ss, *q)
			}
			elapsed := time.Since(start)
			if !env.Slots {
				// Only commands that ask for them read them; a listing holds
				// every session until printed.
				for i := range ss {
					ss[i].Slots = nil
				}
			}
			ans := answer{name: a.Name(), err: err, elapsed: elapsed}
			// Packing is one core's work: the next adapter's starts meanwhile.
			release()
			if pack && len(ss) > 0 {
				ans.chunk.p = packSessions(ss)
			} else {
				shareStrings(ss)
				ans.chunk.ss = ss
			}
			answers <- ans
		}()
	}
	deadline := time.NewTimer(timeout + 100*time.Millisecond)
	defer deadline.Stop()
	pending := map[string]bool{}
	for _, a := range adapters {
		pending[a.Name()] = true
	}
	var got []chunk
	found := false // an answered adapter has a session whose id is exact
	byName := map[string]Adapter{}
	for _, a := range adapters {
		byName[a.Name()] = a
	}
collect:
	for len(pending) > 0 {
		if found && !mattersFor(exact, pending, byName, env.Launches) {
			for n := range pending {
				delete(pending, n) // cannot change the answer: not waited for
			}
			break
		}
		select {
		case ans := <-answers:
			delete(pending, ans.name)
			res.Elapsed[ans.name] = ans.elapsed
			if ans.err != nil && errors.Is(ans.err, context.DeadlineExceeded) {
				if ss, left, ok := progs[ans.name].take(); ok {
					// Out of time, with part of the listing made: that part.
					mu.Lock()
					res.Warnings = append(res.Warnings, inPart(ans.name, timeout, len(ss), left))
					mu.Unlock()
					got = append(got, partChunk(ss, env.Slots, pack))
					continue
				}
			}
			if ans.err != nil {
				msg := fmt.Sprintf("%s: %v", ans.name, ans.err)
				if ans.err == context.DeadlineExceeded {
					// The adapter ran into its own timeout and said only that
					// (ctx.Err()): say so as for one that did not answer at
					// all, not with Go's words. An error of its own that wraps
					// it (a gateway naming its URL) is kept as it is.
					msg = noAnswer(ans.name, timeout)
				}
				mu.Lock()
				res.Warnings = append(res.Warnings, msg)
				mu.Unlock()
				continue
			}
			res.Up[ans.name] = true
			got = append(got, ans.chunk)
			for i := range ans.chunk.ss { // never packed for a lookup
				found = found || (exact != "" && ans.chunk.ss[i].ID == exact)
			}
		case <-deadline.C:
			break collect
		case <-ctx.Done():
			break collect
		}
	}
	mu.Lock()
	names := make([]string, 0, len(pending))
	for n := range pending {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		res.Elapsed[n] = timeout
		ss, left, ok := progs[n].take()
		if !ok {
			res.Warnings = append(res.Warnings, noAnswer(n, timeout))
			continue
		}
		// Not up: a launch record of a session left out must not make it
		// look stopped (applyLaunches).
		res.Warnings = append(res.Warnings, inPart(n, timeout, len(ss), left))
		got = append(got, partChunk(ss, env.Slots, pack))
	}
	res.Warnings = append([]string(nil), res.Warnings...)
	closed = true
	mu.Unlock()

	names = names[:0]
	for _, a := range adapters {
		names = append(names, a.Name())
	}
	lenv := env
	if q != nil {
		// A launch record only ever touches the session it names.
		lenv = env.WithWarn(env.warn)
		lenv.Launches = nil
		for _, l := range env.Launches {
			if q.Match(l.CurrentSessionID()) {
				lenv.Launches = append(lenv.Launches, l)
			}
		}
	}
	ls := &Listing{chunks: got}
	ls.addRecordHomes(ctx, lenv, adapters, timeout)
	ls.applyLaunches(lenv, names, res.Up)
	ls.sort()
	return res, ls
}

// noAnswer is the warning for an adapter that did not answer within timeout.
func noAnswer(adapter string, timeout time.Duration) string {
	return fmt.Sprintf("%s: no answer within %s; its sessions are missing from this output (raise --timeout or check the agent's data)", adapter, timeout)
}

// partChunk is the chunk of an adapter's partial listing (what Publish
// handed over), as an answer's: usage slots dropped unless asked for, packed
// when the listing is.
func partChunk(ss []Session, slots, pack bool) chunk {
	if !slots {
		for i := range ss {
			ss[i].Slots = nil
		}
	}
	if pack && len(ss) > 0 {
		return chunk{p: packSessions(ss)}
	}
	shareStrings(ss)
	return chunk{ss: ss}
}

// inPart is the warning for an adapter that had not finished within timeout
// and whose listing is what it had made by then.
func inPart(adapter string, timeout time.Duration, listed, left int) string {
	return fmt.Sprintf("%s: not finished within %s; listing the %d sessions it had read (the newest), %d left out; run the command again (each run indexes more) or raise --timeout", adapter, timeout, listed, left)
}

// progress is what an adapter still at work has made of a full listing so
// far (Publish), for the fan-out to take when the time is up.
type progress struct {
	mu    sync.Mutex
	ss    []Session
	left  int
	ok    bool // something was published
	taken bool
	stop  func([]Session, int) bool // WatchProgress's
}

type progressKey struct{}

// WatchProgress is ctx taking what an adapter publishes as a full listing
// does (Publish), for an adapter's tests: stop sees each hand-over and, by
// returning true, takes it, as a listing whose time is up does.
func WatchProgress(ctx context.Context, stop func(ss []Session, left int) bool) context.Context {
	return context.WithValue(ctx, progressKey{}, &progress{stop: stop})
}

// Publish hands the listing whose context is ctx what an adapter has made of it
// so far, should its time run out before it answers: ss are the sessions done
// (the most wanted first: those that may be alive, then the newest), which the
// adapter no longer changes (it may append to ss's array past len(ss)); left is
// how many it has not done (or left out), for the warning. Each call replaces
// the last, unless it hands over fewer sessions. It returns false once the listing has taken what was published:
// the adapter's answer is no longer wanted. A context that takes no progress
// (a lookup) takes nothing: true.
func Publish(ctx context.Context, ss []Session, left int) bool {
	p, _ := ctx.Value(progressKey{}).(*progress)
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken {
		return false
	}
	if p.ok && len(ss) < len(p.ss) {
		// A pass that starts over (the most wanted first, then all) hands
		// over less at first: the last, larger hand-over stands.
		return true
	}
	p.ss, p.left, p.ok = ss, left, true
	if p.stop != nil && p.stop(ss, left) {
		p.taken = true
		return false
	}
	return true
}

// take is a copy of what was published, and ends publishing.
func (p *progress) take() (ss []Session, left int, ok bool) {
	if p == nil {
		return nil, 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.taken = true
	if !p.ok {
		return nil, 0, false
	}
	return append([]Session(nil), p.ss...), p.left, true
}

// takeTurn waits for a free turn until by (or ctx ends) and returns what gives
// it back; past by it goes ahead without one.
func takeTurn(ctx context.Context, turns chan struct{}, by time.Time) (release func()) {
	select {
	case turns <- struct{}{}:
		return func() { <-turns }
	default:
	}
	wait := time.NewTimer(time.Until(by))
	defer wait.Stop()
	select {
	case turns <- struct{}{}:
		return func() { <-turns }
	case <-wait.C:
	case <-ctx.Done():
	}
	return func() {}
}

// mattersFor reports whether one of the pending adapters could still change
// how exact resolves once another adapter has a session with that id: it may
// hold that id too (not an IDShaper, or one that may), or a launch record
// naming exact's sessions is its (its answer decides what the record shows).
func mattersFor(exact string, pending map[string]bool, adapters map[string]Adapter, launches []meta.Launch) bool {
	for n := range pending {
		sh, ok := adapters[n].(IDShaper)
		if !ok || sh.MayHold(exact) {
			return true
		}
		for _, l := range launches {
			if l.Adapter == n || slices.Contains(agents.SubsOf(n), l.Adapter) {
				if l.ID == exact || l.SessionID == exact || l.CurrentSessionID() == exact {
					return true
				}
			}
		}
	}
	return false
}

// shareStrings makes the sessions' equal strings one copy (see Sharer).
func shareStrings(ss []Session) {
	if len(ss) < 2 {
		return
	}
	var sh Sharer
	for i := range ss {
		sh.Share(&ss[i])
	}
}

// Sharer makes equal strings of the sessions it is shown one copy. Adapters
// build each session's strings separately (a database row, a parsed line, a
// formatted detail), but in a listing of tens of thousands most of those values
// repeat: the same few directories, models, versions and evidence details.
// Listings keep every session until printed, so the copies were a good part of
// `list`'s memory. Only fields with few distinct values are shared, not ids or
// paths; so are an end time equal to the last activity, and extra's short string
// values. The zero Sharer is ready; it is not safe for concurrent use.
type Sharer struct {
	strs  map[string]string
	boxed map[string]any // extra's string values, as interface values
}

// Share replaces s's strings with the copies seen first.
func (sh *Sharer) Share(s *Session) {
	if sh.strs == nil {
		sh.strs = make(map[string]string, 64)
		sh.boxed = make(map[string]any, 16)
	}
	for _, p := range [...]*string{&s.Adapter, &s.Status, &s.Evidence, &s.EvidenceDetail, &s.Cwd, &s.LastCwd, &s.Model,
		&s.CostSource, &s.GitBranch, &s.AgentVersion, &s.Entrypoint, &s.PermissionMode} {
		if *p == "" {
			continue
		}
		if c, ok := sh.strs[*p]; ok {
			*p = c
		} else if len(sh.strs) < 1<<14 {
			sh.strs[*p] = *p
		}
	}
	if s.Title == s.Prompt {
		s.Title = s.Prompt
	}
	if s.EndedAt != nil && s.LastActivity != nil && *s.EndedAt == *s.LastActivity {
		s.EndedAt = s.LastActivity // times are never changed through these pointers
	}
	for k, v := range s.Extra {
		if str, ok := v.(string); ok && len(str) <= 64 {
			if b, ok := sh.boxed[str]; ok {
				s.Extra[k] = b
			} else if len(sh.boxed) < 1<<12 {
				sh.boxed[str] = v
			}
		}
	}
}

// matching returns the sessions q names, in order.
func matching(ss []Session, q Query) []Session {
	var out []Session
	for _, s := range ss {
		if q.Match(s.ID) {
			out = append(out, s)
		}
	}
	return out
}

// SortSessions orders alive sessions first, then by last activity, newest first,
// then by id; ties keep their order. Listings hold tens of thousands of sessions
// and a Session is large, so it sorts small keys and then moves each session once.
func SortSessions(ss []Session) {
	ls := &Listing{chunks: []chunk{{ss: ss}}}
	ls.sort()
	// Apply the permutation in place, one cycle at a time: position j takes the
	// session that was at order[j].
	done := make([]bool, len(ss))
	for start := range ss {
		if done[start] || int(ls.order[start].i) == start {
			continue
		}
		tmp := ss[start]
		j := start
		for {
			done[j] = true
			k := int(ls.order[j].i)
			if k == start {
				ss[j] = tmp
				break
			}
			ss[j] = ss[k]
			j = k
		}
	}
}

// sort sets ls.order to SortSessions' order of the chunks concatenated.
func (ls *Listing) sort() {
	type key struct {
		alive bool
		sec   int64
		nsec  int
		r     sref
	}
	n := 0
	for c := range ls.chunks {
		n += ls.chunks[c].len()
	}
	keys := make([]key, 0, n)
	for c := range ls.chunks {
		ch := &ls.chunks[c]
		for i := range ch.len() {
			r := sref{int32(c), int32(i)}
			var k packKey
			switch s, ok := ch.edited[r.i]; {
			case ch.p == nil:
				k = keyOf(&ch.ss[i])
			case ok:
				k = keyOf(s)
			default:
				k = ch.p.keys[i]
			}
			keys = append(keys, key{k.alive, k.sec, int(k.nsec), r})
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case a.alive != b.alive:
			if a.alive {
				return -1
			}
			return 1
		case a.sec != b.sec:
			return cmp.Compare(b.sec, a.sec)
		case a.nsec != b.nsec:
			return cmp.Compare(b.nsec, a.nsec)
		}
		if c := strings.Compare(ls.id(a.r), ls.id(b.r)); c != 0 {
			return c
		}
		// Ties keep their order: chunks in order, then within a chunk.
		if c := cmp.Compare(a.r.c, b.r.c); c != 0 {
			return c
		}
		return cmp.Compare(a.r.i, b.r.i)
	})
	ls.order = make([]sref, len(keys))
	for j, k := range keys {
		ls.order[j] = k.r
	}
}

// LastSeen is when the session was last seen active: its last activity, else
// its start (zero: neither is known). Listings sort and filter by it.
func (s *Session) LastSeen() time.Time {
	switch {
	case s.LastActivity != nil:
		return *s.LastActivity
	case s.StartedAt != nil:
		return *s.StartedAt
	}
	return time.Time{}
}
