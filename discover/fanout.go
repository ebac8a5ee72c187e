package discover

import (
	"context"
	"fmt"
	"sort"
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
			ss, err := a.Discover(actx, aenv)
			answers <- answer{a.Name(), ss, err, time.Since(start)}
		}()
	}
	deadline := time.NewTimer(timeout + 100*time.Millisecond)
	defer deadline.Stop()
	pending := map[string]bool{}
	for _, a := range adapters {
		pending[a.Name()] = true
	}
	var all []Session
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
			all = append(all, ans.sessions...)
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
	res.Sessions = ApplyLaunches(env, all, names, res.Up)
	SortSessions(res.Sessions)
	return res
}

// SortSessions orders alive sessions first, then by last activity, newest first.
func SortSessions(ss []Session) {
	sort.SliceStable(ss, func(i, j int) bool {
		ai, aj := Alive(ss[i].Status), Alive(ss[j].Status)
		if ai != aj {
			return ai
		}
		ti, tj := activity(ss[i]), activity(ss[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return ss[i].ID < ss[j].ID
	})
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
