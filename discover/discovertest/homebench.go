package discovertest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/discover"
)

// GeneratedHome is the read-side benchmark set of an adapter over a home of
// generated sessions (e2e/synth): `list -a` with the parse index warm and
// cold, `list` alive only with nothing alive, `usage` (usage slots) and
// `status ID` (Find). docs/performance.md has the figures and the command.
type GeneratedHome struct {
	New   func() discover.Adapter
	Write func(home string, n int, seed int64) error // synth.Write…Home
	N     int                                        // sessions in a benchmark's home
}

// Env writes n sessions (seed 42) into a fresh home and returns an Env over
// it with no process alive, and its warnings.
func (g GeneratedHome) Env(tb testing.TB, n int) (*discover.Env, *[]string) {
	tb.Helper()
	home := filepath.Join(tb.TempDir(), "home")
	if err := g.Write(home, n, 42); err != nil {
		tb.Fatal(err)
	}
	env, warns := NewWarnEnv(home, map[string]string{"TMPDIR": tb.TempDir()}, nil, Time("2026-11-21T00:00:00Z"))
	env.StateDir = tb.TempDir()
	return env, warns
}

// BenchList times Discover over N sessions after a first listing made the
// index (cached false: without it); tweak sets the listing's kind. An alive-only
// listing must find nothing, any other all N.
func (g GeneratedHome) BenchList(b *testing.B, cached bool, tweak func(*discover.Env)) {
	env, warns := g.Env(b, g.N)
	a := g.New()
	if _, err := a.Discover(context.Background(), env); err != nil { // the index, as a listing leaves it
		b.Fatal(err)
	}
	env.NoCache = !cached
	want := g.N
	if tweak != nil {
		tweak(env)
		if env.OnlyAlive {
			want = 0
		}
	}
	for b.Loop() {
		ss, err := a.Discover(context.Background(), env)
		if err != nil || len(ss) != want {
			b.Fatalf("got %d sessions, %v (warnings %q)", len(ss), err, *warns)
		}
	}
}

// BenchFind times one session looked up by its full id among N.
func (g GeneratedHome) BenchFind(b *testing.B) {
	env, _ := g.Env(b, g.N)
	a := g.New()
	f, ok := a.(discover.Finder)
	if !ok {
		b.Fatal("the adapter has no Find")
	}
	ss, err := a.Discover(context.Background(), env)
	if err != nil || len(ss) != g.N {
		b.Fatalf("got %d sessions, %v", len(ss), err)
	}
	id := ss[len(ss)/2].ID
	for b.Loop() {
		got, err := f.Find(context.Background(), env, discover.QueryFor(id, nil))
		if err != nil || len(got) != 1 {
			b.Fatalf("Find %s: %d sessions, %v", id, len(got), err)
		}
	}
}

// CheckSynth: the generator writes what the adapter reads — n sessions listed
// once each, with prompt, times and tokens, a model and input tokens unless
// its first request failed; some failed and most stopped; no warning.
func (g GeneratedHome) CheckSynth(t *testing.T, n int) {
	t.Helper()
	env, warns := g.Env(t, n)
	ss := DiscoverAll(t, g.New(), env)
	if len(ss) != n || len(*warns) != 0 {
		t.Fatalf("%d sessions, warnings %q", len(ss), *warns)
	}
	count := map[string]int{}
	for _, s := range ss {
		count[s.Status]++
		if s.Prompt == "" || s.Tokens == nil || s.StartedAt == nil || s.LastActivity == nil {
			t.Errorf("incomplete session %+v", s)
		}
		if s.Status != discover.StatusFailed && (s.Model == "" || s.Tokens == nil || s.Tokens.Input == 0) {
			t.Errorf("session %s has no model or no input tokens: %+v", s.ID, s)
		}
	}
	if count[discover.StatusFailed] == 0 || count[discover.StatusStopped] < n*3/4 {
		t.Errorf("statuses %v", count)
	}
}
