package claude

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
)

// lookBudget is a budget whose clock moves a millisecond each time it is
// looked at: full parsing stops after stopAfter looks (a budgeted read looks
// every MiB), and it never gives up.
func lookBudget(stopAfter int) func(context.Context) discover.Budget {
	return func(context.Context) discover.Budget {
		start := time.Unix(1000, 0)
		var looks atomic.Int64
		return discover.Budget{
			StopAt:   start.Add(time.Duration(stopAfter) * time.Millisecond),
			GiveUpAt: start.Add(time.Hour),
			Now:      func() time.Time { return start.Add(time.Duration(looks.Add(1)) * time.Millisecond) },
		}
	}
}

// Issue 34 item 4: one 8 GB transcript with no newline (sparse: no disk) made
// every listing read it to its end, past the adapter's timeout, so that no
// Claude session was listed, run after run. Now the read stops with the budget,
// inside the line, the rest of the sessions are listed, the file is named as
// holding a line over jsonl.MaxLine, and the index keeps how far the read got,
// so that the next run goes further (and lists no fewer).
func TestOverlongLineHidesNothing(t *testing.T) {
	home := copyHome(t)
	a := testAdapter()
	want := sessionsByID(t, a, newEnv(t, home, nil))
	big := filepath.Join(home, ".claude", "projects", "-big", "b1600000-0000-4000-8000-000000000008.jsonl")
	if err := os.MkdirAll(filepath.Dir(big), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 8<<30); err != nil {
		t.Skipf("no sparse 8 GB file here: %v", err)
	}
	a.Budget = lookBudget(100) // about 100 MiB of the big file a run
	env := newEnv(t, home, nil)
	var offsets []int64
	prev := 0
	for run := 1; run <= 2; run++ {
		env.warnings = nil
		got := sessionsByID(t, a, env)
		if len(got) < prev {
			t.Errorf("run %d: %d sessions, fewer than the run before (%d)", run, len(got), prev)
		}
		prev = len(got)
		for _, id := range sortedIDs(want) {
			if _, ok := got[id]; !ok {
				t.Errorf("run %d: session %s missing", run, id)
			}
		}
		if _, ok := got["b1600000-0000-4000-8000-000000000008"]; !ok {
			t.Errorf("run %d: the big transcript's session is not listed", run)
		}
		named := false
		for _, w := range env.warnings {
			named = named || (strings.Contains(w, "line over 64 MiB") && strings.Contains(w, big))
		}
		if !named {
			t.Errorf("run %d: no warning names %s as holding a line over 64 MiB; warnings:\n%s", run, big, strings.Join(env.warnings, "\n"))
		}
		ix := loadIndex(env.CacheDir())
		e, ok := ix.Get(big)
		ix.Close()
		if !ok {
			t.Fatalf("run %d: no index entry for the big transcript", run)
		}
		offsets = append(offsets, e.Offset)
	}
	if !(offsets[0] > 64<<20 && offsets[1] > offsets[0] && offsets[1] < 8<<30) {
		t.Errorf("resume offsets after each run %v: want each past the one before (the read resumes, inside the line)", offsets)
	}
}

func sessionsByID(t *testing.T, a *Adapter, env *testEnv) map[string]discover.Session {
	t.Helper()
	ss, err := a.Discover(t.Context(), env.Env)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]discover.Session{}
	for _, s := range ss {
		out[s.ID] = s
	}
	return out
}

// Issue 34 item 5: 100,000 sessions in one project made a listing that ran out
// of time answer nothing, run after run. A listing's sessions are handed over
// as they are made (discover.Publish), those that may be alive and then the
// newest first, and a large one makes its thousand most wanted before the
// rest: a listing whose time is up takes those, with the number left out.
func TestListingShortOfTimeHandsOverTheNewest(t *testing.T) {
	home := t.TempDir()
	const n = 2*quickFirst + 100
	base := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	var newest []string // ids, newest first
	for i := range n {
		id := fmt.Sprintf("c0000000-0000-4000-8000-%012d", i)
		at := base.Add(-time.Duration(i) * time.Minute)
		p := writeTranscript(t, home, "-w", id, userPrompt(id, "/w", at.Format("2006-01-02T15:04:05.000Z"), "p"))
		if err := os.Chtimes(p, at, at); err != nil { // last written when last active
			t.Fatal(err)
		}
		newest = append(newest, id)
	}
	env := newEnv(t, home, nil)
	for run, at := range []int{1, 100, quickFirst + 5} {
		var got []string
		left := -1
		ctx := discover.WatchProgress(t.Context(), func(ss []discover.Session, l int) bool {
			if len(ss) < at {
				return false
			}
			for _, s := range ss {
				got = append(got, s.ID)
			}
			left = l
			return true
		})
		if _, err := testAdapter().Discover(ctx, env.Env); err != nil {
			t.Fatal(err)
		}
		if len(got) < at || len(got) > at+publishEvery {
			t.Fatalf("taken at %d: %d sessions handed over", at, len(got))
		}
		if diff := cmp.Diff(newest[:len(got)], got); diff != "" {
			t.Errorf("taken at %d: not the newest (-want +got):\n%s", at, diff)
		}
		if left != n-len(got) {
			t.Errorf("taken at %d: %d left out, want %d", at, left, n-len(got))
		}
		if run == 0 {
			// Taken on a cold index: what was read is kept for the next run.
			ix := loadIndex(env.CacheDir())
			kept := ix.Len()
			ix.Close()
			if kept < quickFirst {
				t.Errorf("taken on a cold index: %d transcripts kept in the index, want the %d read", kept, quickFirst)
			}
		}
	}
	// A run with time lists them all.
	if got := sessionsByID(t, testAdapter(), env); len(got) != n {
		t.Errorf("with time: %d of %d sessions listed", len(got), n)
	}
}
