package claude

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

// Fixture clock: the recordings are from 2026-11-20 around 21:42–21:49 UTC.
var (
	fixtureNow   = time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC)
	fixtureMtime = time.Date(2026, 11, 20, 21, 50, 0, 0, time.UTC)
)

const (
	machineID = "0123456789abcdef0123456789abcdef" // the placeholder inside 22559's pidDomain
	pidNS     = "pid:[4026531836]"
)

// copyHome copies testdata/home into a temp dir (tests append, truncate and touch
// files) and sets every file's mtime to fixtureMtime.
func copyHome(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	discovertest.CopyTree(t, "testdata/home", dst)
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, fixtureMtime, fixtureMtime)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The registry folder too: no Claude started or exited around fixtureNow.
	if err := os.Chtimes(filepath.Join(dst, ".claude", "sessions"), fixtureMtime, fixtureMtime); err != nil {
		t.Fatal(err)
	}
	return dst
}

// testEnv is an Env over home with a fake process table and the fixture clock.
type testEnv struct {
	*discover.Env
	mu       sync.Mutex
	warnings []string
}

func newEnv(t testing.TB, home string, procs proc.Table) *testEnv {
	t.Helper()
	if procs == nil {
		procs = &proc.Fake{}
	}
	te := &testEnv{}
	te.Env = (&discover.Env{
		Home:     home,
		Getenv:   func(string) string { return "" },
		Procs:    procs,
		Now:      func() time.Time { return fixtureNow },
		StateDir: filepath.Join(t.TempDir(), "state"),
	}).WithWarn(func(w string) {
		te.mu.Lock()
		te.warnings = append(te.warnings, w)
		te.mu.Unlock()
	})
	return te
}

// testAdapter has the fixture host identity and a fixed start-time conversion
// (tick t = fixture boot + t*10 ms).
func testAdapter() *Adapter {
	return &Adapter{
		MachineID: func() string { return machineID },
		PidNS:     func() string { return pidNS },
		StartMillis: func(p proc.Process) (int64, bool) {
			return bootMs + int64(p.StartTicks)*10, true
		},
	}
}

// bootMs puts the fixture boot such that procStart "21139" (pid 12509) is the
// registry's startedAt (1795211016790) give or take a tick.
const bootMs = 1795211016790 - 211390

func sortedIDs(m map[string]discover.Session) []string {
	var ids []string
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// registryMoved sets the registry folder's mtime: a Claude process created or
// removed its entry then.
func registryMoved(t testing.TB, home string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(filepath.Join(home, ".claude", "sessions"), at, at); err != nil {
		t.Fatal(err)
	}
}
