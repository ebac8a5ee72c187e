package qwen

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// fixtureHome is the real Qwen Code 0.24.4 home recorded against the stub
// (copied from the shared fixtures with its manifest.json).
const fixtureHome = "testdata/home"

// now is after every fixture timestamp (2026-12-01T22:28–22:31Z).
var now = time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)

// testEnv builds an Env over home with the given process table (nil: an
// empty but available one).
func testEnv(t *testing.T, home string, procs proc.Table, vars map[string]string) (*discover.Env, *[]string) {
	t.Helper()
	if procs == nil {
		procs = &proc.Fake{Boot: "boot-1"}
	}
	var mu sync.Mutex
	var warns []string
	env := &discover.Env{
		Home:   home,
		Getenv: func(k string) string { return vars[k] },
		Procs:  procs,
		Now:    func() time.Time { return now },
	}
	env = env.WithWarn(func(s string) {
		mu.Lock()
		warns = append(warns, s)
		mu.Unlock()
	})
	return env, &warns
}

func discoverAll(t *testing.T, a *Adapter, env *discover.Env) map[string]discover.Session {
	t.Helper()
	ss, err := a.Discover(context.Background(), env)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	out := map[string]discover.Session{}
	for _, s := range ss {
		if _, dup := out[s.ID]; dup {
			t.Errorf("session %s listed twice", s.ID)
		}
		out[s.ID] = s
	}
	return out
}

// copyTree copies the fixture home so a test may change it.
func copyTree(t *testing.T, src, dst string) {
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
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeChat writes a transcript for sid under home's default projects dir.
func writeChat(t *testing.T, home, cwd, sid string, lines ...string) string {
	t.Helper()
	dir := filepath.Join(home, ".qwen", "projects", strings.ReplaceAll(cwd, "/", "-"), "chats")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, sid+".jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func tsPtr(s string) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
