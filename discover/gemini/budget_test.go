package gemini

import (
	"context"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/e2e/synth"
	"github.com/agentctl/agentctl/meta"
)

// budgetHome is a synthetic home of n sessions (some resumed, with a stray
// second file) whose oldest session agentctl launched (a launch record names
// it): the session a listing short of time must never leave out. It returns
// the Env, the full listing, that session's id, the other ids newest first,
// and every session file.
func budgetHome(t *testing.T, n int) (*discover.Env, *[]string, map[string]discover.Session, string, []string, []string) {
	t.Helper()
	home := t.TempDir()
	if err := synth.WriteGeminiHome(home, n, 3); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
	env, warns := testEnv(t, home, nil)
	env.StateDir = t.TempDir()
	full := discoverAll(t, env)
	if len(full) != n {
		t.Fatalf("full listing: %d sessions", len(full))
	}
	var ids []string
	for id := range full {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return full[ids[i]].LastActivity.After(*full[ids[j]].LastActivity) })
	held := ids[len(ids)-1]
	env.Launches = []meta.Launch{{Adapter: Name, SessionID: held, PID: 9999, StartTicks: 1, BootID: "boot-1"}}
	*warns = nil
	return env, warns, full, held, ids[:len(ids)-1], files
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

// TestListingShortOfTime: a full listing whose budget gives up lists the
// session agentctl launched (its files read first and whole, whatever their
// age) and the newest it had time for, each whole (a session with a file left
// out is left out: a resume's stray file alone is no session), and warns with
// how many files it left out. A lookup never takes a partial answer.
func TestListingShortOfTime(t *testing.T) {
	const n = 40
	for _, tc := range []struct {
		name     string
		reads    int
		min, max int // sessions listed besides the launched one
	}{
		{"given up from the start", 0, 0, 0},
		{"given up after ten files", 10, 1, 10},
		{"time for all", 1000, n - 1, n - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, warns, full, held, rest, files := budgetHome(t, n)
			a := &Adapter{Budget: tickingBudget(tc.reads)}
			env.StateDir = t.TempDir() // the index cold: every file is to be read
			got, err := a.Discover(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]bool{}
			id8s := map[string]bool{}
			for _, s := range got {
				listed[s.ID], id8s[s.ID[:8]] = true, true
				if d := cmp.Diff(full[s.ID], s); d != "" {
					t.Errorf("%s differs from the listing with time (-full +short):\n%s", s.ID, d)
				}
			}
			if !listed[held] || len(got)-1 < tc.min || len(got)-1 > tc.max {
				t.Errorf("listed %d sessions (the launched one: %v), want it and %d–%d more", len(got), listed[held], tc.min, tc.max)
			}
			for _, id := range rest[min(len(rest), tc.max+discover.Workers(n)):] {
				if listed[id] {
					t.Errorf("listed %s, older than the %d newest", id, tc.max)
				}
			}
			left := 0
			for _, f := range files {
				if !id8s[f[len(f)-14:len(f)-6]] {
					left++
				}
			}
			if left > 0 {
				want := strconv.Itoa(left) + " Gemini CLI session files were not read in time and are missing from this output"
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
// fan-out as it makes them (discover.Publish), the launched one first and then
// the newest, with the count of those still to come.
func TestListingHandsOverAsItReads(t *testing.T) {
	const n = 70
	env, _, _, held, rest, _ := budgetHome(t, n)
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
	a := &Adapter{Budget: tickingBudget(1 << 20)} // a deadline, far off
	if _, err := a.Discover(ctx, env); err != nil {
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
