package discover

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// NotFoundError: no session matches (exit 3).
type NotFoundError struct{ Arg string }

func (e *NotFoundError) Error() string { return "session not found: " + e.Arg }

// AmbiguousError: a prefix matches several sessions (exit 4).
type AmbiguousError struct {
	Arg        string
	Candidates []Session
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ambiguous session id '%s' matches %d sessions:", e.Arg, len(e.Candidates))
	for i, s := range e.Candidates {
		if i == 10 {
			fmt.Fprintf(&b, "\n  … and %d more", len(e.Candidates)-10)
			break
		}
		fmt.Fprintf(&b, "\n  %s %s %s", s.ID, s.Adapter, s.Cwd)
	}
	return b.String()
}

// BadIDError: an empty or path-like argument (exit 2).
type BadIDError struct{ Arg, Why string }

func (e *BadIDError) Error() string {
	return fmt.Sprintf("invalid session id %q: %s", e.Arg, e.Why)
}

// CheckID rejects arguments that cannot be session ids: empty, or path-like.
func CheckID(arg string) error {
	switch {
	case strings.TrimSpace(arg) == "":
		return &BadIDError{arg, "it is empty; pass an id or a unique prefix from `agentctl list`"}
	case strings.ContainsAny(arg, "/\\") || arg == "." || arg == ".." || filepath.Clean(arg) != arg:
		return &BadIDError{arg, "it looks like a path; pass an id or a unique prefix from `agentctl list`"}
	}
	return nil
}

// QueryFor is the Query that covers every session Resolve(sessions, arg) could
// pick or list as a candidate: ids starting with arg, and the sessions of the
// launch records whose launch id is arg.
func QueryFor(arg string, launches []meta.Launch) Query {
	q := Query{Prefix: arg}
	for _, l := range launches {
		if l.ID == arg {
			if sid := l.CurrentSessionID(); sid != "" {
				q.IDs = append(q.IDs, sid)
			}
		}
	}
	return q
}

// FindFor is FindAll for resolving arg (Resolve): it stops waiting for an
// adapter as soon as that adapter's answer can no longer change what Resolve
// returns. Exact ids win, so once an answered adapter has a session whose id is
// arg, a pending adapter matters only if it could hold a session with that very
// id too (the answer would then be ambiguous) or if a launch record that arg
// names belongs to it. An adapter says which ids it can hold by implementing
// IDShaper; one that does not is always waited for. The adapters left out give
// no warning and are not in Up or Elapsed; Resolve(FindFor(…).Sessions, arg)
// equals Resolve(FindAll(…).Sessions, arg).
func FindFor(ctx context.Context, env *Env, adapters []Adapter, timeout time.Duration, arg string) Result {
	q := QueryFor(arg, env.Launches)
	res, ls := gatherFor(ctx, env, adapters, timeout, &q, arg, false)
	res.Sessions = ls.Sessions()
	return res
}

// Resolve finds the one session arg names: an exact id (or launch id) anywhere
// wins; otherwise the prefix must match exactly one session.
func Resolve(sessions []Session, arg string) (Session, error) {
	if err := CheckID(arg); err != nil {
		return Session{}, err
	}
	var exact []Session
	for _, s := range sessions {
		if s.ID == arg || (s.LaunchID != "" && s.LaunchID == arg) {
			exact = append(exact, s)
		}
	}
	if len(exact) == 1 {
		return exact[0], nil
	}
	if len(exact) > 1 {
		return Session{}, &AmbiguousError{arg, exact}
	}
	var hits []Session
	for _, s := range sessions {
		if strings.HasPrefix(s.ID, arg) {
			hits = append(hits, s)
		}
	}
	switch len(hits) {
	case 0:
		return Session{}, &NotFoundError{arg}
	case 1:
		return hits[0], nil
	}
	return Session{}, &AmbiguousError{arg, hits}
}

