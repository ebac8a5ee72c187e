package codex

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/e2e/synth"
)

// The generator's home lists completely and consistently: every rollout appears
// once, DB rows and rollouts agree, the TUI threads (no DB row) and killed turns
// (stale lock files) come out as the rollouts say.
func TestSyntheticHome(t *testing.T) {
	home := t.TempDir()
	const n = 400
	if err := synth.WriteCodexHome(home, n, 7); err != nil {
		t.Fatal(err)
	}
	got := discovertest.DiscoverAll(t, New(), testEnv(home, nil, nil))
	if len(got) != n {
		t.Fatalf("%d sessions, want %d", len(got), n)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(codexDir(home), "state_5.sqlite")+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows int
	db.QueryRow("SELECT count(*) FROM threads").Scan(&rows)
	if rows != n-n/100 {
		t.Errorf("%d DB rows, want %d (1 in 100 is a TUI thread)", rows, n-n/100)
	}
	locks, _ := filepath.Glob(filepath.Join(codexDir(home), "thread-writer-locks", "*.lock"))
	count := map[string]int{}
	for _, s := range got {
		count[s.Status+"/"+fmt.Sprint(s.Extra["reason"])]++
		if s.Prompt == "" || s.Model == "" || s.Cwd == "" || s.StartedAt == nil || s.LastActivity == nil {
			t.Errorf("%s: prompt %q model %q cwd %q started %v", s.ID, s.Prompt, s.Model, s.Cwd, s.StartedAt)
		}
		if s.Extra["reason"] != "crashed" && s.Extra["reason"] != "interrupted" && (s.Tokens == nil || s.Tokens.Output == 0) {
			t.Errorf("%s: finished thread without tokens", s.ID)
		}
	}
	if count["failed/crashed"] == 0 || count["stopped/interrupted"] == 0 || count["stopped/done"] < n/2 {
		t.Errorf("status mix %v", count)
	}
	if count["failed/crashed"] < len(locks) {
		t.Errorf("%d stale locks but %d crashed threads", len(locks), count["failed/crashed"])
	}
}

// benchHome generates the 10,000-thread home once per machine (it takes seconds
// and ~500 MB) under the temp dir and reuses it.
func benchHome(b *testing.B, n int) string {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("agentctl-bench-codex-%d-v1", n))
	done := filepath.Join(dir, ".complete")
	if _, err := os.Stat(done); err == nil {
		return dir
	}
	os.RemoveAll(dir)
	start := time.Now()
	if err := synth.WriteCodexHome(dir, n, 1); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(done, nil, 0o644)
	b.Logf("generated %d threads in %v", n, time.Since(start))
	return dir
}

// BenchmarkDiscover10k lists a 10,000-thread Codex home (state DB + rollouts,
// about 1 in 250 with multi-MB tool output) with a warm parse index: one stat per
// rollout, no reads. Warm page cache, real /proc/locks.
func BenchmarkDiscover10k(b *testing.B) {
	home := benchHome(b, 10000)
	a := New()
	env := testEnv(home, nil, nil)
	env.StateDir = b.TempDir()
	ss, err := a.Discover(context.Background(), env)
	if err != nil || len(ss) != 10000 {
		b.Fatalf("%d sessions, %v", len(ss), err)
	}
	runDiscover(b, a, env)
}

// BenchmarkDiscover10kNoIndex is the same without the parse index: every
// rollout's tail is read (a first run, or --no-cache).
func BenchmarkDiscover10kNoIndex(b *testing.B) {
	home := benchHome(b, 10000)
	a := New()
	env := testEnv(home, nil, nil)
	runDiscover(b, a, env)
}

// BenchmarkDiscover10kNoDB is the same home in rollout-only mode (older Codex, or
// a deleted state DB): every rollout's head is read too.
func BenchmarkDiscover10kNoDB(b *testing.B) {
	home := benchHome(b, 10000)
	a := New()
	env := testEnv(home, nil, map[string]string{"CODEX_SQLITE_HOME": b.TempDir()})
	runDiscover(b, a, env)
}

// runDiscover times Discover and also reports CPU time per op (user+sys): on a
// shared machine wall time says more about the neighbours than about the code.
func runDiscover(b *testing.B, a *Adapter, env *discover.Env) {
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := a.Discover(context.Background(), env); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
