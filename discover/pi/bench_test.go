package pi

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/e2e/synth"
)

// synthHome generates n sessions once per benchmark.
func synthHome(b *testing.B, n int) string {
	b.Helper()
	home := filepath.Join(b.TempDir(), "home")
	if err := synth.WritePiHome(home, n, 42); err != nil {
		b.Fatal(err)
	}
	return home
}

func benchDiscover(b *testing.B, n int, cached bool) {
	home := synthHome(b, n)
	env, warns := testEnv(&testing.T{}, home, nil)
	env.StateDir = b.TempDir()
	env.NoCache = !cached
	a := New()
	if _, err := a.Discover(context.Background(), env); err != nil { // warm the index
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		ss, err := a.Discover(context.Background(), env)
		if err != nil || len(ss) != n {
			b.Fatalf("got %d sessions, %v (warnings %q)", len(ss), err, *warns)
		}
	}
}

func BenchmarkDiscover1000Indexed(b *testing.B) { benchDiscover(b, 1000, true) }
func BenchmarkDiscover1000NoCache(b *testing.B) { benchDiscover(b, 1000, false) }

// TestSynthHome: the generator's files are what the adapter expects to read.
func TestSynthHome(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if err := synth.WritePiHome(home, 200, 7); err != nil {
		t.Fatal(err)
	}
	env, warns := testEnv(t, home, nil)
	ss := discovertest.DiscoverAll(t, New(), env)
	if len(ss) != 200 || len(*warns) != 0 {
		t.Fatalf("%d sessions, warnings %q", len(ss), *warns)
	}
	count := map[string]int{}
	for _, s := range ss {
		count[s.Adapter]++
		count[s.Status]++
		if s.Prompt == "" || s.Model != "fakeoai/fake-model" || s.Tokens == nil || s.StartedAt == nil {
			t.Errorf("incomplete session %+v", s)
		}
	}
	if count["pi-rust"] != 10 || count["pi"] != 190 || count[discover.StatusFailed] == 0 || count[discover.StatusStopped] == 0 {
		t.Errorf("counts %v", count)
	}
}

// BenchmarkScanEntry: the line scanner alone over a synthetic home's lines
// (after the headers), as a cold listing runs it.
func BenchmarkScanEntry(b *testing.B) {
	home := synthHome(b, 200)
	var lines [][]byte
	n := 0
	_ = filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".jsonl" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		for i, l := range bytes.Split(data, []byte("\n")) {
			if i > 0 && len(l) > 0 {
				lines = append(lines, l)
				n += len(l)
			}
		}
		return nil
	})
	b.SetBytes(int64(n))
	b.ResetTimer()
	for b.Loop() {
		for _, l := range lines {
			var e sumEntry
			if !scanEntry(l, &e) {
				b.Fatalf("not answered: %s", l)
			}
		}
	}
}
