package gemini

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/e2e/synth"
)

// Benchmarks over a generated home of benchN sessions (synth.WriteGeminiHome, the
// shapes of the shared recordings), as the other adapters have: `list -a`
// (index warm and cold), `list` alive only with nothing alive, `status ID`
// (Find) and `usage` (a listing with usage slots). docs/performance.md has
// the figures and the command.
const benchN = 1000

// benchHome generates n sessions and an Env over them (no process alive).
func benchHome(tb testing.TB, n int) (*discover.Env, *[]string) {
	tb.Helper()
	home := filepath.Join(tb.TempDir(), "home")
	if err := synth.WriteGeminiHome(home, n, 42); err != nil {
		tb.Fatal(err)
	}
	env, warns := discovertest.NewWarnEnv(home, map[string]string{"TMPDIR": tb.TempDir()}, nil, discovertest.Time("2026-11-21T00:00:00Z"))
	env.StateDir = tb.TempDir()
	return env, warns
}

// TestSynthHome: the generator writes what the adapter reads — every session
// listed once, with its prompt, and unless its first request failed its model
// and tokens; some failed (the API's 429)
// and most stopped, and no warning.
func TestSynthHome(t *testing.T) {
	env, warns := benchHome(t, 200)
	ss := discovertest.DiscoverAll(t, New(), env)
	if len(ss) != 200 || len(*warns) != 0 {
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
	if count[discover.StatusFailed] == 0 || count[discover.StatusStopped] < 150 {
		t.Errorf("statuses %v", count)
	}
}

func benchList(b *testing.B, cached bool, tweak func(*discover.Env)) {
	env, warns := benchHome(b, benchN)
	a := New()
	if _, err := a.Discover(context.Background(), env); err != nil { // the index, as a listing leaves it
		b.Fatal(err)
	}
	env.NoCache = !cached
	want := benchN
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

// BenchmarkHomeList is `list -a` with the parse index warm.
func BenchmarkHomeList(b *testing.B) { benchList(b, true, nil) }

// BenchmarkHomeListCold is `list -a` without the parse index.
func BenchmarkHomeListCold(b *testing.B) { benchList(b, false, nil) }

// BenchmarkHomeAliveOnly is `list` (alive only), nothing alive.
func BenchmarkHomeAliveOnly(b *testing.B) {
	benchList(b, true, func(env *discover.Env) { env.OnlyAlive = true })
}

// BenchmarkHomeUsage is `usage` (every session with its usage slots).
func BenchmarkHomeUsage(b *testing.B) {
	benchList(b, true, func(env *discover.Env) { env.Slots = true })
}

// BenchmarkHomeFind is `status ID`: one session looked up by its full id.
func BenchmarkHomeFind(b *testing.B) {
	env, _ := benchHome(b, benchN)
	a := New()
	ss, err := a.Discover(context.Background(), env)
	if err != nil || len(ss) != benchN {
		b.Fatalf("got %d sessions, %v", len(ss), err)
	}
	id := ss[len(ss)/2].ID
	for b.Loop() {
		got, err := a.Find(context.Background(), env, discover.QueryFor(id, nil))
		if err != nil || len(got) != 1 {
			b.Fatalf("Find %s: %d sessions, %v", id, len(got), err)
		}
	}
}
