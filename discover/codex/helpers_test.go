package codex

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// Thread ids of the recorded fixture home (testdata/home/.codex, from
// fixtures/home/.codex; README "Expected facts — Codex rollouts").
const (
	id1023 = "01a1faeb-1023-71b2-9931-d11b29406e2b" // 4 turns, resumed, last one interrupted
	id861e = "01a1faeb-861e-7d32-a5b7-8a334d81e0cb" // SIGTERM mid-turn
	idAA41 = "01a1faeb-aa41-7b11-85ce-5c4f2d79e0c1" // SIGINT, then resumed
	id568b = "01a1faee-568b-7140-b67d-7f4451c8d2d3" // TUI, not in the DB
	id5425 = "01a1faf0-5425-7050-b71b-48881652cb1b" // plain exec turn
	id60b3 = "01a1faf0-60b3-7683-8629-bc7349f216a1" // prefix resume made a new thread; DB title empty
	idD918 = "01a1faf0-d918-7c42-8371-9cb68efc88ed" // TUI, not in the DB
	id70be = "01a1faf0-70be-7df3-9aa2-02c8425dc9ef" // TZ=UTC+14, date folder 2026/11/21
)

// copyTree copies src into dst (tests never read or write testdata in place:
// opening a database may not create files next to the committed fixture).
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
		out, err := os.Create(target)
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

// fixtureHome returns a fresh HOME holding a copy of the recorded .codex.
func fixtureHome(t testing.TB) string {
	t.Helper()
	home := t.TempDir()
	copyTree(t, "testdata/home", home)
	return home
}

func codexDir(home string) string { return filepath.Join(home, ".codex") }

func rolloutPath(t testing.TB, home, id string) string {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(codexDir(home), "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	if len(ms) != 1 {
		t.Fatalf("rollout of %s: %v", id, ms)
	}
	return ms[0]
}

var fixedNow = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

func testEnv(home string, procs proc.Table, vars map[string]string) *discover.Env {
	if procs == nil {
		procs = &proc.Fake{Boot: "boot-1"}
	}
	return &discover.Env{
		Home:   home,
		Getenv: func(k string) string { return vars[k] },
		Procs:  procs,
		Now:    func() time.Time { return fixedNow },
	}
}

// fakeHolders simulates lock holders: lock file base name (<id>.lock) → PID.
func fakeHolders(held map[string]int) Holders {
	return func(_ context.Context, files []string) (map[string]int, error) {
		out := map[string]int{}
		for _, f := range files {
			if pid, ok := held[filepath.Base(f)]; ok {
				out[f] = pid
			}
		}
		return out, nil
	}
}

// testAdapter has no real lock or fd readers: every test says what is live.
func testAdapter(held map[string]int) *Adapter {
	return &Adapter{Holders: fakeHolders(held), OpenFiles: func(int) ([]string, error) { return nil, nil }}
}

// writeLock creates thread-writer-locks/<id>.lock (0 bytes, as Codex does).
func writeLock(t testing.TB, home, id string) string {
	t.Helper()
	dir := filepath.Join(codexDir(home), "thread-writer-locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, id+".lock")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func discoverAll(t testing.TB, a *Adapter, env *discover.Env) map[string]discover.Session {
	t.Helper()
	var warns []string
	env = env.WithWarn(func(s string) { warns = append(warns, s) })
	ss, err := a.Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		t.Logf("warning: %s", w)
	}
	out := map[string]discover.Session{}
	for _, s := range ss {
		if _, dup := out[s.ID]; dup {
			t.Fatalf("session %s listed twice", s.ID)
		}
		out[s.ID] = s
	}
	return out
}

func appendFile(t testing.TB, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func kinds(msgs []discover.Message) string {
	var b []string
	for _, m := range msgs {
		b = append(b, m.Kind)
	}
	return strings.Join(b, ",")
}

func texts(msgs []discover.Message, kind string) []string {
	var out []string
	for _, m := range msgs {
		if m.Kind == kind {
			out = append(out, m.Text)
		}
	}
	return out
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}
