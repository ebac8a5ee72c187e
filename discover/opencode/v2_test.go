package opencode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// The OpenCode 2 database of these tests is built from testdata/opencode2/store.sql:
// OpenCode 2's own schema (its migration SQL in the public source) and rows
// shaped as its Session.Message schema writes them. No OpenCode 2 binary is
// installable here (docs/agents/opencode.md §2.1.1); once one is, the e2e suite
// records a real database and these expectations are checked against it too.

const (
	v2Done      = "ses_f1a000001ffeV2DoneSessio01"
	v2Migrated  = "ses_f1a000002ffeV2Migrated0001"
	v2Archived  = "ses_f1a000003ffeV2Archived0001"
	v2Failed    = "ses_f1a000004ffeV2FailedSess01"
	v2Open      = "ses_f1a000005ffeV2OpenSession1"
	v2Interrupt = "ses_f1a000006ffeV2Interrupt001"
	v1Only      = "ses_f1a000007ffeV1OnlySession1"
)

// v2Home builds a home whose default data dir holds an OpenCode 2 opencode.db
// from store.sql, and returns the home and the db path.
func v2Home(t testing.TB) (home, dbPath string) {
	t.Helper()
	home = t.TempDir()
	data := filepath.Join(home, ".local", "share", "opencode")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	dbPath = filepath.Join(data, "opencode.db")
	sqlText, err := os.ReadFile(testdata(t, "opencode2/store.sql"))
	if err != nil {
		t.Fatal(err)
	}
	w := writer(t, dbPath)
	mustExec(t, w, string(sqlText))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return home, dbPath
}

// v2View is what a listing says of a session, for comparison.
type v2View struct {
	Status, Blocked, Title, Prompt, Cwd, Model, Version string
	Tokens                                              discover.Tokens
	Cost                                                float64
	Archived, Reasoning                                 any
}

func viewOf(s discover.Session) v2View {
	v := v2View{Status: s.Status, Blocked: s.BlockedReason, Title: s.Title, Prompt: s.Prompt, Cwd: s.Cwd,
		Model: s.Model, Version: s.AgentVersion, Archived: s.Extra["archived_at"], Reasoning: s.Extra["tokens_reasoning"]}
	if s.Tokens != nil {
		v.Tokens = *s.Tokens
	}
	if s.CostUSD != nil {
		v.Cost = *s.CostUSD
	}
	return v
}

