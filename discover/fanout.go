package discover

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
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

func fanOut(ctx context.Context, env *Env, adapters []Adapter, timeout time.Duration, q *Query) Result {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	type answer struct {
		name     string
		sessions []Session
		err      error
		elapsed  time.Duration
	}
	var mu sync.Mutex
	res := Result{Up: map[string]bool{}, Elapsed: map[string]time.Duration{}}
	answers := make(chan answer, len(adapters))
	for _, a := range adapters {
		a := a
		go func() {
			actx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			aenv := env.WithWarn(func(msg string) {
				mu.Lock()
				res.Warnings = append(res.Warnings, a.Name()+": "+msg)
				mu.Unlock()
			})
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
			answers <- answer{a.Name(), ss, err, time.Since(start)}
		}()
	}
	deadline := time.NewTimer(timeout + 100*time.Millisecond)
	defer deadline.Stop()
	pending := map[string]bool{}
	for _, a := range adapters {
		pending[a.Name()] = true
	}
	var got [][]Session
collect:
	for len(pending) > 0 {
		select {
		case ans := <-answers:
			delete(pending, ans.name)
			res.Elapsed[ans.name] = ans.elapsed
			if ans.err != nil {
				mu.Lock()
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %v", ans.name, ans.err))
				mu.Unlock()
				continue
			}
			res.Up[ans.name] = true
			got = append(got, ans.sessions)
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
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s: no answer within %s; its sessions are missing from this output (raise --timeout or check the agent's data)", n, timeout))
		res.Elapsed[n] = timeout
	}
	res.Warnings = append([]string(nil), res.Warnings...)
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
			if q.Match(LaunchSessionID(l)) {
				lenv.Launches = append(lenv.Launches, l)
			}
		}
	}
	// One allocation for every adapter's sessions and the launch records'.
	n := len(lenv.Launches)
	for _, ss := range got {
		n += len(ss)
	}
	var all []Session
	if n > 0 {
		all = make([]Session, 0, n)
	}
	for _, ss := range got {
		all = append(all, ss...)
	}
	res.Sessions = ApplyLaunches(lenv, all, names, res.Up)
	SortSessions(res.Sessions)
	return res
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
	type key struct {
		alive bool
		sec   int64
		nsec  int
		i     int
	}
	keys := make([]key, len(ss))
	for i := range ss {
		t := activity(ss[i])
		keys[i] = key{Alive(ss[i].Status), t.Unix(), t.Nanosecond(), i}
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
		if c := strings.Compare(ss[a.i].ID, ss[b.i].ID); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	// Apply the permutation in place, one cycle at a time: position j takes the
	// session that was at keys[j].i.
	done := make([]bool, len(ss))
	for start := range ss {
		if done[start] || keys[start].i == start {
			continue
		}
		tmp := ss[start]
		j := start
		for {
			done[j] = true
			k := keys[j].i
			if k == start {
				ss[j] = tmp
				break
			}
			ss[j] = ss[k]
			j = k
		}
	}
}

func activity(s Session) time.Time {
	switch {
	case s.LastActivity != nil:
		return *s.LastActivity
	case s.StartedAt != nil:
		return *s.StartedAt
	}
	return time.Time{}
}
