package opencode

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
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
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if os.Getenv("OPENCODE_BENCH_COLD") != "" { // every run without an index
			b.StopTimer()
			env.StateDir = b.TempDir()
			b.StartTimer()
		}
		ss, err := a.Discover(context.Background(), env)
		if err != nil || len(ss) == 0 {
			b.Fatalf("%d sessions, err %v", len(ss), err)
		}
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkHomeSummarise is a cold listing of the legacy home in
// $OPENCODE_BENCH_HOME that is short of time from its start: every session is
// summarised from the ends of its message listing (legacyEnds), as the sessions
// past the budget's half are. A summary must cost a fraction of a full read
// (BenchmarkHomeList with OPENCODE_BENCH_COLD=1), or a listing short of time
// gives up before every session is listed.
//
//	OPENCODE_BENCH_HOME=/work/bench/h-legacy-10000 go test ./discover/opencode -run '^$' -bench HomeSummarise -benchtime 3x
func BenchmarkHomeSummarise(b *testing.B) {
	home := os.Getenv("OPENCODE_BENCH_HOME")
	if home == "" {
		b.Skip("OPENCODE_BENCH_HOME not set")
	}
	defer func(f func(context.Context) discover.Budget) { budgetOf = f }(budgetOf)
	past := time.Now().Add(-time.Second)
	budgetOf = func(context.Context) discover.Budget { return discover.Budget{StopAt: past} }
	env := newEnv(home, nil, noProcs())
	a := testAdapter()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		env.StateDir = b.TempDir() // summaries are not indexed; a fresh one all the same
		b.StartTimer()
		ss, err := a.Discover(context.Background(), env)
		if err != nil || len(ss) == 0 {
			b.Fatalf("%d sessions, err %v", len(ss), err)
		}
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the process's user and system time so far: on a machine others
// load too, the CPU a run costs is steadier than its wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// BenchmarkHomeReadOnce reads every session and message file of the legacy home
// in $OPENCODE_BENCH_HOME once (open, read, close, on as many cores as a
// listing uses), its listing excluded: the floor a cold listing is compared with.
//
//	OPENCODE_BENCH_HOME=/work/bench/h-legacy-10000 go test ./discover/opencode -run '^$' -bench HomeReadOnce -benchtime 2x
func BenchmarkHomeReadOnce(b *testing.B) {
	home := os.Getenv("OPENCODE_BENCH_HOME")
	if home == "" {
		b.Skip("OPENCODE_BENCH_HOME not set")
	}
	storage := filepath.Join(home, ".local", "share", "opencode", "storage")
	var files []string
	for _, sub := range []string{"session", "message"} {
		filepath.WalkDir(filepath.Join(storage, sub), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return nil
		})
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		discover.Spread(context.Background(), len(files), func(i int) {
			_, _, _ = agentfs.ReadFileID(files[i])
		})
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(len(files)), "files")
}