// TestV2ListExact: every session of an OpenCode 2 database, each once, with its
// status, tokens and cost exactly as the store holds them; the migrated session
// from its session_v2 row, not its 1.x copy; the 1.x-only one still listed.
func TestV2ListExact(t *testing.T) {
	home, _ := v2Home(t)
	got, warns := list(t, newEnv(home, nil, noProcs()))
	if len(warns) > 0 {
		t.Errorf("warnings: %q", warns)
	}
	views := map[string]v2View{}
	for id, s := range got {
		views[id] = viewOf(s)
	}
	fe := "/home/dev/frontend"
	want := map[string]v2View{
		v2Done: {Status: "stopped", Title: "Add a README", Prompt: "Add a README to this repo", Cwd: fe, Model: "fake/m1", Version: "2.0.25",
			Tokens: discover.Tokens{Input: 1200, Output: 400, CacheRead: 5000, CacheWrite: 200}, Cost: 0.0123, Reasoning: int64(60)},
		v2Migrated: {Status: "stopped", Title: "Components overview", Prompt: "Migrated prompt: list the components", Cwd: fe, Model: "fake/m1", Version: "2.0.25",
			Tokens: discover.Tokens{Input: 250, Output: 35, CacheRead: 900}, Cost: 0.0092},
		v2Archived: {Status: "stopped", Title: "Archived work", Prompt: "Archived prompt", Cwd: "/home/dev", Model: "fake/m1", Version: "2.0.25",
			Tokens: discover.Tokens{Input: 40, Output: 8}, Cost: 0.002, Archived: "2026-11-20T10:20:00Z"},
		v2Failed: {Status: "failed", Blocked: "auth", Prompt: "This will fail", Cwd: fe, Model: "fake/m1", Version: "2.0.25"},
		// No process: a turn left open by nobody is a crash (§4.3).
		v2Open: {Status: "failed", Prompt: "Refactor the router", Cwd: fe, Model: "fake/m1", Version: "2.0.25"},
		v2Interrupt: {Status: "stopped", Title: "Stopped early", Prompt: "Long task", Cwd: fe, Model: "fake/m1", Version: "2.0.25",
			Tokens: discover.Tokens{Input: 10, Output: 2}, Cost: 0.0005},
		v1Only: {Status: "stopped", Title: "Only in 1.x", Prompt: "A 1.x prompt", Cwd: "/home/dev", Model: "fake/fake-model", Version: "1.18.33",
			Tokens: discover.Tokens{Input: 20, Output: 5}, Cost: 0.001},
	}
	if d := cmp.Diff(want, views); d != "" {
		t.Errorf("listing (-want +got):\n%s", d)
	}
	// Why: the session row's idle state (time_idle, idle_outcome).
	for id, wantDetail := range map[string]string{v2Done: "idle (succeeded)", v2Interrupt: "idle (interrupted)",
		v2Failed: "error: provider.auth: stub error 401 (scripted)", v2Open: "assistant message open"} {
		if d := got[id].EvidenceDetail; !strings.Contains(d, wantDetail) {
			t.Errorf("%s: evidence detail %q, want it to say %q", id, d, wantDetail)
		}
	}
}

// TestV2OneSessionLookup: Find by id or prefix returns the session exactly as
// Discover lists it, and reads no other session's rows: with every other
// session's messages made unreadable JSON and their token columns impossible,
// the lookup is unchanged and warns of nothing.
func TestV2OneSessionLookup(t *testing.T) {
	home, dbPath := v2Home(t)
	env := newEnv(home, nil, noProcs())
	all, _ := list(t, env)
	w := writer(t, dbPath)
	mustExec(t, w, `UPDATE session_message SET data = 'not json {' WHERE session_id <> ?`, v2Done)
	mustExec(t, w, `UPDATE message SET data = 'not json {' WHERE session_id <> ?`, v2Done)
	mustExec(t, w, `UPDATE session_v2 SET tokens_input = -5 WHERE id <> ?`, v2Done)
	mustExec(t, w, `UPDATE session SET tokens_input = -5 WHERE id <> ?`, v2Done)
	w.Close()
	for _, q := range []discover.Query{{IDs: []string{v2Done}}, {Prefix: v2Done[:16]}} {
		var warns []string
		got, err := testAdapter().Find(context.Background(), env.WithWarn(func(s string) { warns = append(warns, s) }), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("Find(%+v) = %d sessions", q, len(got))
		}
		if d := cmp.Diff(all[v2Done], got[0]); d != "" {
			t.Errorf("Find(%+v) differs from Discover (-want +got):\n%s", q, d)
		}
		if len(warns) > 0 {
			t.Errorf("Find(%+v) read other sessions: %q", q, warns)
		}
	}
	// The same damage is seen by a whole listing: the test would catch a
	// lookup that read everything.
	var warns []string
	if _, err := testAdapter().Discover(context.Background(), env.WithWarn(func(s string) { warns = append(warns, s) })); err != nil {
		t.Fatal(err)
	}
	if len(warns) == 0 {
		t.Error("the damaged sessions gave the full listing no warning: the lookup test proves nothing")
	}
}

