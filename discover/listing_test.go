package discover

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// listingFixture is three adapters' sessions (ids repeat within an adapter, with
// equal times, so ties must keep their order) and launch records that update
// some of them and add others.
func listingFixture(n int) ([]Adapter, *Env) {
	r := rand.New(rand.NewSource(7))
	statuses := []string{StatusRunning, StatusIdle, StatusStopped, StatusFailed, StatusUnknown, StatusWaiting}
	base := time.Unix(1795211000, 0).UTC()
	var adapters []Adapter
	for _, name := range []string{"claude-code", "codex", "pi"} {
		ss := make([]Session, n)
		for i := range ss {
			t := base.Add(time.Duration(r.Intn(50)) * time.Second)
			ss[i] = Session{ID: fmt.Sprintf("%s-%d", name, r.Intn(n/2+1)), Adapter: name, Status: statuses[r.Intn(len(statuses))],
				Evidence: EvidenceTranscript, EvidenceDetail: "no " + name + " process", Cwd: "/home/dev/p" + fmt.Sprint(r.Intn(3)),
				Model: "m", Title: "t", Prompt: "t", LastActivity: &t, Extra: map[string]any{"provider": "openai", "n": int64(i)}}
			if r.Intn(2) == 0 {
				e := t
				ss[i].EndedAt = &e
			}
		}
		adapters = append(adapters, &fakeAdapter{name: name, ss: ss})
	}
	launched := base.Add(time.Minute)
	env := &Env{Procs: &proc.Fake{Boot: "boot-1", Procs: []proc.Process{{PID: 4242, StartTicks: 900}}}, Launches: []meta.Launch{
		{ID: "l-1", Adapter: "codex", SessionID: "codex-1", PID: 4242, StartTicks: 900, BootID: "boot-1", LaunchedAt: launched, Group: "g-1"},
		{ID: "l-2", Adapter: "claude-code", SessionID: "only-a-record", PID: 4242, StartTicks: 900, BootID: "boot-1", LaunchedAt: launched},
		{ID: "l-3", Adapter: "pi", SessionID: "pi-2", PID: 1, StartTicks: 1, BootID: "boot-1", LaunchedAt: launched},
		{ID: "l-4", Adapter: "codex", SessionID: "also-only-a-record", LaunchedAt: launched.Add(time.Second)},
	}}
	return adapters, env
}

// TestListIsAll: List's listing holds exactly All's sessions, in All's order,
// without copying them into one array, whether it packs them (a large listing,
// with launch records changing packed sessions) or not; Keep filters it like
// Filter.Apply.
func TestListIsAll(t *testing.T) {
	for _, packAll := range []bool{false, true} {
		t.Run(fmt.Sprintf("packed=%v", packAll), func(t *testing.T) {
			adapters, env := listingFixture(300)
			want := All(context.Background(), env, adapters, time.Second).Sessions
			if len(want) < 800 {
				t.Fatalf("fixture too small: %d sessions", len(want))
			}
			env.Large = packAll
			res, ls := List(context.Background(), env, adapters, time.Second)
			if res.Sessions != nil || len(res.Up) != 3 {
				t.Fatalf("List result: %d sessions, up %v", len(res.Sessions), res.Up)
			}
			packed := 0
			for _, c := range ls.chunks {
				if c.p != nil {
					packed++
				}
			}
			if wantPacked := map[bool]int{false: 0, true: 3}[packAll]; packed != wantPacked {
				t.Fatalf("%d of the adapters' chunks packed, want %d", packed, wantPacked)
			}
			var got []Session
			for i := 0; i < ls.Len(); i++ {
				got = append(got, *ls.At(i))
				// A view is valid until the next: compared at once.
				if i < len(want) {
					if diff := cmp.Diff(want[i], *ls.View(i)); diff != "" {
						t.Fatalf("View(%d) differs from All's (-All +View):\n%s", i, diff)
					}
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("List differs from All (-All +List):\n%s", diff)
			}
			if diff := cmp.Diff(want, ls.Sessions()); diff != "" {
				t.Fatalf("Sessions differs from All (-All +Sessions):\n%s", diff)
			}

			f := Filter{Statuses: []string{StatusStopped, StatusRunning}, Cwd: "/home/dev/p1", Now: time.Unix(1795211100, 0)}
			ls.Keep(f.Keep)
			if diff := cmp.Diff(f.Apply(want), ls.Sessions()); diff != "" {
				t.Fatalf("Keep differs from Apply (-Apply +Keep):\n%s", diff)
			}
		})
	}
}

// TestListingFilterIsKeep: Filter keeps exactly what Keep(f.Keep) keeps, in
// order, packed or not, for filters it decides from sort keys (alive, since)
// and for the others, with launch records changing packed sessions.
func TestListingFilterIsKeep(t *testing.T) {
	now := time.Unix(1795211100, 0)
	filters := []Filter{
		{Now: now},
		{All: true, Now: now},
		{All: true, Since: 75 * time.Second, Now: now},
		{All: true, Since: 90 * time.Second, Now: now},
		{Since: 80 * time.Second, Now: now},
		{All: true, Since: time.Nanosecond, Now: now},
		{Statuses: []string{StatusStopped}, Since: 80 * time.Second, Now: now},
		{All: true, Since: 80 * time.Second, Cwd: "/home/dev/p2", Now: now},
		{All: true, Group: "g-1", Now: now},
	}
	for _, packAll := range []bool{false, true} {
		for i, f := range filters {
			adapters, env := listingFixture(200)
			env.Large = packAll
			_, want := List(context.Background(), env, adapters, time.Second)
			_, got := List(context.Background(), env, adapters, time.Second)
			want.Keep(f.Keep)
			got.Filter(f)
			if want.Len() == 0 && i < 4 {
				t.Fatalf("filter %d keeps nothing: the fixture does not test it", i)
			}
			if diff := cmp.Diff(want.Sessions(), got.Sessions()); diff != "" {
				t.Fatalf("packed=%v filter %+v (-Keep +Filter):\n%s", packAll, f, diff)
			}
		}
	}
}

// TestLargeListing: a full listing is large from LargeFrom bytes of parse
// index files on; an alive-only one, or one without a cache, never is.
func TestLargeListing(t *testing.T) {
	dir := t.TempDir()
	env := &Env{StateDir: dir}
	cache := env.CacheDir()
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name string, size int64) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(cache, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filepath.Join(cache, name), size); err != nil {
			t.Fatal(err)
		}
	}
	write("claude-code.index", LargeFrom/2)
	write("codex.dirnames", LargeFrom) // not an index
	if LargeListing(env) {
		t.Fatalf("large with %d bytes of index", LargeFrom/2)
	}
	write("pi.index", LargeFrom/2)
	if !LargeListing(env) {
		t.Fatalf("not large with %d bytes of index", LargeFrom)
	}
	alive := *env
	alive.OnlyAlive = true
	noCache := *env
	noCache.NoCache = true
	if LargeListing(&alive) || LargeListing(&noCache) {
		t.Fatal("an alive-only listing, or one without a cache, is large")
	}
}

