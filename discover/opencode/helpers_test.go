package opencode

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

// Fixture locations (copied from /work/shared/fixtures: home/.local/share/opencode
// and captures/opencode/second-data-home).
func testdata(t testing.TB, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newEnv builds an Env whose variables come only from vars: no test reads the
// developer's real environment or home (pitfall 21).
func newEnv(home string, vars map[string]string, procs proc.Table) *discover.Env {
	return discovertest.NewEnv(home, vars, procs, time.UnixMilli(1795212000000))
}

// noProcs is an available process table with nothing of OpenCode's in it.
func noProcs() *proc.Fake {
	return &proc.Fake{Procs: []proc.Process{{PID: 1, Comm: "systemd"}}, Exes: map[int]string{1: "/usr/lib/systemd/systemd"}, Boot: "b1"}
}

// fixedStart dates Fake processes: StartTicks is their start in Unix ms.
func fixedStart(p proc.Process) (time.Time, bool) {
	if p.StartTicks == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(p.StartTicks)), true
}

func testAdapter() *Adapter { return &Adapter{StartTime: fixedStart} }

// list runs Discover and returns sessions by id plus the warnings.
func list(t testing.TB, env *discover.Env) (map[string]discover.Session, []string) {
	t.Helper()
	var warns []string
	ss, err := testAdapter().Discover(context.Background(), env.WithWarn(func(s string) { warns = append(warns, s) }))
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	by := map[string]discover.Session{}
	for _, s := range ss {
		if _, dup := by[s.ID]; dup {
			t.Errorf("session %s listed twice", s.ID)
		}
		by[s.ID] = s
	}
	return by, warns
}

func peek(t testing.TB, env *discover.Env, s discover.Session, n int) []discover.Message {
	t.Helper()
	ms, err := testAdapter().Peek(context.Background(), env, s, n)
	if err != nil {
		t.Fatalf("Peek %s: %v", s.ID, err)
	}
	return ms
}

// msgCounts counts the native user and assistant messages behind peek items (an
// assistant message that ended in an error yields an "error" item).
func msgCounts(ms []discover.Message) (user, assistant int) {
	seen := map[string]bool{}
	for _, m := range ms {
		id, _, _ := strings.Cut(m.MessageID, ":")
		if seen[id] {
			continue
		}
		seen[id] = true
		switch m.Kind {
		case "user":
			user++
		case "assistant", "error":
			assistant++
		}
	}
	return
}

// dataCopy copies a fixture data dir to a fresh home's default data dir and
// returns the home and the db path.
func dataCopy(t testing.TB, fixtureData string) (home, db string) {
	t.Helper()
	home = t.TempDir()
	data := filepath.Join(home, ".local", "share", "opencode")
	discovertest.CopyTree(t, fixtureData, data)
	return home, filepath.Join(data, "opencode.db")
}

// writer opens a test's own copy of a database read-write (never a fixture).
func writer(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+url.PathEscape(path)+"?_pragma=busy_timeout(3000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// legacyOnly is the session only the legacy storage/ tree has.
const legacyOnly = "ses_e1a00000fffeLegacyOnlySess"

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
