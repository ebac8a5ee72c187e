package copilot

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/e2e/synth"
	"github.com/agentctl/agentctl/proc"
)

// budgetHome is a synthetic home of n sessions whose oldest is held by a live
// copilot process (pid 4242): the session a listing short of time must never
// leave out. It returns the Env, the held session's id, and every other id,
// newest first.
func budgetHome(t *testing.T, n int) (*discover.Env, *[]string, string, []string) {
	t.Helper()
	home := t.TempDir()
	if err := synth.WriteCopilotHome(home, n, 3); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, ".copilot", "session-state")
	ents, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	type dated struct {
		id string
		at time.Time
	}
	var ds []dated
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fi, err := os.Stat(filepath.Join(state, e.Name(), "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, dated{e.Name(), fi.ModTime()})
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].at.After(ds[j].at) })
	held := ds[len(ds)-1].id
	var rest []string
	for _, d := range ds[:len(ds)-1] {
		rest = append(rest, d.id)
	}
	lockAt := time.Now().Add(-time.Minute)
	lock := filepath.Join(state, held, "inuse.4242.lock")
	if err := os.WriteFile(lock, []byte("4242"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(lock, lockAt, lockAt); err != nil {
		t.Fatal(err)
	}
	procs := &proc.Fake{Boot: "boot-1", Procs: []proc.Process{{PID: 4242, Comm: "copilot"}}, Starts: map[int]time.Time{4242: lockAt.Add(-time.Second)}}
	env, warns := testEnv(t, home, procs, nil)
	env.StateDir = t.TempDir()
	return env, warns, held, rest
}

// tickingBudget is a budget whose clock moves a millisecond each time it is
// read, and which gives up after reads of it: a listing's sessions are then
// read up to a point that depends on the order, not on the machine's speed.
func tickingBudget(reads int) func(context.Context) discover.Budget {
	return func(context.Context) discover.Budget {
		t0 := time.Unix(1e9, 0)
		var mu sync.Mutex
		n := 0
		return discover.Budget{StopAt: t0.Add(time.Duration(reads)*time.Millisecond + time.Millisecond/2),
			GiveUpAt: t0.Add(time.Duration(reads)*time.Millisecond + time.Millisecond/2),
			Now: func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				n++
				return t0.Add(time.Duration(n) * time.Millisecond)
			}}
	}
}

// TestListingShortOfTime: a full listing whose budget gives up lists the
// session a live copilot holds (read first, whatever its age) and then the
// newest it had time for, and warns with how many it left out; the index
// keeps nothing wrong (the next listing with time lists all). A lookup never
// takes a partial answer: it reads its session whole, budget or not.
func TestListingShortOfTime(t *testing.T) {
	const n = 40
	for _, tc := range []struct {
		name   string
		reads  int // budget reads before it gives up
		newest int // the newest sessions listed besides the held one
	}{
		{"given up from the start", 0, 0},
		{"given up after ten reads", 10, 10},
		{"time for all", 1000, n - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, warns, held, rest := budgetHome(t, n)
			full := discovertest.DiscoverAll(t, New(), env)
			if len(full) != n {
				t.Fatalf("full listing: %d sessions", len(full))
			}
			*warns = nil
			a := &Adapter{Budget: tickingBudget(tc.reads)}
			env.StateDir = t.TempDir() // the index cold: every log is to be read
			got, err := a.Discover(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.ID)
				if d := cmp.Diff(full[s.ID], s); d != "" {
					t.Errorf("%s differs from the listing with time (-full +short):\n%s", s.ID, d)
				}
			}
			// The listing's workers read a batch at once: which of two
			// neighbours got the last read of the clock may differ.
			if !slices.Contains(ids, held) || len(ids) != 1+tc.newest {
				t.Errorf("listed %d sessions (the held one: %v), want it and the %d newest", len(ids), slices.Contains(ids, held), tc.newest)
			}
			for _, id := range rest[min(len(rest), tc.newest+discover.Workers(n)):] {
				if slices.Contains(ids, id) {
					t.Errorf("listed %s, older than the %d newest", id, tc.newest)
				}
			}
			left := n - 1 - tc.newest
			var wantWarns []string
			if left > 0 {
				wantWarns = []string{strconv.Itoa(left) + " Copilot sessions were not read in time and are missing from this output"}
			}
			if len(*warns) != len(wantWarns) || (left > 0 && !strings.HasPrefix((*warns)[0], wantWarns[0])) {
				t.Errorf("warnings %q, want one starting %q", *warns, wantWarns)
			}
			// A lookup of a session the listing left out: whole.
			old := rest[len(rest)-1]
			found, err := a.Find(context.Background(), env, discover.Query{IDs: []string{old}})
			if err != nil || len(found) != 1 {
				t.Fatalf("Find %s: %d sessions, %v", old, len(found), err)
			}
			if d := cmp.Diff(full[old], found[0]); d != "" {
				t.Errorf("Find %s with the budget given up (-full +find):\n%s", old, d)
			}
		})
	}
}

// TestListingHandsOverAsItReads: a full listing hands its sessions to the
// fan-out as it makes them (discover.Publish), the held session first and
// then the newest, with the count of those still to come: a listing whose
// time is up takes that part.
func TestListingHandsOverAsItReads(t *testing.T) {
	const n = 70
	env, _, held, rest := budgetHome(t, n)
	var first []discover.Session
	firstLeft := -1
	ctx := discover.WatchProgress(context.Background(), func(ss []discover.Session, left int) bool {
		if len(ss) == 0 {
			return false
		}
		first, firstLeft = append([]discover.Session(nil), ss...), left
		return true // the time is up: take this
	})
	if _, err := New().Discover(ctx, env); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range first {
		ids = append(ids, s.ID)
	}
	want := append([]string{held}, rest[:publishEvery-1]...)
	if d := cmp.Diff(want, ids); d != "" {
		t.Errorf("first hand-over (-want +got):\n%s", d)
	}
	if firstLeft != n-publishEvery {
		t.Errorf("first hand-over says %d left, want %d", firstLeft, n-publishEvery)
	}
}
