package synth

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite"
)

// codexThreadsSchema is state_5.sqlite's threads table as Codex 0.169 creates it
// (copied from the recorded fixture with sqlite3 .schema), with the two indexes
// list-style queries use.
const codexThreadsSchema = `
CREATE TABLE threads (
    id TEXT PRIMARY KEY,
    rollout_path TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    source TEXT NOT NULL,
    model_provider TEXT NOT NULL,
    cwd TEXT NOT NULL,
    title TEXT NOT NULL,
    sandbox_policy TEXT NOT NULL,
    approval_mode TEXT NOT NULL,
    tokens_used INTEGER NOT NULL DEFAULT 0,
    has_user_event INTEGER NOT NULL DEFAULT 0,
    archived INTEGER NOT NULL DEFAULT 0,
    archived_at INTEGER,
    git_sha TEXT,
    git_branch TEXT,
    git_origin_url TEXT
, cli_version TEXT NOT NULL DEFAULT '', first_user_message TEXT NOT NULL DEFAULT '', agent_nickname TEXT, agent_role TEXT, memory_mode TEXT NOT NULL DEFAULT 'enabled', model TEXT, reasoning_effort TEXT, agent_path TEXT, created_at_ms INTEGER, updated_at_ms INTEGER, thread_source TEXT, preview TEXT NOT NULL DEFAULT '', recency_at INTEGER NOT NULL DEFAULT 0, recency_at_ms INTEGER NOT NULL DEFAULT 0, history_mode TEXT NOT NULL DEFAULT 'legacy', name TEXT, is_pinned INTEGER NOT NULL DEFAULT 0, thread_section_id TEXT, section_position INTEGER, section_entered_at_ms INTEGER, project_id TEXT, originator TEXT, daybreak_enabled BOOLEAN, creator_user_id TEXT, creator_account_id TEXT, attached_thread_parent_id TEXT);
CREATE INDEX idx_threads_updated_at_ms ON threads(updated_at_ms DESC, id DESC);
CREATE INDEX idx_threads_archived ON threads(archived);
CREATE TABLE thread_spawn_edges (
    parent_thread_id TEXT NOT NULL,
    child_thread_id TEXT NOT NULL PRIMARY KEY,
    status TEXT NOT NULL
);
`

