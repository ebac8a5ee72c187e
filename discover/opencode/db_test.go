package opencode

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/internal/sqlitero"
)

// listAndPeekAll exercises every read path: the listing and a full peek of each
// session.
func listAndPeekAll(t *testing.T, env *discover.Env) int {
	t.Helper()
	got, _ := list(t, env)
	for _, s := range got {
		if _, err := testAdapter().Peek(context.Background(), env, s, 0); err != nil && err != discover.ErrNoSession {
			t.Fatalf("peek %s: %v", s.ID, err)
		}
	}
	return len(got)
}

// The fixture dirs (WAL-mode databases without -wal/-shm) are byte-identical after
// listing and peeking: no side files, no checkpoint, no write.
func TestFixtureDirsUntouched(t *testing.T) {
	for _, dir := range []string{"home", "second-data-home"} {
		root := testdata(t, dir)
		before := discovertest.Snapshot(t, root)
		vars := map[string]string{}
		if dir == "second-data-home" {
			vars["XDG_DATA_HOME"] = root
		}
		if n := listAndPeekAll(t, newEnv(testdata(t, "home"), vars, noProcs())); n == 0 {
			t.Fatalf("%s: nothing listed", dir)
		}
		if diff := cmp.Diff(before, discovertest.Snapshot(t, root)); diff != "" {
			t.Errorf("%s changed (-before +after):\n%s", dir, diff)
		}
	}
}

// A read-only data dir (as the shared fixtures are) reads the same and stays
// unchanged. The tests run as root, which may write anyway: only never trying
// keeps the directory clean.
func TestReadOnlyDataDir(t *testing.T) {
	home, db := dataCopy(t, testdata(t, "home/.local/share/opencode"))
	data := filepath.Dir(db)
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(data, 0o755) })
	before := discovertest.Snapshot(t, data)
	if n := listAndPeekAll(t, newEnv(home, nil, noProcs())); n != len(homeFacts) {
		t.Errorf("listed %d, want %d", n, len(homeFacts))
	}
	if diff := cmp.Diff(before, discovertest.Snapshot(t, data)); diff != "" {
		t.Errorf("read-only data dir changed:\n%s", diff)
	}
}

// addSession inserts a minimal session with one user message and its text part.
func addSession(t *testing.T, db *sql.DB, id, dir, prompt string, created int64) {
	t.Helper()
	mustExec(t, db, `INSERT INTO session(id, project_id, slug, directory, title, version, time_created, time_updated, model)
		VALUES (?, 'global', 'new-one', ?, ?, '1.18.33', ?, ?, '{"id":"fake-model","providerID":"fake","variant":"default"}')`,
		id, dir, "New session - 2026-11-20T22:00:00.000Z", created, created+50)
	mid := "msg_" + id[4:16] + "00UserMessage1"
	mustExec(t, db, `INSERT INTO message(id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)`,
		mid, id, created+10, created+10, `{"role":"user","time":{"created":`+itoa(created+10)+`},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"}}`)
	mustExec(t, db, `INSERT INTO part(id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)`,
		"prt_"+id[4:16]+"00UserTextPart", mid, id, created+11, created+11, `{"type":"text","text":`+quote(prompt)+`}`)
}

