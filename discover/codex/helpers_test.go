package codex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
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

// fixtureHome returns a fresh HOME holding a copy of the recorded .codex.
func fixtureHome(t testing.TB) string {
	t.Helper()
	home := t.TempDir()
	discovertest.CopyTree(t, "testdata/home", home)
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
	return discovertest.NewEnv(home, vars, procs, fixedNow)
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
