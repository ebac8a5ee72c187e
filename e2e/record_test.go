package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "modernc.org/sqlite"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// TestRecordFixtures regenerates recordings of the real CLIs (the `just
// record-fixtures` recipe) when AGENTCTL_RECORD_DIR names the output directory:
//
//	AGENTCTL_RECORD_DIR=testdata/recorded go test ./e2e -run TestRecordFixtures -v
//
// -record only insists on it (a missing variable is then an error, not a skip).
var record = flag.Bool("record", false, "record agent files into $"+recordDirVar+" (required with -record)")

const recordDirVar = "AGENTCTL_RECORD_DIR"

// recording is one agent's recorded sessions: what to copy, plus the facts a
// parser test must extract, computed from what the stub sent.
type recording struct {
	mu       sync.Mutex
	Agent    string        `json:"agent"`
	Version  string        `json:"version,omitempty"`
	Sessions []recordedRun `json:"sessions"`
}

type recordedRun struct {
	Scenario string         `json:"scenario"`
	ID       string         `json:"id"`
	Cwd      string         `json:"cwd"`
	Prompts  []string       `json:"prompts"`
	Model    string         `json:"model,omitempty"`
	Tokens   harness.Tokens `json:"tokens"` // sum of completed stub responses
	Note     string         `json:"note,omitempty"`
}

func (r *recording) add(run recordedRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Sessions = append(r.Sessions, run)
}

// TestRecordFixtures runs every agent through a few scenarios and writes, per
// agent, home/ (its files, paths rewritten to HOME=/home/dev), captures/ (stdout)
// and facts.json (ids, cwd, prompts, model, stub-sent token totals).
func TestRecordFixtures(t *testing.T) {
	out := os.Getenv(recordDirVar)
	switch {
	case out == "" && *record:
		t.Fatalf("-record needs %s=<directory to write recordings into>", recordDirVar)
	case out == "":
		t.Skip("records fixtures only when " + recordDirVar + "=DIR is set")
	}
	harness.Require(t)
	out, _ = filepath.Abs(out)
	for _, v := range claudeVersions {
		t.Run("claude-"+v, func(t *testing.T) { t.Parallel(); recordClaude(t, filepath.Join(out, "claude-"+v), v) })
	}
	t.Run("codex", func(t *testing.T) { t.Parallel(); recordCodex(t, filepath.Join(out, "codex")) })
	t.Run("opencode", func(t *testing.T) { t.Parallel(); recordOpenCode(t, filepath.Join(out, "opencode")) })
	t.Run("pi", func(t *testing.T) { t.Parallel(); recordPi(t, filepath.Join(out, "pi")) })
	t.Run("openclaw", func(t *testing.T) { t.Parallel(); recordOpenClaw(t, filepath.Join(out, "openclaw")) })
}