// Pitfall 18: a row still in the WAL (OpenCode running, not yet checkpointed) is
// visible, through the live -wal/-shm, and nothing new appears next to the db.
func TestPitfall18_UncheckpointedWALRowVisible(t *testing.T) {
	home, path := dataCopy(t, testdata(t, "home/.local/share/opencode"))
	w := writer(t, path)
	mustExec(t, w, "PRAGMA wal_autocheckpoint=0")
	const id = "ses_e0500000fffeInWALOnly00001"
	addSession(t, w, id, "/home/dev/frontend", "only in the WAL", 1795212000000)

	// Premise: the main file alone does not have the row.
	imm, err := sql.Open("sqlite", sqlitero.DSN(path, true))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := imm.QueryRow("SELECT count(*) FROM session WHERE id = ?", id).Scan(&n); err != nil || n != 0 {
		t.Fatalf("premise: row in the main file already (n=%d, err=%v)", n, err)
	}
	imm.Close()

	data := filepath.Dir(path)
	before := discovertest.Snapshot(t, data)
	got, _ := list(t, newEnv(home, nil, noProcs()))
	s, ok := got[id]
	if !ok {
		t.Fatalf("WAL-only session not listed (got %d sessions)", len(got))
	}
	if s.Prompt != "only in the WAL" {
		t.Errorf("prompt %q", s.Prompt)
	}
	if len(got) != len(homeFacts)+1 {
		t.Errorf("listed %d sessions, want %d", len(got), len(homeFacts)+1)
	}
	after := discovertest.Snapshot(t, data)
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("listing created %s", p)
		}
	}
	// The db file itself is untouched by the reader (no checkpoint).
	if db := filepath.Base(path); before[db] != after[db] {
		t.Errorf("db file changed: %s → %s", before[db], after[db])
	}
}

// A -wal without its -shm (a crash or a copy): reading the WAL would create the
// -shm next to the user's db, so the listing reads the main file and says what it
// cannot show.
func TestWALWithoutSHM(t *testing.T) {
	_, src := dataCopy(t, testdata(t, "home/.local/share/opencode"))
	w := writer(t, src)
	mustExec(t, w, "PRAGMA wal_autocheckpoint=0")
	addSession(t, w, "ses_e0500000fffeInWALOnly00002", "/home/dev/frontend", "lost in the WAL", 1795212000000)

	home := t.TempDir()
	data := filepath.Join(home, ".local", "share", "opencode")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "opencode.db"+suffix), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := discovertest.Snapshot(t, data)
	got, warns := list(t, newEnv(home, nil, noProcs()))
	if len(got) != len(homeFacts) {
		t.Errorf("listed %d, want the %d of the main file", len(got), len(homeFacts))
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "-shm is missing") {
		t.Errorf("warnings %q, want one about the missing -shm", warns)
	}
	if diff := cmp.Diff(before, discovertest.Snapshot(t, data)); diff != "" {
		t.Errorf("data dir changed:\n%s", diff)
	}
}

