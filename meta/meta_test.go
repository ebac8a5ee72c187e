package meta_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// The test binary re-executes itself as a worker process (META_TEST_CHILD), so
// concurrency is tested between real separate processes, as cron + shells do.
func TestMain(m *testing.M) {
	switch os.Getenv("META_TEST_CHILD") {
	case "":
		os.Exit(m.Run())
	case "count":
		os.Exit(childCount())
	case "churn":
		os.Exit(childChurn())
	}
	os.Exit(3)
}

// childCount bumps its own record and a shared one N times each.
func childCount() int {
	s := meta.NewStore(os.Getenv("META_DIR"))
	me := os.Getenv("META_WORKER")
	n, _ := strconv.Atoi(os.Getenv("META_N"))
	for i := 0; i < n; i++ {
		if err := bump(s, me); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// childChurn writes forever (until SIGKILLed): launch records, events.
func childChurn() int {
	s := meta.NewStore(os.Getenv("META_DIR"))
	for i := 0; ; i++ {
		if err := bump(s, "churn"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Stdout.WriteString("ack\n") // acknowledged: this update must survive
		if err := s.AppendEvent(meta.Event{Type: meta.EventLaunched, SessionID: strings.Repeat("x", 200) + strconv.Itoa(i)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

// bump increments the counter of record `id` and of the shared record "shared".
// The counter lives in the record's Argv length so that every field round-trips.
func bump(s *meta.Store, id string) error {
	return s.UpdateLaunches(func(l *meta.Launches) (bool, error) {
		for _, want := range []string{id, "shared"} {
			r := l.Find(want)
			if r == nil {
				l.Records = append(l.Records, meta.Launch{ID: want, Adapter: "claude-code", Cwd: "/x", LaunchedAt: time.Now()})
				r = &l.Records[len(l.Records)-1]
			}
			r.Argv = append(r.Argv, "+")
		}
		return true, nil
	})
}

func counts(t *testing.T, s *meta.Store) map[string]int {
	t.Helper()
	recs, err := s.ReadLaunches()
	if err != nil {
		t.Fatalf("launches.json does not parse: %v", err)
	}
	out := map[string]int{}
	for _, r := range recs {
		out[r.ID] = len(r.Argv)
	}
	return out
}

func newStore(t *testing.T) *meta.Store {
	t.Helper()
	s := meta.NewStore(filepath.Join(t.TempDir(), "state"))
	var mu sync.Mutex
	var warns []string
	s.Warn = func(f string, a ...any) { mu.Lock(); warns = append(warns, fmt.Sprintf(f, a...)); mu.Unlock() }
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range warns {
			t.Logf("store warning: %s", w)
		}
	})
	return s
}

// The 64 × 100 case runs between processes (below); goroutines in one process
// share nothing but the flock either, so a smaller run covers them.
func TestConcurrentUpdatesGoroutines(t *testing.T) {
	s := newStore(t)
	const workers, n = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if err := bump(s, fmt.Sprintf("g%d", w)); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := counts(t, s)
	if c["shared"] != workers*n {
		t.Errorf("shared counter = %d, want %d (lost updates)", c["shared"], workers*n)
	}
	for w := 0; w < workers; w++ {
		if got := c[fmt.Sprintf("g%d", w)]; got != n {
			t.Errorf("worker %d counter = %d, want %d", w, got, n)
		}
	}
	assertNoStray(t, s.Dir)
}

func TestConcurrentUpdatesProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("64 processes")
	}
	s := newStore(t)
	const workers, n = 64, 25
	var cmds []*exec.Cmd
	for w := 0; w < workers; w++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "META_TEST_CHILD=count", "META_DIR="+s.Dir, "META_N="+strconv.Itoa(n), fmt.Sprintf("META_WORKER=p%d", w))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("worker: %v", err)
		}
	}
	c := counts(t, s)
	if c["shared"] != workers*n {
		t.Errorf("shared counter = %d, want %d (lost updates)", c["shared"], workers*n)
	}
	for w := 0; w < workers; w++ {
		if got := c[fmt.Sprintf("p%d", w)]; got != n {
			t.Errorf("process %d counter = %d, want %d", w, got, n)
		}
	}
	assertNoStray(t, s.Dir)
}

// A writer SIGKILLed at random points never leaves a file that does not parse:
// writes go to a temp file that is renamed into place.
func TestSigkillDuringWrites(t *testing.T) {
	s := newStore(t)
	last := 0
	rounds := 200 // issue 19: ≥ 200 kills
	if testing.Short() {
		rounds = 25
	}
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "META_TEST_CHILD=churn", "META_DIR="+s.Dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var acks atomic.Int64
		first, read := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(read)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if sc.Text() == "ack" && acks.Add(1) == 1 {
					close(first)
				}
			}
		}()
		// Every fourth round kills only after the first acknowledged update: on
		// a loaded machine the child may not get that far in a few milliseconds,
		// and then no round would kill a writer mid-churn.
		if round%4 == 0 {
			select {
			case <-first:
			case <-time.After(10 * time.Second):
			}
		}
		time.Sleep(time.Duration(5+(round%25)*3) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-read
		_ = cmd.Wait()
		c := counts(t, s) // fails the test if launches.json does not parse
		if c["churn"] < last {
			t.Fatalf("round %d: counter went back from %d to %d", round, last, c["churn"])
		}
		if n := int(acks.Load()); c["churn"] < last+n {
			t.Fatalf("round %d: %d updates acknowledged, counter %d → %d (an acknowledged update was lost)", round, n, last, c["churn"])
		}
		last = c["churn"]
		if err := s.ReadEvents(func(meta.Event, []byte) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	if last == 0 {
		t.Fatal("the writer never completed an update; the test proves nothing")
	}
	m, _ := filepath.Glob(filepath.Join(s.Dir, "*.corrupt-*"))
	if len(m) > 0 {
		t.Errorf("files were moved aside as corrupt: %v", m)
	}
	// Leftover temp files of killed writers are invisible to readers; the real
	// files all parse.
	var l meta.Launches
	if err := s.Read(meta.LaunchesFile, &l); err != nil {
		t.Fatal(err)
	}
	// The next write removes the temp files the killed writers left.
	if err := meta.Update(s, meta.LaunchesFile, func(l *meta.Launches) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(s.Dir, "."+meta.LaunchesFile+".tmp-*")); len(m) > 0 {
		t.Errorf("temp files left after the next write: %v", m)
	}
}

// assertNoStray checks every state file parses and is private.
func assertNoStray(t *testing.T, dir string) {
	t.Helper()
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v, want 0700", st.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		info, _ := e.Info()
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", e.Name(), info.Mode().Perm())
		}
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("stray temp file %s", e.Name())
		}
		if strings.HasSuffix(e.Name(), ".json") {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("%s does not parse: %v", e.Name(), err)
			} else if v["schema"] != float64(1) {
				t.Errorf("%s: schema = %v, want 1", e.Name(), v["schema"])
			}
		}
	}
}
