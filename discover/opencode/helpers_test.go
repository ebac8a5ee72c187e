package opencode

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
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
	return &discover.Env{
		Home:   home,
		Getenv: func(k string) string { return vars[k] },
		Procs:  procs,
		Now:    func() time.Time { return time.UnixMilli(1795212000000) },
	}
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

// copyTree copies src into dst (created).
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot records every entry under dir: name, mode, size, mtime and content hash.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		sum := ""
		if st.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			sum = hex.EncodeToString(h[:])
		}
		out[p] = fmt.Sprintf("%v %d %d %s", st.Mode(), st.Size(), st.ModTime().UnixNano(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dataCopy copies a fixture data dir to a fresh home's default data dir and
// returns the home and the db path.
func dataCopy(t testing.TB, fixtureData string) (home, db string) {
	t.Helper()
	home = t.TempDir()
	data := filepath.Join(home, ".local", "share", "opencode")
	copyTree(t, fixtureData, data)
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
