package claude

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