// A writer that starts while a lock-free read runs: the read is done again
// through the writer's WAL, so its rows are not missed.
func TestReadDBRetriesWhenAWriterAppears(t *testing.T) {
	_, path := dataCopy(t, testdata(t, "home/.local/share/opencode"))
	const id = "ses_e0500000fffeLateWriter0001"
	calls := 0
	var last int
	_, err := sqlitero.Read(context.Background(), path, func(ctx context.Context, db *sql.DB) error {
		calls++
		if calls == 1 {
			w := writer(t, path)
			mustExec(t, w, "PRAGMA wal_autocheckpoint=0")
			addSession(t, w, id, "/home/dev/frontend", "late", 1795212000000)
		}
		return db.QueryRowContext(ctx, "SELECT count(*) FROM session WHERE id = ?", id).Scan(&last)
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || last != 1 {
		t.Errorf("calls %d, row visible %d; want a second read that sees the row", calls, last)
	}
}

func TestMissingDataDirIsEmpty(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"no data dir":          nil,
		"XDG_DATA_HOME absent": {"XDG_DATA_HOME": filepath.Join(t.TempDir(), "nope")},
		"OPENCODE_DB absent":   {"OPENCODE_DB": filepath.Join(t.TempDir(), "x.db")},
		"OPENCODE_DB :memory:": {"OPENCODE_DB": ":memory:"},
	} {
		ss, err := testAdapter().Discover(context.Background(), newEnv(t.TempDir(), vars, noProcs()))
		if err != nil || len(ss) != 0 {
			t.Errorf("%s: %d sessions, err %v; want none and no error", name, len(ss), err)
		}
	}
}

// OPENCODE_DB wins over the data dir (docs/agents/opencode.md §1); a relative value is under
// the data dir; a relative XDG_DATA_HOME is invalid and ignored.
func TestDBPathOverrides(t *testing.T) {
	second := testdata(t, "second-data-home/opencode/opencode.db")
	home := testdata(t, "home")
	cases := []struct {
		name string
		vars map[string]string
		want int
	}{
		{"default", nil, len(homeFacts)},
		{"OPENCODE_DB absolute", map[string]string{"OPENCODE_DB": second}, len(secondFacts)},
		{"OPENCODE_DB relative", map[string]string{"XDG_DATA_HOME": testdata(t, "second-data-home"), "OPENCODE_DB": "opencode.db"}, len(secondFacts)},
		{"relative XDG_DATA_HOME ignored", map[string]string{"XDG_DATA_HOME": "testdata/second-data-home"}, len(homeFacts)},
	}
	for _, c := range cases {
		got, _ := list(t, newEnv(home, c.vars, noProcs()))
		if len(got) != c.want {
			t.Errorf("%s: %d sessions, want %d", c.name, len(got), c.want)
		}
	}
}

// Non-release channels write opencode-<channel>.db; without opencode.db every
// opencode*.db is read.
func TestChannelDatabases(t *testing.T) {
	home := t.TempDir()
	data := filepath.Join(home, ".local", "share", "opencode")
	discovertest.CopyTree(t, testdata(t, "second-data-home/opencode"), data)
	if err := os.Rename(filepath.Join(data, "opencode.db"), filepath.Join(data, "opencode-dev.db")); err != nil {
		t.Fatal(err)
	}
	got, _ := list(t, newEnv(home, nil, noProcs()))
	if len(got) != len(secondFacts) {
		t.Errorf("%d sessions from opencode-dev.db, want %d", len(got), len(secondFacts))
	}
	for _, s := range got {
		if filepath.Base(s.Path) != "opencode-dev.db" {
			t.Errorf("%s path %s", s.ID, s.Path)
		}
	}
}

// Paths with spaces and URI metacharacters reach SQLite intact.
func TestDataDirWithURIMetacharacters(t *testing.T) {
	home := filepath.Join(t.TempDir(), "My.Project dir #1 ?a=b %20")
	discovertest.CopyTree(t, testdata(t, "home/.local/share/opencode"), filepath.Join(home, ".local", "share", "opencode"))
	env := newEnv(home, nil, noProcs())
	if n := listAndPeekAll(t, env); n != len(homeFacts) {
		t.Errorf("listed %d, want %d", n, len(homeFacts))
	}
}

// A broken database fails the adapter (a warning for the command) unless another
// store answered; then it is a warning and the other store's sessions are listed.
func TestCorruptDatabase(t *testing.T) {
	home := t.TempDir()
	data := filepath.Join(home, ".local", "share", "opencode")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "opencode.db"), []byte("this is not a database, just text padding it out........................................................................................"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := testAdapter().Discover(context.Background(), newEnv(home, nil, noProcs())); err == nil {
		t.Error("a corrupt only store: want an adapter error")
	}
	discovertest.CopyTree(t, testdata(t, "legacy/storage"), filepath.Join(data, "storage"))
	got, warns := list(t, newEnv(home, nil, noProcs()))
	if _, ok := got[legacyOnly]; !ok || len(warns) != 1 || !strings.Contains(warns[0], "opencode.db") {
		t.Errorf("got %d sessions, warnings %q; want the legacy ones and one warning", len(got), warns)
	}
}

// Rows whose data is not JSON are skipped, never fail the listing or the peek.
func TestInvalidJSONRowsSkipped(t *testing.T) {
	home, path := dataCopy(t, testdata(t, "home/.local/share/opencode"))
	w := writer(t, path)
	// the latest message of the aborted session, and the prompt part of another
	mustExec(t, w, `UPDATE message SET data = 'not json {' WHERE id = 'msg_1faee16490013awwmT9wj3uj1r'`)
	mustExec(t, w, `UPDATE part SET data = '{"type":"text","text":' WHERE id = 'prt_1faec1fb9001fTNVjDRlpTMjj5'`)
	mustExec(t, w, `INSERT INTO part(id, message_id, session_id, time_created, time_updated, data)
		VALUES ('prt_1faec6299001zzzzzzzzzzzzzz', 'msg_1faec2486001fnh9HDUwahLpbA', 'ses_e0513e0d3ffeb4Nc0mnqJKxBsR', 1, 1, '{"type":"hologram","beams":3}')`)
	w.Close()
	env := newEnv(home, nil, noProcs())
	got, _ := list(t, env)
	if len(got) != len(homeFacts) {
		t.Fatalf("listed %d, want %d", len(got), len(homeFacts))
	}
	if s := got["ses_e0513e0d3ffeb4Nc0mnqJKxBsR"]; s.Prompt != "" {
		t.Errorf("prompt from an unparsable part: %q", s.Prompt)
	}
	ms := peek(t, env, got["ses_e0513e0d3ffeb4Nc0mnqJKxBsR"], 0)
	if len(ms) != 2 || ms[1].Text != "Hello from the fake server." {
		t.Errorf("peek with a broken and an unknown part: %+v", ms)
	}
	ms = peek(t, env, got["ses_e0511ef9bffeSVrWS3Clgxzegt"], 0)
	if len(ms) != 1 || ms[0].Kind != "user" {
		t.Errorf("peek with a broken message: %+v", ms)
	}
}

// An older schema without the session totals: tokens and cost are summed from the
// assistant messages, the model comes from the latest message.
func TestSchemaWithoutTotals(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	w := writer(t, path)
	mustExec(t, w, `CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL,
		directory text NOT NULL, title text NOT NULL, version text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL)`)
	mustExec(t, w, `CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL)`)
	mustExec(t, w, `CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL)`)
	mustExec(t, w, `INSERT INTO session VALUES ('ses_e0400000fffeOldSchemaSess1', 'global', NULL, 's', '/w', 'Old', '1.2.0', 1000, 9000)`)
	for i, d := range []string{
		`{"role":"user","time":{"created":1100},"model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}`,
		`{"role":"assistant","parentID":"m1","providerID":"anthropic","modelID":"claude-sonnet-4-5","cost":0.5,"tokens":{"input":10,"output":5,"reasoning":2,"cache":{"read":100,"write":7}},"time":{"created":1200,"completed":1300},"finish":"tool-calls"}`,
		`{"role":"assistant","parentID":"m1","providerID":"anthropic","modelID":"claude-sonnet-4-5","cost":0.25,"tokens":{"input":20,"output":6,"reasoning":0,"cache":{"read":200,"write":0}},"time":{"created":1400,"completed":1500},"finish":"stop"}`,
	} {
		mustExec(t, w, `INSERT INTO message VALUES (?, 'ses_e0400000fffeOldSchemaSess1', ?, ?, ?)`, "m"+itoa(int64(i+1)), 1100+int64(i)*100, 1100+int64(i)*100, d)
	}
	w.Close()
	got, _ := list(t, newEnv(home, nil, noProcs()))
	s := got["ses_e0400000fffeOldSchemaSess1"]
	want := discover.Tokens{Input: 30, Output: 13, CacheRead: 300, CacheWrite: 7}
	if s.Tokens == nil || *s.Tokens != want || s.CostUSD == nil || *s.CostUSD != 0.75 || s.CostSource != "agent" {
		t.Errorf("tokens %+v cost %v, want %+v and 0.75", s.Tokens, s.CostUSD, want)
	}
	if s.Model != "anthropic/claude-sonnet-4-5" || s.Status != discover.StatusStopped {
		t.Errorf("model %q status %q", s.Model, s.Status)
	}
	if s.Extra["tokens_reasoning"] != int64(2) {
		t.Errorf("reasoning tokens %v, want 2", s.Extra["tokens_reasoning"])
	}
}
