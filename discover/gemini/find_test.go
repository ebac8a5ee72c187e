package gemini

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/google/go-cmp/cmp"
)

// opened records the session files a call opens.
func opened(t *testing.T, fn func()) []string {
	t.Helper()
	var mu sync.Mutex
	var paths []string
	restore := agentfs.SetHook(func(p string) {
		if strings.Contains(p, "/chats/") {
			mu.Lock()
			paths = append(paths, filepath.Base(p))
			mu.Unlock()
		}
	})
	defer restore()
	fn()
	return paths
}

// Find returns exactly what Discover lists for the id, and reads only the
// session's own file — plus, while a gemini process runs in a project, that
// project's files, never another project's.
func TestFindMatchesDiscoverAndStaysSmall(t *testing.T) {
	home, err := filepath.Abs(fixtureHome)
	if err != nil {
		t.Fatal(err)
	}
	// Not alive; alive since before B2's resume; alive since before E's answer
	// (then E, A and B were all written since it started: it is tied to B,
	// the latest, which Find can tell only by reading all three).
	for _, start := range []time.Time{{}, time.Date(2026, 12, 1, 22, 26, 57, 0, time.UTC), time.Date(2026, 12, 1, 22, 26, 0, 0, time.UTC)} {
		alive := !start.IsZero()
		env, _ := testEnv(t, home, nil)
		if alive {
			env.Procs = geminiTree(500, 501, webapp, start, []string{"HOME=" + home})
		}
		all := discoverAll(t, env)
		for id, want := range all {
			var got []discover.Session
			files := opened(t, func() {
				got, err = New().Find(context.Background(), env, discover.Query{Prefix: id[:10]})
			})
			if err != nil || len(got) != 1 {
				t.Fatalf("alive=%v Find %s: %d sessions, %v", alive, id, len(got), err)
			}
			if diff := cmp.Diff(want, got[0]); diff != "" {
				t.Errorf("alive=%v Find %s differs from Discover (-discover +find):\n%s", alive, id, diff)
			}
			limit := 1
			if alive && want.Cwd == webapp {
				limit = 3 // the three webapp sessions
			}
			if len(files) > limit {
				t.Errorf("alive=%v Find %s opened %d session files %q, want ≤ %d", alive, id, len(files), files, limit)
			}
		}
	}
}