// WriteCodexHome writes n synthetic Codex threads under root/.codex (root is a
// HOME; the default CODEX_HOME is root/.codex) in the shape codex-cli 0.169 writes
// them (docs/agents/codex.md §1–2): rollouts under sessions/YYYY/MM/DD/ with a ~20 KB
// session_meta line, one to four turns each (task_started, injected context,
// turn_context, the prompt as response_item and item_completed, tool calls with
// outputs, AgentMessage plus its response_item duplicate, token_usage_record,
// cumulative token_count, task_complete), and a WAL-mode state_5.sqlite whose
// threads table indexes them.
//
// Mix: about 1 in 20 last turns is interrupted (turn_aborted), 1 in 20 was killed
// (no terminal record; its stale lock file stays in thread-writer-locks/), 1 in 100
// threads is a TUI thread missing from the DB, 1 in 200 has an empty DB title, and
// 1 in 250 holds a 2–4 MB tool output. Threads spread over the 6 days before the
// current hour (so they fall in list's default window); date folders use UTC as
// the writer's local time. The same seed writes the same content.
func WriteCodexHome(root string, n int, seed int64) error {
	home := filepath.Join(root, ".codex")
	if err := os.MkdirAll(filepath.Join(home, "thread-writer-locks"), 0o755); err != nil {
		return err
	}
	g := &codexGen{r: rand.New(rand.NewSource(seed)), home: home}
	g.instructions = g.text(20 << 10)
	g.developer = "<permissions instructions>\n" + g.text(3<<10) + "\n</permissions instructions>"
	anchor := time.Now().UTC().Truncate(time.Hour)

	dbPath := filepath.Join(home, "state_5.sqlite")
	os.Remove(dbPath)
	db, err := sql.Open("sqlite", "file:"+url.PathEscape(dbPath)+"?_pragma=journal_mode(WAL)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(codexThreadsSchema); err != nil {
		return fmt.Errorf("synth: codex schema: %w", err)
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	ins, err := tx.Prepare(`INSERT INTO threads (id, rollout_path, created_at, updated_at, source, model_provider, cwd, title,
		sandbox_policy, approval_mode, tokens_used, archived, git_sha, git_branch, git_origin_url, cli_version, first_user_message,
		model, created_at_ms, updated_at_ms, thread_source, preview, recency_at, recency_at_ms, history_mode, originator)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,0,?,?,?,?,?,?,?,?,'user',?,?,?,'paginated',?)`)
	if err != nil {
		tx.Rollback()
		return err
	}
	for i := 0; i < n; i++ {
		start := anchor.Add(-time.Duration(g.r.Int63n(int64(6 * 24 * time.Hour))))
		th, err := g.thread(i, start)
		if err != nil {
			tx.Rollback()
			return err
		}
		if th.tui {
			continue // recorded under another CODEX_HOME: rollout only
		}
		title, first := th.prompt, th.prompt
		if i%200 == 11 {
			title, first = "", "" // the process died before the title was written
		}
		var gitSHA, gitBranch, gitURL any
		if th.git {
			gitSHA, gitBranch, gitURL = "91706982a381994ece9b5a3f35fd96f9d4d06fb8", "main", "https://example.invalid/"+filepath.Base(th.cwd)+".git"
		}
		created, updated := th.created.UnixMilli(), th.updated.UnixMilli()
		if _, err := ins.Exec(th.id, th.path, created/1000, updated/1000, "exec", "openai", th.cwd, title,
			`{"type":"workspace-write"}`, "never", th.tokens, gitSHA, gitBranch, gitURL, "0.169.0", first,
			th.model, created, updated, first, updated/1000, updated, "codex_exec"); err != nil {
			tx.Rollback()
			return err
		}
	}
	ins.Close()
	return tx.Commit()
}

type codexGen struct {
	r            *rand.Rand
	home         string
	instructions string
	developer    string
}

var codexWords = strings.Fields(`the a fix add remove refactor test build cache layer handler request response
config server client module package error retry timeout parse render index query migrate schema rollout`)

func (g *codexGen) text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(codexWords[g.r.Intn(len(codexWords))])
		if g.r.Intn(12) == 0 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func (g *codexGen) words(k int) string {
	w := make([]string, k)
	for i := range w {
		w[i] = codexWords[g.r.Intn(len(codexWords))]
	}
	return strings.Join(w, " ")
}

func (g *codexGen) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.r.Intn(16)]
	}
	return string(b)
}

// uuid7 is a UUIDv7 for a time: 48 bits of Unix ms, version 7, variant 10.
func (g *codexGen) uuid7(t time.Time) string {
	ms := fmt.Sprintf("%012x", t.UnixMilli())
	return ms[:8] + "-" + ms[8:] + "-7" + g.hex(3) + "-" + string("89ab"[g.r.Intn(4)]) + g.hex(3) + "-" + g.hex(12)
}

type codexThread struct {
	id, path, cwd, model, prompt string
	created, updated             time.Time
	tokens                       int64
	tui, git                     bool
}

// codexLog writes rollout lines with increasing timestamps and ordinals.
type codexLog struct {
	w       *bufio.Writer
	t       time.Time
	ordinal int
	err     error
}