// TestV2Running: an OpenCode 2 session whose turn is open, with an opencode
// process started just before its prompt in its directory, is running.
func TestV2Running(t *testing.T) {
	home, _ := v2Home(t)
	got, _ := list(t, newEnv(home, nil, table(ocRun(500, "/home/dev/frontend", 1795211899000))))
	if s := got[v2Open]; s.Status != discover.StatusRunning {
		t.Errorf("%s: status %q (%s), want running", v2Open, s.Status, s.EvidenceDetail)
	}
	if s := got[v2Done]; s.Status != "stopped" {
		t.Errorf("%s: status %q, want stopped (its session went idle)", v2Done, s.Status)
	}
}

// TestV2Peek: peek reads session_message (the v2 row winning over the 1.x copy).
func TestV2Peek(t *testing.T) {
	home, _ := v2Home(t)
	env := newEnv(home, nil, noProcs())
	got, _ := list(t, env)
	type item struct{ Kind, Text, Tools string }
	render := func(ms []discover.Message) []item {
		var out []item
		for _, m := range ms {
			var tools []string
			for _, tc := range m.Tools {
				tools = append(tools, tc.Name+" "+tc.Summary+" -> "+tc.Result)
			}
			out = append(out, item{m.Kind, m.Text, strings.Join(tools, "; ")})
		}
		return out
	}
	cases := map[string][]item{
		v2Done: {{"user", "Add a README to this repo", ""}, {"assistant", "", "shell ls -> src"}, {"assistant", "README.md added.", ""}},
		v2Migrated: {{"user", "Migrated prompt: list the components", ""}, {"assistant", "Button, Card, Modal.", ""},
			{"user", "Now in 2.x: describe Modal", ""}, {"assistant", "Modal is a dialog.", ""}},
		v2Failed:    {{"user", "This will fail", ""}, {"error", "provider.auth: stub error 401 (scripted)", ""}, {"error", "failed: provider.auth: stub error 401 (scripted)", ""}},
		v2Interrupt: {{"user", "Long task", ""}, {"assistant", "Start", ""}, {"error", "aborted: Session execution interrupted", ""}, {"error", "interrupted", ""}},
	}
	for id, want := range cases {
		if d := cmp.Diff(want, render(peek(t, env, got[id], 0))); d != "" {
			t.Errorf("peek %s (-want +got):\n%s", id, d)
		}
	}
	if d := cmp.Diff([]item{{"assistant", "README.md added.", ""}}, render(peek(t, env, got[v2Done], 1))); d != "" {
		t.Errorf("peek -n 1 (-want +got):\n%s", d)
	}
}

// TestV2MalformedValues: values of the wrong type or shape in OpenCode 2's rows
// never break the listing: every session is still listed, once.
func TestV2MalformedValues(t *testing.T) {
	damage := map[string]string{
		"data not JSON":         `UPDATE session_message SET data = 'not json {'`,
		"data a JSON array":     `UPDATE session_message SET data = '[1,2]'`,
		"tokens a string":       `UPDATE session_message SET data = json_set(data, '$.tokens', 'many') WHERE type = 'assistant'`,
		"outcome a number":      `UPDATE session_message SET data = json_set(data, '$.outcome', 7) WHERE type = 'idle'`,
		"error a string":        `UPDATE session_message SET data = json_set(data, '$.error', 'boom') WHERE type = 'assistant'`,
		"unknown type":          `UPDATE session_message SET type = 'hologram'`,
		"model not JSON":        `UPDATE session_v2 SET model = '{{'`,
		"idle_outcome unknown":  `UPDATE session_v2 SET idle_outcome = 'exploded'`,
		"time_idle text":        `UPDATE session_v2 SET time_idle = 'yesterday'`,
		"tokens column text":    `UPDATE session_v2 SET tokens_output = 'lots'`,
		"cost column text":      `UPDATE session_v2 SET cost = 'free'`,
		"user text an object":   `UPDATE session_message SET data = json_set(data, '$.text', json('{"a":1}')) WHERE type = 'user'`,
		"content not an array":  `UPDATE session_message SET data = json_set(data, '$.content', 3) WHERE type = 'assistant'`,
		"session title numeric": `UPDATE session_v2 SET title = 42`,
	}
	for name, stmt := range damage {
		t.Run(name, func(t *testing.T) {
			home, dbPath := v2Home(t)
			w := writer(t, dbPath)
			mustExec(t, w, stmt)
			w.Close()
			env := newEnv(home, nil, noProcs())
			got, _ := list(t, env)
			for _, id := range []string{v2Done, v2Migrated, v2Archived, v2Failed, v2Open, v2Interrupt, v1Only} {
				s, ok := got[id]
				if !ok {
					t.Errorf("%s not listed", id)
					continue
				}
				if _, err := testAdapter().Peek(context.Background(), env, s, 0); err != nil && err != discover.ErrNoSession {
					t.Errorf("peek %s: %v", id, err)
				}
			}
			if len(got) != 7 {
				t.Errorf("%d sessions listed, want 7", len(got))
			}
		})
	}
}