// TestAllMatchesReference: the fan-out's order is the stable sort of the
// adapters' sessions with launch records applied.
func TestAllMatchesReference(t *testing.T) {
	adapters, env := listingFixture(200)
	var in []Session
	for _, a := range adapters { // ids differ across adapters: their order does not matter
		in = append(in, a.(*fakeAdapter).ss...)
	}
	in = append([]Session(nil), in...)
	want := ApplyLaunches(env, in, []string{"claude-code", "codex", "pi"}, map[string]bool{"claude-code": true, "codex": true, "pi": true})
	referenceSort(want)
	got := All(context.Background(), env, adapters, time.Second).Sessions
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("All differs from the reference (-want +got):\n%s", diff)
	}
}

// TestSharer: sharing changes no value, and equal strings end up as one copy.
func TestSharer(t *testing.T) {
	mk := func(i int) Session {
		t1 := time.Unix(1795211000, 0).UTC()
		t2 := t1
		return Session{ID: fmt.Sprint(i), Cwd: fmt.Sprintf("/home/%s", "dev"), Model: string([]byte("gpt")), Title: fmt.Sprint("p", 1), Prompt: fmt.Sprint("p", 1),
			LastActivity: &t1, EndedAt: &t2, Extra: map[string]any{"source": fmt.Sprint("ex", "ec"), "n": int64(i)}}
	}
	ss := []Session{mk(1), mk(2), mk(3)}
	want := []Session{mk(1), mk(2), mk(3)}
	shareStrings(ss)
	if diff := cmp.Diff(want, ss); diff != "" {
		t.Fatalf("sharing changed values (-want +got):\n%s", diff)
	}
	same := func(a, b string) bool { return a != "" && a == b && unsafe.StringData(a) == unsafe.StringData(b) }
	if !same(ss[0].Cwd, ss[2].Cwd) || !same(ss[1].Model, ss[2].Model) || !same(ss[0].Title, ss[0].Prompt) {
		t.Error("equal strings were not shared")
	}
	if ss[1].EndedAt != ss[1].LastActivity {
		t.Error("an end time equal to the last activity was not shared")
	}
	if ss[0].Extra["source"] != "exec" || ss[2].Extra["n"] != int64(3) {
		t.Errorf("extra changed: %v %v", ss[0].Extra, ss[2].Extra)
	}
}

// BenchmarkFanOut: the fan-out over three adapters of 10,000 sessions each,
// as All (one array) and as List (the adapters' arrays, in order).
func BenchmarkFanOut(b *testing.B) {
	adapters, env := listingFixture(10000)
	b.Run("All", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			All(context.Background(), env, adapters, time.Minute)
		}
	})
	b.Run("List", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			List(context.Background(), env, adapters, time.Minute)
		}
	})
}