// Lookup is the one door through which a command finds the session its ID
// argument names (status, peek, logs, stop, resume, wait, accept; completion
// reads its candidates): CheckID first, then only the sessions arg could name
// are read (FindFor: adapters that are Finders read only those sessions' files,
// and adapters that cannot change the answer are not waited for), then
// Resolve: an exact id or launch id anywhere wins, otherwise the prefix must
// match exactly one session. keep, when not nil, drops the sessions it rejects
// before resolving (--adapter pi-rust: the pi adapter lists pi's own sessions
// too). The Result holds those sessions and the adapters' warnings, whatever
// the error; the error is a *BadIDError, *NotFoundError or *AmbiguousError
// (which lists up to 10 candidates) for the caller to map to an exit code.
// A host:id argument is split before this, by the multi-host layer: Lookup
// resolves a local id.
func Lookup(ctx context.Context, env *Env, adapters []Adapter, timeout time.Duration, arg string, keep func(*Session) bool) (Session, Result, error) {
	if err := CheckID(arg); err != nil {
		return Session{}, Result{}, err
	}
	res := FindFor(ctx, env, adapters, timeout, arg)
	if keep != nil {
		kept := res.Sessions[:0]
		for i := range res.Sessions {
			if keep(&res.Sessions[i]) {
				kept = append(kept, res.Sessions[i])
			}
		}
		res.Sessions = kept
	}
	s, err := Resolve(res.Sessions, arg)
	return s, res, err
}

// Filter selects sessions for list.
type Filter struct {
	All      bool          // include stopped/failed
	Since    time.Duration // window for ended sessions (default 7 days with All)
	Statuses []string
	Cwd      string // realpath; sessions started in it or below
	Group    string
	// Until ends the window: sessions last active after it are left out, as
	// usage --until leaves them out (zero: the window ends now).
	Until time.Time
	Now   time.Time
}

// Apply returns the sessions the filter keeps, in order.
func (f Filter) Apply(ss []Session) []Session {
	// Count first: listings hold tens of thousands of large Sessions, and growing
	// the result by appending would copy them several times over.
	n := 0
	for i := range ss {
		if f.keep(&ss[i]) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]Session, 0, n)
	for i := range ss {
		if f.keep(&ss[i]) {
			out = append(out, ss[i])
		}
	}
	return out
}

// Keep reports whether the filter keeps s.
func (f Filter) Keep(s *Session) bool { return f.keep(s) }

func (f Filter) keep(s *Session) bool {
	// "blocked" selects sessions with a blocked_reason, whatever their status.
	if len(f.Statuses) > 0 && !contains(f.Statuses, s.Status) && (s.BlockedReason == "" || !contains(f.Statuses, "blocked")) {
		return false
	}
	if !f.keepAt(Alive(s.Status), s.Status == StatusUnknown, s.LastSeen()) {
		return false
	}
	if f.Cwd != "" && !under(s.Cwd, f.Cwd) && !under(s.LastCwd, f.Cwd) {
		return false
	}
	if f.Group != "" && s.Group != f.Group {
		return false
	}
	if !f.Until.IsZero() && s.LastSeen().After(f.Until) {
		return false
	}
	return true
}

// keepAt is keep's test of whether a session is alive and of its last
// activity; with byTime it is all of keep.
//
// An unknown session counts as alive only while it shows activity inside the
// window: nothing proves it alive, so once its files have been still for
// longer than the window (a registry entry of another PID namespace, left
// behind for days) it is listed like an ended one — with -a, inside --since —
// and keeps its status (README "Listing").
func (f Filter) keepAt(alive, unknown bool, t time.Time) bool {
	if alive && unknown && f.Since > 0 && !t.IsZero() && f.Now.Sub(t) > f.Since {
		alive = false
	}
	if len(f.Statuses) == 0 && !f.All && !alive {
		return false
	}
	return f.Since <= 0 || alive || t.IsZero() || f.Now.Sub(t) <= f.Since
}

// byTime reports whether keepAt decides what the filter keeps.
func (f Filter) byTime() bool {
	return len(f.Statuses) == 0 && f.Cwd == "" && f.Group == "" && f.Until.IsZero()
}

func under(p, dir string) bool {
	if p == "" {
		return false
	}
	if p == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
