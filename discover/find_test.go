package discover

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// finderAdapter implements Finder over a fixed list, and counts the calls of
// each kind, so tests can tell the fast path was taken.
type finderAdapter struct {
	fakeAdapter
	finds, discovers atomic.Int32
}

func (f *finderAdapter) Discover(ctx context.Context, env *Env) ([]Session, error) {
	f.discovers.Add(1)
	return f.fakeAdapter.Discover(ctx, env)
}

func (f *finderAdapter) Find(ctx context.Context, env *Env, q Query) ([]Session, error) {
	f.finds.Add(1)
	ss, err := f.fakeAdapter.Discover(ctx, env)
	var out []Session
	for _, s := range ss {
		if q.Match(s.ID) {
			out = append(out, s)
		}
	}
	return out, err
}

// TestFindAllResolvesLikeAll: resolving any argument through FindAll (the fast
// path of status, peek, logs, stop, wait) gives exactly what resolving over the
// full listing gives: the same session, or the same error with the same
// candidates in the same order, across adapters with and without Finder, with
// launch records (launch ids, sessions known only from a record) included.
func TestFindAllResolvesLikeAll(t *testing.T) {
	at := func(s int64) *time.Time { t := time.Unix(1795211000+s, 0).UTC(); return &t }
	claude := &finderAdapter{fakeAdapter: fakeAdapter{name: "claude-code", ss: []Session{
		{ID: "01a1fa00-0000-4000-8000-000000000001", Adapter: "claude-code", Status: StatusStopped, LastActivity: at(5), Cwd: "/c1"},
		{ID: "01a1fa00-0000-4000-8000-000000000002", Adapter: "claude-code", Status: StatusIdle, PID: 4242, LastActivity: at(1), Cwd: "/c2"},
		{ID: "75098152-d081-42b6-b9b6-e7787f9a8747", Adapter: "claude-code", Status: StatusStopped, LastActivity: at(9), Cwd: "/c3"},
		{ID: "dup", Adapter: "claude-code", Status: StatusStopped, LastActivity: at(2)},
	}}}
	codex := &fakeAdapter{name: "codex", ss: []Session{
		{ID: "01a1faeb-1023-71b2-9931-d11b29406e2b", Adapter: "codex", Status: StatusStopped, LastActivity: at(7), Cwd: "/x1"},
		{ID: "01a1fb00-0000-7000-8000-000000000000", Adapter: "codex", Status: StatusStopped, LastActivity: at(3), Cwd: "/x2"},
		{ID: "dup", Adapter: "codex", Status: StatusStopped, LastActivity: at(4)},
	}}
	pi := &finderAdapter{fakeAdapter: fakeAdapter{name: "pi", ss: []Session{
		{ID: "01a1faea-41e0-0000-0000-000000000000", Adapter: "pi", Status: StatusStopped, LastActivity: at(6)},
		{ID: "01a1fafa-0000-0000-0000-000000000000", Adapter: "pi-rust", Status: StatusStopped, LastActivity: at(8)},
	}}}
	env := testEnv()
	env.Procs = &proc.Fake{Boot: "boot-1", Procs: []proc.Process{{PID: 4242, StartTicks: 900}}}
	launched := time.Unix(1795211010, 0).UTC()
	env.Launches = []meta.Launch{
		// A launch whose agent has written nothing yet: known from the record only.
		{ID: "l-new", Adapter: "claude-code", SessionID: "01a1fa00-0000-4000-8000-00000000000f", PID: 4242, StartTicks: 900, BootID: "boot-1", Cwd: "/w", LaunchedAt: launched, Meta: map[string]string{"k": "v"}},
		// A launch, then its resume under a new id.
		{ID: "l-old", Adapter: "codex", SessionID: "01a1faeb-1023-71b2-9931-d11b29406e2b", LaunchedAt: launched, Group: "g1"},
		{ID: "l-res", Kind: "resume", Adapter: "claude-code", SessionID: "75098152-d081-42b6-b9b6-e7787f9a8747", ResumedAs: "01a1fa00-0000-4000-8000-000000000001", LaunchedAt: launched.Add(time.Second)},
		// Two records with the same launch id: ambiguous by launch id.
		{ID: "l-twice", Adapter: "pi", SessionID: "01a1faea-41e0-0000-0000-000000000000", LaunchedAt: launched},
		{ID: "l-twice", Adapter: "claude-code", SessionID: "dup", LaunchedAt: launched},
	}
	adapters := []Adapter{claude, codex, pi}
	full := All(context.Background(), env, adapters, time.Second)
	if len(full.Sessions) != 10 {
		t.Fatalf("All listed %d sessions", len(full.Sessions))
	}
	args := []string{"0", "01", "01a1fa", "01a1fa0", "01a1faeb", "01a1faeb-1023-71b2-9931-d11b29406e2b", "01a1fa00-0000-4000-8000-00000000000f",
		"7", "75098152-d081-42b6-b9b6-e7787f9a8747", "dup", "du", "l-new", "l-old", "l-res", "l-twice", "l-", "zzz", "01a1fafa"}
	for _, arg := range args {
		claude.finds.Store(0)
		claude.discovers.Store(0)
		wantS, wantErr := Resolve(full.Sessions, arg)
		fast := FindAll(context.Background(), env, adapters, time.Second, QueryFor(arg, env.Launches))
		gotS, gotErr := Resolve(fast.Sessions, arg)
		if diff := cmp.Diff(wantS, gotS); diff != "" {
			t.Errorf("%s: session (-All +FindAll):\n%s", arg, diff)
		}
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Errorf("%s: error %v, want %v", arg, gotErr, wantErr)
		}
		var wa, ga *AmbiguousError
		if errors.As(wantErr, &wa) && errors.As(gotErr, &ga) {
			if diff := cmp.Diff(wa.Candidates, ga.Candidates); diff != "" {
				t.Errorf("%s: candidates (-All +FindAll):\n%s", arg, diff)
			}
		}
		if claude.finds.Load() != 1 || claude.discovers.Load() != 0 {
			t.Errorf("%s: claude-code answered %d Finds and %d Discovers, want the fast path only", arg, claude.finds.Load(), claude.discovers.Load())
		}
		// Every session the query names, and only those, in All's order.
		var want []Session
		q := QueryFor(arg, env.Launches)
		for _, s := range full.Sessions {
			if q.Match(s.ID) {
				want = append(want, s)
			}
		}
		if diff := cmp.Diff(want, fast.Sessions); diff != "" {
			t.Errorf("%s: sessions (-All filtered +FindAll):\n%s", arg, diff)
		}
	}
	// The ambiguity spans every adapter, launch-only sessions included.
	_, err := Resolve(FindAll(context.Background(), env, adapters, time.Second, QueryFor("01a1fa", env.Launches)).Sessions, "01a1fa")
	var am *AmbiguousError
	if !errors.As(err, &am) {
		t.Fatalf("01a1fa: %v, want ambiguous", err)
	}
	seen := map[string]bool{}
	for _, c := range am.Candidates {
		seen[c.Adapter] = true
	}
	if len(am.Candidates) != 6 || !seen["claude-code"] || !seen["codex"] || !seen["pi"] || !seen["pi-rust"] {
		t.Errorf("candidates %+v", am.Candidates)
	}
}

// A failing or hanging adapter costs FindAll what it costs All: a warning.
func TestFindAllWarnings(t *testing.T) {
	ok := &finderAdapter{fakeAdapter: fakeAdapter{name: "claude-code", ss: []Session{{ID: "a1", Adapter: "claude-code", Status: StatusStopped}}}}
	bad := &fakeAdapter{name: "opencode", err: errors.New("database is locked")}
	hung := &fakeAdapter{name: "openclaw", hang: true}
	adapters := []Adapter{ok, bad, hung}
	full := All(context.Background(), testEnv(), adapters, 200*time.Millisecond)
	fast := FindAll(context.Background(), testEnv(), adapters, 200*time.Millisecond, Query{Prefix: "a"})
	if diff := cmp.Diff(full.Warnings, fast.Warnings); diff != "" {
		t.Errorf("warnings (-All +FindAll):\n%s", diff)
	}
	if diff := cmp.Diff(full.Up, fast.Up); diff != "" || len(fast.Sessions) != 1 {
		t.Errorf("up (-All +FindAll):\n%s\nsessions %+v", diff, fast.Sessions)
	}
}