// finish writes captures, the rewritten home and facts.json into dst.
func finish(t *testing.T, dst string, rw *rewriter, home string, keep func(string) bool, rec *recording, captures map[string]string) {
	t.Helper()
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if err := rw.copyTree(home, filepath.Join(dst, "home"), keep); err != nil {
		t.Fatal(err)
	}
	for name, content := range captures {
		p := filepath.Join(dst, "captures", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(rw.String(content)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dbs, _ := filepath.Glob(filepath.Join(dst, "home", "*", "*.sqlite"))
	more, _ := filepath.Glob(filepath.Join(dst, "home", ".local", "share", "opencode", "*.db"))
	for _, db := range append(dbs, more...) {
		rewriteSQLite(t, db, rw)
	}
	for i := range rec.Sessions {
		s := &rec.Sessions[i]
		s.Cwd = rw.String(s.Cwd)
		for j := range s.Prompts {
			s.Prompts[j] = rw.String(s.Prompts[j])
		}
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	if err := os.WriteFile(filepath.Join(dst, "facts.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d sessions into %s", len(rec.Sessions), dst)
}

// rewriteSQLite rewrites paths inside every text column of a copied database,
// checkpoints its WAL into the main file and compacts it, so the fixture is one
// self-contained file (as the shipped fixtures are).
func rewriteSQLite(t *testing.T, path string, rw *rewriter) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	for _, tb := range tables {
		cols, err := db.Query(fmt.Sprintf(`SELECT name FROM pragma_table_info('%s')`, tb))
		if err != nil {
			continue
		}
		var names []string
		for cols.Next() {
			var n string
			cols.Scan(&n)
			names = append(names, n)
		}
		cols.Close()
		for _, c := range names {
			for i := 0; i+1 < len(rw.pairs); i += 2 {
				q := fmt.Sprintf(`UPDATE "%s" SET "%s" = replace("%s", ?, ?) WHERE typeof("%s") = 'text' AND instr("%s", ?) > 0`, tb, c, c, c, c)
				if _, err := db.Exec(q, rw.pairs[i], rw.pairs[i+1], rw.pairs[i]); err != nil {
					t.Logf("%s: rewrite %s.%s: %v (left as recorded)", filepath.Base(path), tb, c, err)
					break
				}
			}
		}
	}
	for _, q := range []string{`PRAGMA wal_checkpoint(TRUNCATE)`, `VACUUM`} {
		if _, err := db.Exec(q); err != nil {
			t.Logf("%s: %s: %v", filepath.Base(path), q, err)
		}
	}
	db.Close()
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
}

func prefixKeep(prefixes ...string) func(string) bool {
	return func(rel string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(rel, p) {
				return true
			}
		}
		return false
	}
}

func recordClaude(t *testing.T, dst, version string) {
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, version, srv)
	rec := &recording{Agent: "claude-code", Version: version}
	caps := map[string]string{}
	webapp := harness.ProjectDir(t, c.Home, "webapp")

	m := markNow(srv)
	id, p := c.Run(t, webapp, "say hi")
	first := since(srv, m)
	caps["print.stream-json.jsonl"] = p.Stdout()
	m = markNow(srv)
	_, p = c.Run(t, webapp, "again", "--resume", id)
	resumed := since(srv, m)
	caps["resume.stream-json.jsonl"] = p.Stdout()
	rec.add(recordedRun{Scenario: "print, then resumed (appends)", ID: id, Cwd: webapp, Prompts: []string{"say hi", "again"},
		Model: lastModel(first, resumed), Tokens: tokens(sent(first, resumed))})

	fork := uuid.NewString()
	m = markNow(srv)
	_, p = c.Run(t, webapp, "forked", "--resume", id, "--fork-session", "--session-id", fork)
	forked := since(srv, m)
	caps["fork.stream-json.jsonl"] = p.Stdout()
	rec.add(recordedRun{Scenario: "fork of the first session (copies its turns)", ID: fork, Cwd: webapp,
		Prompts: []string{"say hi", "again", "forked"}, Model: lastModel(forked), Tokens: tokens(sent(first, resumed, forked)),
		Note: "tokens include the copied parent turns; dedupe across files by (message.id, requestId)"})

	api := harness.ProjectDir(t, c.Home, "api-server")
	m = markNow(srv)
	id, p = c.Run(t, api, "THINK TOOLTEST please run it", "--allowedTools", "Bash")
	tool := since(srv, m)
	caps["tooluse.stream-json.jsonl"] = p.Stdout()
	rec.add(recordedRun{Scenario: "tool turn: thinking+text+tool_use in one message (3 lines, one usage)", ID: id, Cwd: api,
		Prompts: []string{"THINK TOOLTEST please run it"}, Model: lastModel(tool), Tokens: tokens(sent(tool))})

	busy := harness.ProjectDir(t, c.Home, "busy")
	id = uuid.NewString()
	m = markNow(srv)
	p = c.Print(t, busy, "slow HOLD=busy", "--session-id", id)
	waitHeld(t, srv, "busy")
	reg := c.Registry(p.PID)
	harness.Eventually(t, 10*time.Second, func() string {
		if !exists(reg) {
			return "no registry " + reg
		}
		return ""
	})
	b, _ := os.ReadFile(reg)
	caps["registry-while-busy.json"] = string(b)
	srv.Release("busy")
	p.Wait(t, 30*time.Second)
	rec.add(recordedRun{Scenario: "reply held by the stub; captures/registry-while-busy.json copied meanwhile", ID: id, Cwd: busy,
		Prompts: []string{"slow HOLD=busy"}, Model: lastModel(since(srv, m)), Tokens: tokens(sent(since(srv, m)))})

	scratch := harness.ProjectDir(t, c.Home, "scratch")
	id = uuid.NewString()
	p = c.Print(t, scratch, "sig test HOLD=kill", "--session-id", id)
	waitHeld(t, srv, "kill")
	harness.Eventually(t, 15*time.Second, func() string {
		if b, _ := os.ReadFile(c.Transcript(scratch, id)); !strings.Contains(string(b), "HOLD=kill") || !exists(c.Registry(p.PID)) {
			return "prompt and registry not on disk yet"
		}
		return ""
	})
	p.Signal(syscall.SIGKILL)
	p.Wait(t, 10*time.Second)
	caps["sigkill.stream-json.jsonl"] = p.Stdout()
	rec.add(recordedRun{Scenario: "SIGKILL while the reply was pending: stale sessions/<pid>.json", ID: id, Cwd: scratch,
		Prompts: []string{"sig test HOLD=kill"}, Note: fmt.Sprintf("registry file sessions/%d.json names a dead pid", p.PID)})

	finish(t, dst, newRewriter(c.Home, c.Env["TMPDIR"]), c.Home, prefixKeep(".claude/projects/", ".claude/sessions/"), rec, caps)
}

func recordCodex(t *testing.T, dst string) {
	srv := stub.Start(t, nil)
	c := harness.NewCodex(t, srv)
	rec := &recording{Agent: "codex", Version: c.Version}
	caps := map[string]string{}
	dir := harness.ProjectDir(t, c.Home, "billing")
	run := func(p *harness.Proc, name string) {
		if code := p.Wait(t, 60*time.Second); code != 0 {
			t.Fatalf("codex %s exited %d\n%s", name, code, harness.Tail(p.Stderr(), 20))
		}
		caps[name+".stdout.jsonl"] = p.Stdout()
	}
	m := markNow(srv)
	p := c.Exec(t, dir, "Say hello")
	run(p, "exec")
	id := harness.CodexThreadID(p.Stdout())
	run(c.Resume(t, dir, id, "Follow-up question"), "resume")
	rec.add(recordedRun{Scenario: "exec, then resumed with the full id (appends)", ID: id, Cwd: dir,
		Prompts: []string{"Say hello", "Follow-up question"}, Model: lastModel(since(srv, m)), Tokens: tokens(sent(since(srv, m))),
		Note: "input includes cached tokens on the wire; tokens.input here excludes them"})
	m = markNow(srv)
	p = c.Exec(t, dir, "TOOLCMD: echo codex-tool")
	run(p, "tooluse")
	rec.add(recordedRun{Scenario: "tool turn (exec_command)", ID: harness.CodexThreadID(p.Stdout()), Cwd: dir,
		Prompts: []string{"TOOLCMD: echo codex-tool"}, Model: lastModel(since(srv, m)), Tokens: tokens(sent(since(srv, m)))})
	finish(t, dst, newRewriter(c.Home, c.Env["TMPDIR"]), c.Home, func(rel string) bool {
		return strings.HasPrefix(rel, ".codex/sessions/") || rel == ".codex/config.toml" ||
			strings.HasPrefix(rel, ".codex/state_") || strings.HasPrefix(rel, ".codex/thread_history_")
	}, rec, caps)
}

func recordOpenCode(t *testing.T, dst string) {
	srv := stub.Start(t, nil)
	oc := harness.NewOpenCode(t, srv)
	rec := &recording{Agent: "opencode", Version: "1.18.33"}
	caps := map[string]string{}
	dir := harness.ProjectDir(t, oc.Home, "frontend")
	m := markNow(srv)
	p := oc.Run(t, dir, "Say hello")
	if code := p.Wait(t, 60*time.Second); code != 0 {
		t.Fatalf("opencode exited %d\n%s", code, harness.Tail(p.Stderr(), 20))
	}
	caps["run.stdout.jsonl"] = p.Stdout()
	id := harness.OpenCodeSessionID(p.Stdout())
	p = oc.Run(t, dir, "follow-up", "--session", id)
	p.Wait(t, 60*time.Second)
	caps["resume.stdout.jsonl"] = p.Stdout()
	turns := func(e stub.Exchange) bool { return e.Completed && len(e.Request.Tools) > 0 }
	var turnEx []stub.Exchange
	for _, e := range since(srv, m) {
		if turns(e) {
			turnEx = append(turnEx, e)
		}
	}
	rec.add(recordedRun{Scenario: "run (untitled: a title request too), then --session resume", ID: id, Cwd: dir,
		Prompts: []string{"Say hello", "follow-up"}, Model: "fake/fake-model", Tokens: tokens(sent(turnEx)),
		Note: "prompts came on stdin (stored verbatim); tokens count turn requests only, not title generation"})
	finish(t, dst, newRewriter(oc.Home, oc.Env["TMPDIR"]), oc.Home,
		prefixKeep(".local/share/opencode/opencode.db", ".config/opencode/"), rec, caps)
}

func recordPi(t *testing.T, dst string) {
	srv := stub.Start(t, nil)
	pi := harness.NewPi(t, srv)
	rec := &recording{Agent: "pi", Version: pi.Version}
	caps := map[string]string{}
	dir := harness.ProjectDir(t, pi.Home, "api-server")
	wait := func(p *harness.Proc, name string) {
		if code := p.Wait(t, 60*time.Second); code != 0 {
			t.Fatalf("pi %s exited %d\n%s", name, code, harness.Tail(p.Stderr(), 20))
		}
		caps[name+".jsonl"] = p.Stdout()
	}
	m := markNow(srv)
	p := pi.Print(t, dir, "hello pi, say something")
	wait(p, "print")
	id := harness.PiSessionID(p.Stdout())
	file := pi.Sessions()[0]
	wait(pi.Print(t, dir, "again", "--session", file), "resume")
	rec.add(recordedRun{Scenario: "print, then resumed by path (appends)", ID: id, Cwd: dir,
		Prompts: []string{"hello pi, say something", "again"}, Model: "fakeoai/fake-model", Tokens: tokens(sent(since(srv, m)))})
	m = markNow(srv)
	p = pi.Print(t, dir, "TOOL please run something")
	wait(p, "tooluse")
	rec.add(recordedRun{Scenario: "tool round trip (bash)", ID: harness.PiSessionID(p.Stdout()), Cwd: dir,
		Prompts: []string{"TOOL please run something"}, Model: "fakeoai/fake-model", Tokens: tokens(sent(since(srv, m)))})
	finish(t, dst, newRewriter(pi.Home, pi.Env["TMPDIR"]), pi.Home, prefixKeep(".pi/agent/"), rec, caps)
}

// recordOpenClaw captures gateway answers (the gateway's own SQLite is private:
// agentctl reads OpenClaw only over the RPC).
func recordOpenClaw(t *testing.T, dst string) {
	srv := stub.Start(t, nil)
	oc := harness.StartOpenClaw(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	g, err := oc.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rec := &recording{Agent: "openclaw", Version: "2026.9.6"}
	caps := map[string]string{}
	const key = "agent:main:probe1"
	m := markNow(srv)
	for i, msg := range []string{"hello gateway", "second turn"} {
		var raw json.RawMessage
		if i == 0 {
			raw, err = g.Call(ctx, "sessions.create", map[string]any{"key": key, "message": msg})
		} else {
			raw, err = g.Call(ctx, "sessions.send", map[string]any{"key": key, "message": msg})
		}
		if err != nil {
			t.Fatal(err)
		}
		caps[fmt.Sprintf("turn%d.ack.json", i+1)] = string(raw)
		var ack struct{ RunID string }
		json.Unmarshal(raw, &ack)
		if _, err := g.Call(ctx, "agent.wait", map[string]any{"runId": ack.RunID, "timeoutMs": 30000}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := g.Call(ctx, "sessions.list", map[string]any{"limit": 100, "offset": 0, "includeLastMessage": true})
	if err != nil {
		t.Fatal(err)
	}
	caps["sessions.list.json"] = string(list)
	hist, err := g.Call(ctx, "chat.history", map[string]any{"sessionKey": key, "limit": 50})
	if err != nil {
		t.Fatal(err)
	}
	caps["chat.history.json"] = string(hist)
	rec.add(recordedRun{Scenario: "sessions.create + sessions.send, two turns", ID: key, Prompts: []string{"hello gateway", "second turn"},
		Model: "fakeoai/fake-model", Tokens: tokens(sent(since(srv, m)))})
	finish(t, dst, newRewriter(oc.Home, oc.Env["TMPDIR"]), oc.Home, func(string) bool { return false }, rec, caps)
}
