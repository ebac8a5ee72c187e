package codex

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

func openRW(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

// docs/agents/codex.md pitfall 19: an update still in the WAL (not checkpointed, writer
// connected) is visible — immutable=1 would not see it.
func TestUncheckpointedWALVisible(t *testing.T) {
	home := fixtureHome(t)
	w := openRW(t, filepath.Join(codexDir(home), "state_5.sqlite"))
	defer w.Close()
	for _, q := range []string{
		"PRAGMA journal_mode=WAL",
		"PRAGMA wal_autocheckpoint=0",
		"UPDATE threads SET title='renamed in WAL', first_user_message='edited prompt' WHERE id='" + id5425 + "'",
	} {
		if _, err := w.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(codexDir(home), "state_5.sqlite-wal")); err != nil || fi.Size() == 0 {
		t.Fatalf("no WAL content: %v", err)
	}
	s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id5425]
	if s.Title != "renamed in WAL" || s.Prompt != "edited prompt" {
		t.Errorf("title %q prompt %q: the WAL was not read", s.Title, s.Prompt)
	}
}

// docs/agents/codex.md pitfall 20: columns come and go between releases; a threads table
// without created_at_ms, model, first_user_message… still lists.
func TestSchemaDrift(t *testing.T) {
	home := fixtureHome(t)
	p := filepath.Join(codexDir(home), "state_5.sqlite")
	os.Remove(p)
	db := openRW(t, p)
	for _, q := range []string{
		"CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT, cwd TEXT, title TEXT, created_at INTEGER, updated_at INTEGER, archived INTEGER)",
		"INSERT INTO threads VALUES ('" + id5425 + "', '/nowhere/x.jsonl', '/srv/old-schema', 'old schema title', 1795211000, 1795211001, 0)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	got := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))
	if len(got) != 8 {
		t.Fatalf("%d sessions", len(got))
	}
	s := got[id5425]
	if s.Title != "old schema title" || s.Cwd != "/srv/old-schema" || s.Model != "fake-model" || s.Prompt != "prefix test" {
		t.Errorf("title %q cwd %q model %q prompt %q", s.Title, s.Cwd, s.Model, s.Prompt)
	}
	if !s.StartedAt.Equal(ts("2026-11-20T21:43:20Z")) {
		t.Errorf("started %v: created_at (s) × 1000", s.StartedAt)
	}
}

// A state DB that cannot be read is a warning, and the rollouts still list.
func TestBrokenStateDB(t *testing.T) {
	home := fixtureHome(t)
	os.WriteFile(filepath.Join(codexDir(home), "state_5.sqlite"), []byte("not a database"), 0o600)
	// A lower generation is never preferred over the highest N.
	os.WriteFile(filepath.Join(codexDir(home), "state_4.sqlite"), []byte("older"), 0o600)
	var warns []string
	env := testEnv(home, nil, nil).WithWarn(func(s string) { warns = append(warns, s) })
	ss, err := testAdapter(nil).Discover(context.Background(), env)
	if err != nil || len(ss) != 8 {
		t.Fatalf("%d sessions, err %v", len(ss), err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "state_5.sqlite") || !strings.Contains(warns[0], "rollouts only") {
		t.Errorf("warnings %q", warns)
	}
}

// Sub-agents (thread_spawn_edges children) carry their parent; archived threads
// are marked.
func TestSpawnEdgesAndArchive(t *testing.T) {
	home := fixtureHome(t)
	db := openRW(t, filepath.Join(codexDir(home), "state_5.sqlite"))
	if _, err := db.Exec("INSERT INTO thread_spawn_edges VALUES (?, ?, 'open')", id1023, id5425); err != nil {
		t.Fatal(err)
	}
	db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	db.Close()
	arch := filepath.Join(codexDir(home), "archived_sessions")
	os.MkdirAll(arch, 0o755)
	src := rolloutPath(t, home, idD918)
	if err := os.Rename(src, filepath.Join(arch, filepath.Base(src))); err != nil {
		t.Fatal(err)
	}
	got := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))
	if p := got[id5425].Extra["parent_thread_id"]; p != id1023 {
		t.Errorf("parent %v", p)
	}
	if s := got[idD918]; s.Extra["archived"] != true || s.Prompt != "Idle check from TUI" {
		t.Errorf("archived %v prompt %q", s.Extra["archived"], s.Prompt)
	}
}

// docs/agents/codex.md pitfall 21: list, status and peek write nothing in CODEX_HOME — not
// even the -wal/-shm files a plain read-only open of a checkpointed DB creates.
func TestReadOnly(t *testing.T) {
	home := fixtureHome(t)
	writeLock(t, home, id861e)
	before := discovertest.Snapshot(t, codexDir(home))
	a := testAdapter(map[string]int{id861e + ".lock": 1})
	env := testEnv(home, procs(1), nil)
	got := discovertest.DiscoverAll(t, a, env)
	for _, s := range got {
		if _, err := a.Peek(context.Background(), env, s, 5); err != nil && err != discover.ErrNoSession {
			t.Fatal(err)
		}
	}
	after := discovertest.Snapshot(t, codexDir(home))
	var diff []string
	for k, v := range after {
		if before[k] != v {
			diff = append(diff, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diff = append(diff, k+" (removed)")
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		t.Errorf("CODEX_HOME changed: %v", diff)
	}
}

func TestSuccessor(t *testing.T) {
	for p, want := range map[string]string{"01a1": "01a2", "01a\xff": "01b", "a\xff\xff": "b", "": ""} {
		got, ok := successor(p)
		if got != want || ok != (want != "") {
			t.Errorf("successor(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
	if _, ok := successor("\xff\xff"); ok {
		t.Error("all 0xff has a successor")
	}
}