// TestV2IdleState: the session row's time_idle/idle_outcome decide a turn the
// transcript leaves open, and a prompt newer than time_idle reopens it.
func TestV2IdleState(t *testing.T) {
	cases := []struct {
		name, id   string
		stmts      []string
		status     string
		detailHas  string
		procsStart int64 // an opencode run in the session's directory started then (0: none)
	}{
		{name: "no idle marker row, the row says interrupted", id: v2Interrupt,
			stmts: []string{`DELETE FROM session_message WHERE session_id = '` + v2Interrupt + `' AND type = 'idle'`,
				`UPDATE session_message SET data = json_remove(data, '$.error', '$.time.completed') WHERE session_id = '` + v2Interrupt + `' AND type = 'assistant'`},
			status: "stopped", detailHas: "idle (interrupted)"},
		{name: "no idle marker row, the row says failed", id: v2Failed,
			stmts:  []string{`DELETE FROM session_message WHERE session_id = '` + v2Failed + `' AND type <> 'user'`},
			status: "failed", detailHas: "error: provider.auth: stub error 401 (scripted)"},
		{name: "a prompt after time_idle, a process started for it", id: v2Done,
			stmts:  []string{`INSERT INTO session_message VALUES ('msg_f1a0000010006DoneUser0002', '` + v2Done + `', 'user', 6, 1795211950000, 1795211950000, '{"time":{"created":1795211950000},"text":"One more thing","files":[],"agents":[],"skills":[]}')`},
			status: "running", detailHas: "user message with no reply yet", procsStart: 1795211949500},
		{name: "a model switch after time_idle does not reopen the turn", id: v2Done,
			stmts:  []string{`INSERT INTO session_message VALUES ('msg_f1a0000010006DoneModel002', '` + v2Done + `', 'model-switched', 6, 1795211950000, 1795211950000, '{"time":{"created":1795211950000},"model":{"id":"m2","providerID":"fake"}}')`},
			status: "stopped", detailHas: "idle (succeeded)", procsStart: 1795211949500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home, dbPath := v2Home(t)
			w := writer(t, dbPath)
			for _, s := range c.stmts {
				mustExec(t, w, s)
			}
			w.Close()
			procs := noProcs()
			if c.procsStart != 0 {
				procs = table(ocRun(500, "/home/dev/frontend", c.procsStart))
			}
			got, _ := list(t, newEnv(home, nil, procs))
			s := got[c.id]
			if s.Status != c.status || !strings.Contains(s.EvidenceDetail, c.detailHas) {
				t.Errorf("%s: %s (%s), want %s (%s)", c.id, s.Status, s.EvidenceDetail, c.status, c.detailHas)
			}
		})
	}
}