func (l *codexLog) ts() string { return l.t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (l *codexLog) line(typ string, payload map[string]any) {
	// Codex (serde, internally tagged) writes the payload's "type" first, and
	// readers rely on that order to classify lines cheaply; encoding/json sorts map
	// keys, so the tag is put in front by hand.
	var body []byte
	var err error
	if t, ok := payload["type"].(string); ok {
		rest := make(map[string]any, len(payload))
		for k, v := range payload {
			if k != "type" {
				rest[k] = v
			}
		}
		var b []byte
		if b, err = json.Marshal(rest); err == nil {
			sep := ","
			if len(rest) == 0 {
				sep = ""
			}
			body = append([]byte(`{"type":`+strconv.Quote(t)+sep), b[1:]...)
		}
	} else {
		body, err = json.Marshal(payload)
	}
	if err != nil && l.err == nil {
		l.err = err
	}
	fmt.Fprintf(l.w, `{"timestamp":%q,"ordinal":%d,"type":%q,"payload":%s}`+"\n", l.ts(), l.ordinal, typ, body)
	l.ordinal++
}

func (l *codexLog) tick(g *codexGen, max time.Duration) {
	l.t = l.t.Add(time.Millisecond + time.Duration(g.r.Int63n(int64(max))))
}

func (g *codexGen) thread(i int, start time.Time) (codexThread, error) {
	th := codexThread{
		id:      g.uuid7(start),
		cwd:     fmt.Sprintf("/home/bench/project-%02d", g.r.Intn(40)),
		model:   []string{"gpt-6.1-codex", "gpt-6.1", "gpt-5.5-codex-mini"}[g.r.Intn(3)],
		created: start,
		tui:     i%100 == 42,
	}
	th.git = !th.tui && g.r.Intn(5) != 0
	dir := filepath.Join(g.home, "sessions", start.Format("2006"), start.Format("01"), start.Format("02"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return th, err
	}
	th.path = filepath.Join(dir, "rollout-"+start.Format("2006-01-02T15-04-05")+"-"+th.id+".jsonl")
	f, err := os.Create(th.path)
	if err != nil {
		return th, err
	}
	l := &codexLog{w: bufio.NewWriterSize(f, 64<<10), t: start}
	originator, source := "codex_exec", "exec"
	if th.tui {
		originator, source = "codex-tui", "vscode"
	}
	meta := map[string]any{
		"session_id": th.id, "id": th.id, "timestamp": l.ts(), "cwd": th.cwd, "originator": originator,
		"cli_version": "0.169.0", "source": source, "thread_source": "user", "model_provider": "openai",
		"history_mode": "paginated", "base_instructions": map[string]any{"text": g.instructions},
	}
	if th.git {
		meta["git"] = map[string]any{"commit_hash": "91706982a381994ece9b5a3f35fd96f9d4d06fb8", "branch": "main", "repository_url": "https://example.invalid/" + filepath.Base(th.cwd) + ".git"}
	}
	l.line("session_meta", meta)

	turns := 1 + g.r.Intn(4)
	var in, cached, out, reasoning int64
	killed := false
	for turn := 0; turn < turns; turn++ {
		last := turn == turns-1
		if turn > 0 {
			l.t = l.t.Add(time.Duration(g.r.Int63n(int64(2 * time.Hour))))
		}
		turnID := g.uuid7(l.t)
		l.line("event_msg", map[string]any{"type": "task_started", "turn_id": turnID, "started_at": l.t.Unix(), "model_context_window": 272000})
		if turn == 0 {
			l.tick(g, 20*time.Millisecond)
			l.line("response_item", map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": g.developer}}})
			l.line("response_item", map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text",
				"text": "<environment_context>\n  <cwd>" + th.cwd + "</cwd>\n  <shell>bash</shell>\n</environment_context>"}}})
			l.line("world_state", map[string]any{"full": true, "state": map[string]any{"notes": g.text(3 << 10)}})
		}
		l.line("turn_context", map[string]any{"turn_id": turnID, "cwd": th.cwd, "approval_policy": "never", "model": th.model,
			"sandbox_policy": map[string]any{"type": "workspace-write"}})
		l.line("event_msg", map[string]any{"type": "thread_settings_applied", "thread_id": th.id,
			"thread_settings": map[string]any{"model": th.model, "model_provider_id": "openai", "cwd": th.cwd}})
		words := g.words(4 + g.r.Intn(12))
		prompt := strings.ToUpper(words[:1]) + words[1:]
		if turn == 0 {
			th.prompt = prompt
		}
		l.tick(g, 10*time.Millisecond)
		l.line("response_item", map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": prompt}}})
		l.line("event_msg", map[string]any{"type": "item_completed", "thread_id": th.id, "turn_id": turnID,
			"item": map[string]any{"type": "UserMessage", "id": g.uuid7(l.t), "content": []any{map[string]any{"type": "text", "text": prompt, "text_elements": []any{}}}}})
		outcome := "done"
		if last {
			switch g.r.Intn(20) {
			case 0:
				outcome = "interrupted"
			case 1:
				outcome = "killed"
			}
		}
		calls := g.r.Intn(4)
		for c := 0; c < calls; c++ {
			callID := "call_" + g.hex(24)
			l.tick(g, 3*time.Second)
			l.line("response_item", map[string]any{"type": "function_call", "name": "exec_command", "call_id": callID,
				"arguments": fmt.Sprintf(`{"cmd":"rg -n %s","workdir":%q}`, codexWords[g.r.Intn(len(codexWords))], th.cwd)})
			size := 200 + g.r.Intn(4000)
			if i%250 == 17 && c == 0 {
				size = 2<<20 + g.r.Intn(2<<20)
			}
			l.tick(g, 2*time.Second)
			l.line("response_item", map[string]any{"type": "function_call_output", "call_id": callID,
				"output": fmt.Sprintf("Chunk ID: %s\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\n%s", g.hex(6), g.text(size))})
			in += 1500 + int64(g.r.Intn(4000))
			cached += 1000
			out += 100
			l.line("event_msg", map[string]any{"type": "token_count", "info": map[string]any{"total_token_usage": codexUsage(in, cached, out, reasoning)}})
		}
		if outcome == "killed" {
			killed = true
			break // SIGTERM/SIGKILL: no terminal record
		}
		if outcome == "interrupted" {
			l.tick(g, 5*time.Second)
			l.line("response_item", map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text",
				"text": "<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>"}}})
			l.line("event_msg", map[string]any{"type": "turn_aborted", "turn_id": turnID, "reason": "interrupted", "duration_ms": 3000})
			break
		}
		reply := g.text(100 + g.r.Intn(1500))
		l.tick(g, 20*time.Second)
		msgID := "msg_" + g.hex(12)
		l.line("event_msg", map[string]any{"type": "item_completed", "thread_id": th.id, "turn_id": turnID,
			"item": map[string]any{"type": "AgentMessage", "id": msgID, "content": []any{map[string]any{"type": "Text", "text": reply}}}})
		l.line("response_item", map[string]any{"type": "message", "role": "assistant", "id": msgID, "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": reply, "annotations": []any{}}}})
		in += 2000 + int64(g.r.Intn(6000))
		cached += 1500
		d := 50 + int64(g.r.Intn(900))
		out += d
		reasoning += min(int64(g.r.Intn(200)), d) // part of output_tokens, never more
		l.line("token_usage_record", map[string]any{"thread_id": th.id, "turn_id": turnID, "usage": codexUsage(in, cached, out, reasoning)})
		l.line("event_msg", map[string]any{"type": "token_count", "info": map[string]any{"total_token_usage": codexUsage(in, cached, out, reasoning)}})
		l.tick(g, 20*time.Millisecond)
		l.line("event_msg", map[string]any{"type": "task_complete", "turn_id": turnID, "last_agent_message": reply,
			"started_at": start.Unix(), "completed_at": l.t.Unix(), "duration_ms": 1000 + g.r.Intn(60000)})
	}
	th.updated = l.t
	th.tokens = in + out
	if err := l.w.Flush(); err != nil {
		f.Close()
		return th, err
	}
	if l.err != nil {
		f.Close()
		return th, l.err
	}
	if err := f.Close(); err != nil {
		return th, err
	}
	if killed && !th.tui {
		// SIGTERM/SIGKILL leave the (now unlocked) lock file behind.
		if err := os.WriteFile(filepath.Join(g.home, "thread-writer-locks", th.id+".lock"), nil, 0o644); err != nil {
			return th, err
		}
	}
	return th, nil
}

func codexUsage(in, cached, out, reasoning int64) map[string]any {
	return map[string]any{"input_tokens": in, "cached_input_tokens": cached, "cache_write_input_tokens": 0,
		"output_tokens": out, "reasoning_output_tokens": reasoning, "total_tokens": in + out}
}
