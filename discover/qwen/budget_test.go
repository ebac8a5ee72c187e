package qwen

import (
	"context"
	"os"
	"path/filepath"
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
)

// budgetHome is a synthetic home of n sessions whose oldest transcript is a
// live TUI's (a registry record, pid 500, that the process table verifies):
// the session a listing short of time must never leave out. It returns the
// Env, that session's id, and every other id, newest first.
func budgetHome(t *testing.T, n int) (*discover.Env, *[]string, string, []string) {
	t.Helper()
	home := t.TempDir()
	if err := synth.WriteQwenHome(home, n, 3); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(home, ".qwen", "projects", "*", "chats", "*.jsonl"))
	at := map[string]time.Time{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		at[p] = fi.ModTime()
	}
	sort.Slice(paths, func(i, j int) bool { return at[paths[i]].After(at[paths[j]]) })
	id := func(p string) string { return strings.TrimSuffix(filepath.Base(p), ".jsonl") }
	held := id(paths[len(paths)-1])
	var rest []string
	for _, p := range paths[:len(paths)-1] {
		rest = append(rest, id(p))
	}
	dir := filepath.Join(home, ".qwen", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rec := `{"schemaVersion":1,"pid":500,"procStart":"b:42","pidNs":1,"sessionId":"` + held + `","cwd":"/w","name":"w-00","startedAt":1796119190000,"qwenVersion":"0.24.4","kind":"tui"}`
	if err := os.WriteFile(filepath.Join(dir, "500.json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	env, warns := testEnv(t, home, live500(), nil)
	env.StateDir = t.TempDir()
	return env, warns, held, rest
}

// tickingBudget is a budget whose clock moves a millisecond each time it is
// read, and which gives up after reads of it: how far a listing reads then
// depends on the order it reads in, not on the machine's speed.
func tickingBudget(reads int) func(context.Context) discover.Budget {
	return func(context.Context) discover.Budget {
		t0 := time.Unix(1e9, 0)
		var mu sync.Mutex
		n := 0
		end := t0.Add(time.Duration(reads)*time.Millisecond + time.Millisecond/2)
		return discover.Budget{StopAt: end, GiveUpAt: end, Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			n++
			return t0.Add(time.Duration(n) * time.Millisecond)
		}}
	}
}

// TestListingShortOfTime: a full listing whose budget gives up lists the live
// TUI's session (read first and whole, whatever its age) and the newest it had
// time for, each as a listing with time lists it, and warns with how many it
// left out. A lookup never takes a partial answer: it reads its session whole,
// budget or not.
func TestListingShortOfTime(t *testing.T) {
	const n = 40
	for _, tc := range []struct {
		name  string
		reads int // reads of the budget's clock before it gives up: the files read besides the live one
	}{
		{"given up from the start", 0},
		{"given up after ten files", 10},
		{"time for all", 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, warns, held, rest := budgetHome(t, n)
			full := discovertest.DiscoverAll(t, New(), env)
			if len(full) != n || full[held].Status != discover.StatusIdle {
				t.Fatalf("full listing: %d sessions, the live one %s", len(full), full[held].Status)
			}
			*warns = nil
			a := &Adapter{Budget: tickingBudget(tc.reads)}
			env.StateDir = t.TempDir() // the index cold: every file is to be read
			got, err := a.Discover(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]bool{}
			for _, s := range got {
				listed[s.ID] = true
				if d := cmp.Diff(full[s.ID], s); d != "" {
					t.Errorf("%s differs from the listing with time (-full +short):\n%s", s.ID, d)
				}
			}
			newest := min(tc.reads, n-1)
			if !listed[held] || len(got) != 1+newest {
				t.Errorf("listed %d sessions (the live one: %v), want it and %d more", len(got), listed[held], newest)
			}
			for _, id := range rest[min(len(rest), newest+discover.Workers(n)):] {
				if listed[id] {
					t.Errorf("listed %s, older than the %d newest", id, newest)
				}
			}
			if left := n - 1 - newest; left > 0 {
				want := strconv.Itoa(left) + " Qwen Code sessions were not read in time and are missing from this output"
				if len(*warns) != 1 || !strings.HasPrefix((*warns)[0], want) {
					t.Errorf("warnings %q, want one starting %q", *warns, want)
				}
			} else if len(*warns) != 0 {
				t.Errorf("warnings %q, want none", *warns)
			}
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
// fan-out as it makes them (discover.Publish), the live one first and then the
// newest, with the count of those still to come.
func TestListingHandsOverAsItReads(t *testing.T) {
	const n = 70
	env, _, held, rest := budgetHome(t, n)
	var first []string
	firstLeft := -1
	ctx := discover.WatchProgress(context.Background(), func(ss []discover.Session, left int) bool {
		if len(ss) == 0 {
			return false
		}
		for _, s := range ss {
			first = append(first, s.ID)
		}
		firstLeft = left
		return true // the time is up: take this
	})
	if _, err := New().Discover(ctx, env); err != nil {
		t.Fatal(err)
	}
	want := append([]string{held}, rest[:publishEvery-1]...)
	if d := cmp.Diff(want, first); d != "" {
		t.Errorf("first hand-over (-want +got):\n%s", d)
	}
	if firstLeft != n-publishEvery {
		t.Errorf("first hand-over says %d left, want %d", firstLeft, n-publishEvery)
	}
}
