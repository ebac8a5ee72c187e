package opencode

import (
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/discover"
)

// BenchmarkHomeList lists the legacy home in $OPENCODE_BENCH_HOME (one made by
// e2e/bench, read only) with a parse index of its own: the warm listing.
//
//	OPENCODE_BENCH_HOME=/work/bench/h-legacy-10000 go test ./discover/opencode -run '^$' -bench HomeList -benchtime 3x
func BenchmarkHomeList(b *testing.B) {
	home := os.Getenv("OPENCODE_BENCH_HOME")
	if home == "" {
		b.Skip("OPENCODE_BENCH_HOME not set")
	}
	env := newEnv(home, nil, noProcs())
	env.StateDir = b.TempDir()
	a := testAdapter()
	if _, err := a.Discover(context.Background(), env); err != nil { // cold: builds the index
		b.Fatal(err)
	}
	if p := os.Getenv("OPENCODE_BENCH_PROF"); p != "" { // the warm runs only
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if os.Getenv("OPENCODE_BENCH_COLD") != "" { // every run without an index
			env.StateDir = b.TempDir()
		}
		ss, err := a.Discover(context.Background(), env)
		if err != nil || len(ss) == 0 {
			b.Fatalf("%d sessions, err %v", len(ss), err)
		}
	}
}

// BenchmarkHomeFind looks up one session of the legacy home in
// $OPENCODE_BENCH_HOME by its id (what status and peek resolve).
//
//	OPENCODE_BENCH_HOME=/work/bench/h-legacy-10000 go test ./discover/opencode -run '^$' -bench HomeFind
func BenchmarkHomeFind(b *testing.B) {
	home := os.Getenv("OPENCODE_BENCH_HOME")
	if home == "" {
		b.Skip("OPENCODE_BENCH_HOME not set")
	}
	sdir := filepath.Join(home, ".local", "share", "opencode", "storage", "session")
	projects, err := os.ReadDir(sdir)
	if err != nil || len(projects) == 0 {
		b.Fatal(err)
	}
	files, err := os.ReadDir(filepath.Join(sdir, projects[0].Name()))
	if err != nil || len(files) == 0 {
		b.Fatal(err)
	}
	id := strings.TrimSuffix(files[len(files)/2].Name(), ".json")
	env := newEnv(home, nil, noProcs())
	env.StateDir = b.TempDir()
	a := testAdapter()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ss, err := a.Find(context.Background(), env, discover.Query{Prefix: id})
		if err != nil || len(ss) != 1 {
			b.Fatalf("%d sessions, err %v", len(ss), err)
		}
	}
}