// TestV2UsageSlots: usage's time slots come from OpenCode 2's assistant rows
// (reasoning counted as output) and add up to the session's stored totals; the
// migrated session's 1.x copy adds nothing.
func TestV2UsageSlots(t *testing.T) {
	home, _ := v2Home(t)
	env := newEnv(home, nil, noProcs())
	env.Slots = true
	got, _ := list(t, env)
	want := map[string]discover.Slots{
		v2Done: {{At: 1795199400, Tokens: discover.Tokens{Input: 1200, Output: 400, CacheRead: 5000, CacheWrite: 200}}},
		v2Migrated: {{At: 1795149900, Tokens: discover.Tokens{Input: 100, Output: 10, CacheRead: 300}},
			{At: 1795200300, Tokens: discover.Tokens{Input: 150, Output: 25, CacheRead: 600}}},
	}
	for id, w := range want {
		if d := cmp.Diff(w, got[id].Slots); d != "" {
			t.Errorf("%s slots (-want +got):\n%s", id, d)
		}
		if d := cmp.Diff(*got[id].Tokens, got[id].Slots.Sum()); d != "" {
			t.Errorf("%s: slots do not add up to the session's tokens (-tokens +slots):\n%s", id, d)
		}
	}
}

// TestV2ExecutionClaim: OpenCode 2's background service hosts every directory,
// so an open turn with only the service alive cannot be tied to it — unless
// the session's execution is claimed (session_v2.time_suspended): then it runs.
func TestV2ExecutionClaim(t *testing.T) {
	service := fakeProc{pid: 800, ppid: 1, comm: "opencode", argv: []string{"opencode", "serve", "--service"}, cwd: "/", env: []string{"PWD=/"}, startMS: 1795211000000}
	for _, c := range []struct {
		name    string
		claimed bool
		procs   *proc.Fake
		status  string
	}{
		{"claimed, service alive", true, table(service), "running"},
		{"not claimed, service alive", false, table(service), "unknown"},
		{"claimed, nothing alive", true, noProcs(), "failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, dbPath := v2Home(t)
			if c.claimed {
				w := writer(t, dbPath)
				mustExec(t, w, `UPDATE session_v2 SET time_suspended = 1795211900200 WHERE id = ?`, v2Open)
				w.Close()
			}
			got, _ := list(t, newEnv(home, nil, c.procs))
			s := got[v2Open]
			if s.Status != c.status {
				t.Errorf("%s (%s), want %s", s.Status, s.EvidenceDetail, c.status)
			}
			if c.status == "running" && (s.PID != 800 || !strings.Contains(s.EvidenceDetail, "execution claimed at 2026-11-20T21:58:20Z")) {
				t.Errorf("pid %d, detail %q", s.PID, s.EvidenceDetail)
			}
		})
	}
}

// TestV2TotalsFromMessages: a session_v2 row whose totals are all zero while
// its assistant rows carry usage (totals are persisted per completed step; the
// earliest 2.x builds did not persist them) gets the sum of those rows; a
// session with no usage anywhere keeps its zeros.
func TestV2TotalsFromMessages(t *testing.T) {
	home, dbPath := v2Home(t)
	w := writer(t, dbPath)
	mustExec(t, w, `UPDATE session_v2 SET cost = 0, tokens_input = 0, tokens_output = 0, tokens_reasoning = 0, tokens_cache_read = 0, tokens_cache_write = 0 WHERE id = ?`, v2Done)
	w.Close()
	got, _ := list(t, newEnv(home, nil, noProcs()))
	want := map[string]v2View{
		v2Done:   {Tokens: discover.Tokens{Input: 1200, Output: 400, CacheRead: 5000, CacheWrite: 200}, Cost: 0.0123},
		v2Failed: {},
	}
	for id, w := range want {
		g := viewOf(got[id])
		if d := cmp.Diff(w, v2View{Tokens: g.Tokens, Cost: g.Cost}, cmpopts.EquateApprox(0, 1e-12)); d != "" {
			t.Errorf("%s (-want +got):\n%s", id, d)
		}
	}
	if got[v2Failed].Tokens == nil {
		t.Errorf("%s: tokens nil, want zeros (the store says 0)", v2Failed)
	}
}
