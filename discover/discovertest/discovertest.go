// Package discovertest holds what the adapters' tests share: fixture homes
// copied out of testdata (tests never write the committed fixtures), Envs over
// them, a tree snapshot to prove a read wrote nothing, and the small file
// helpers every adapter's tests need. Its contract test (contract_test.go)
// holds every adapter to discover's contract over the same cases.
package discovertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// NewEnv is an Env over home whose variables come only from vars (no test
// reads the developer's real environment or home), with the process table
// procs and a clock stopped at now.
func NewEnv(home string, vars map[string]string, procs proc.Table, now time.Time) *discover.Env {
	return &discover.Env{
		Home:   home,
		Getenv: func(k string) string { return vars[k] },
		Procs:  procs,
		Now:    func() time.Time { return now },
	}
}

// NewWarnEnv is NewEnv with its warnings collected (CollectWarns); nil procs
// is an available process table with no processes (NoProcs).
func NewWarnEnv(home string, vars map[string]string, procs proc.Table, now time.Time) (*discover.Env, *[]string) {
	if procs == nil {
		procs = NoProcs()
	}
	return CollectWarns(NewEnv(home, vars, procs, now))
}

// NoProcs is an available process table with no processes in it: no session
// of a test home is alive.
func NoProcs() proc.Table { return &proc.Fake{Boot: "boot-1"} }

// CollectWarns returns env with its warnings collected, and the slice they
// are collected in (appends are safe from concurrent reads of the adapter;
// read the slice once the calls that warn have returned).
func CollectWarns(env *discover.Env) (*discover.Env, *[]string) {
	var mu sync.Mutex
	var warns []string
	return env.WithWarn(func(s string) {
		mu.Lock()
		warns = append(warns, s)
		mu.Unlock()
	}), &warns
}

// CopyTree copies src into dst, creating it: a test's own copy of a fixture
// (opening a database may create files next to it; tests append and truncate).
func CopyTree(t testing.TB, src, dst string) {
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

// Snapshot records every entry under dir, by path relative to dir: mode, size,
// mtime and content hash. Two equal snapshots mean nothing under dir changed.
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out, err := tree(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tree(dir string) (map[string]string, error) {
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
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fmt.Sprintf("%v %d %d %s", st.Mode(), st.Size(), st.ModTime().UnixNano(), sum)
		return nil
	})
	return out, err
}

// AgeDirs sets every directory's mtime under root an hour back: a listing
// kept from an earlier read is then known to be current.
func AgeDirs(t testing.TB, root string) {
	t.Helper()
	past := time.Now().Add(-time.Hour)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if err := os.Chtimes(p, past, past); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
}

// WriteLines writes a JSONL file (its directory created), one line each, every
// line ended by exactly one newline.
func WriteLines(t testing.TB, path string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.TrimSuffix(l, "\n"))
		b.WriteString("\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// AppendFile appends s to an existing file, as an agent writing on does.
func AppendFile(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// DiscoverAll runs a.Discover and returns the sessions by id; an error or a
// session listed twice fails the test.
func DiscoverAll(t testing.TB, a discover.Adapter, env *discover.Env) map[string]discover.Session {
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

// ByID returns a copy of ss sorted by id (Discover and Find need not agree on
// order).
func ByID(ss []discover.Session) []discover.Session {
	out := append([]discover.Session(nil), ss...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Time parses an RFC 3339 timestamp (fractional seconds allowed), as a
// fixture's records write them; one it cannot parse panics (the test's
// literal is wrong).
func Time(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TimePtr is Time by pointer, as a Session's optional times are.
func TimePtr(s string) *time.Time {
	t := Time(s)
	return &t
}
