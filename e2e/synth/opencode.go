package synth

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the same pure-Go SQLite the adapters read with
)

// openCodeSchema is the schema of a real OpenCode 1.18.33 opencode.db (copied from
// the recorded fixture with sqlite3 .schema; drizzle's backtick quoting became
// SQL's double quotes, which SQLite treats the same).
const openCodeSchema = `
CREATE TABLE "workspace" (
          "id" text PRIMARY KEY,
          "type" text NOT NULL,
          "name" text DEFAULT '' NOT NULL,
          "branch" text,
          "directory" text,
          "extra" text,
          "project_id" text NOT NULL,
          "time_used" integer NOT NULL,
          CONSTRAINT "fk_workspace_project_id_project_id_fk" FOREIGN KEY ("project_id") REFERENCES "project"("id") ON DELETE CASCADE
        );
CREATE TABLE "data_migration" (
          "name" text PRIMARY KEY,
          "time_completed" integer NOT NULL
        );
CREATE TABLE "account_state" (
          "id" integer PRIMARY KEY,
          "active_account_id" text,
          "active_org_id" text,
          CONSTRAINT "fk_account_state_active_account_id_account_id_fk" FOREIGN KEY ("active_account_id") REFERENCES "account"("id") ON DELETE SET NULL
        );
CREATE TABLE "account" (
          "id" text PRIMARY KEY,
          "email" text NOT NULL,
          "url" text NOT NULL,
          "access_token" text NOT NULL,
          "refresh_token" text NOT NULL,
          "token_expiry" integer,
          "time_created" integer NOT NULL,
          "time_updated" integer NOT NULL
        );
CREATE TABLE "control_account" (
          "email" text NOT NULL,
          "url" text NOT NULL,
          "access_token" text NOT NULL,
          "refresh_token" text NOT NULL,
          "token_expiry" integer,
          "active" integer NOT NULL,
          "time_created" integer NOT NULL,
          "time_updated" integer NOT NULL,
          CONSTRAINT "control_account_pk" PRIMARY KEY("email", "url")
        );
CREATE TABLE "credential" (
          "id" text PRIMARY KEY,
          "integration_id" text,
          "label" text NOT NULL,
          "value" text NOT NULL,
          "connector_id" text,
          "method_id" text,
          "active" integer,
          "time_created" integer NOT NULL,
          "time_updated" integer NOT NULL
        );
CREATE TABLE "event_sequence" (
          "aggregate_id" text PRIMARY KEY,
          "seq" integer NOT NULL,
          "owner_id" text
        );
CREATE TABLE "event" (
          "id" text PRIMARY KEY,
          "aggregate_id" text NOT NULL,
          "seq" integer NOT NULL,
          "type" text NOT NULL,
          "data" text NOT NULL,
          CONSTRAINT "fk_event_aggregate_id_event_sequence_aggregate_id_fk" FOREIGN KEY ("aggregate_id") REFERENCES "event_sequence"("aggregate_id") ON DELETE CASCADE
        );
CREATE TABLE "permission" (
          "id" text PRIMARY KEY,
          "project_id" text NOT NULL,
          "action" text NOT NULL,
          "resource" text NOT NULL,
          "time_created" integer NOT NULL,
          "time_updated" integer NOT NULL,
          CONSTRAINT "fk_permission_project_id_project_id_fk" FOREIGN KEY ("project_id") REFERENCES "project"("id") ON DELETE CASCADE
        );
CREATE TABLE "project_directory" (
          "project_id" text NOT NULL,
          "directory" text NOT NULL,
          "type" text,
          "strategy" text,
          "time_created" integer NOT NULL,
          CONSTRAINT "project_directory_pk" PRIMARY KEY("project_id", "directory"),
          CONSTRAINT "fk_project_directory_project_id_project_id_fk" FOREIGN KEY ("project_id") REFERENCES "project"("id") ON DELETE CASCADE
        );
CREATE TABLE "project" (
          "id" text PRIMARY KEY,
          "worktree" text NOT NULL,
          "vcs" text,
          "name" text,
          "icon_url" text,
          "icon_url_override" text,
          "icon_color" text,
          "time_created" integer NOT NULL,
          "time_updated" integer NOT NULL,
          "time_initialized" integer,
          "sandboxes" text NOT NULL,
          "commands" text
        );
CREATE TABLE "message" (
          "id" text PRIMARY KEY,
          "session_id" text NOT NULL,
          "time_created" integer NOT NULL,
          "time_updated" integer NOT NULL,
          "data" text NOT NULL,
          CONSTRAINT "fk_message_session_id_session_id_fk" FOREIGN KEY ("session_id") REFERENCES "session"("id") ON DELETE CASCADE
        );
CREATE TABLE "part" (
          "id" text PRIMARY KEY,
          "message_id" text NOT NULL,
          "session_id" text NOT NULL,
          "time_created" integer NOT NULL,
          "time_updated" integer NOT NULL,
          "data" text NOT NULL,
          CONSTRAINT "fk_part_message_id_message_id_fk" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE
        );
CREATE TABLE "session_context_epoch" (
          "session_id" text PRIMARY KEY,
          "baseline" text NOT NULL,
          "snapshot" text NOT NULL,
          "baseline_seq" integer NOT NULL,
          CONSTRAINT "fk_session_context_epoch_session_id_session_id_fk" FOREIGN KEY ("session_id") REFERENCES "session"("id") ON DELETE CASCADE
        );
CREATE TABLE "session_input" (
          "id" text PRIMARY KEY,
          "session_id" text NOT NULL,
          "prompt" text NOT NULL,
          "delivery" text NOT NULL,
          "admitted_seq" integer NOT NULL,
          "promoted_seq" integer,
          "time_created" integer NOT NULL,
          CONSTRAINT "fk_session_input_session_id_session_id_fk" FOREIGN KEY ("session_id") REFERENCES "session"("id") ON DELETE CASCADE
        );
CREATE TABLE "session_message" (
          "id" text PRIMARY KEY,
          "session_id" text NOT NULL,
          "type" text NOT NULL,
          "seq" integer NOT NULL,
          "time_created" integer NOT NULL,
          "time_updated" integer NOT NULL,
          "data" text NOT NULL,
          CONSTRAINT "fk_session_message_session_id_session_id_fk" FOREIGN KEY ("session_id") REFERENCES "session"("id") ON DELETE CASCADE
        );
CREATE TABLE "session" (
          "id" text PRIMARY KEY,
          "project_id" text NOT NULL,
          "workspace_id" text,
          "parent_id" text,
          "slug" text NOT NULL,
          "directory" text NOT NULL,
          "path" text,
          "title" text NOT NULL,
          "version" text NOT NULL,
          "share_url" text,
          "summary_additions" integer,
          "summary_deletions" integer,
          "summary_files" integer,
          "summary_diffs" text,
          "metadata" text,
          "cost" real DEFAULT 0 NOT NULL,
          "tokens_input" integer DEFAULT 0 NOT NULL,
          "tokens_output" integer DEFAULT 0 NOT NULL,
          "tokens_reasoning" integer DEFAULT 0 NOT NULL,
          "tokens_cache_read" integer DEFAULT 0 NOT NULL,
          "tokens_cache_write" integer DEFAULT 0 NOT NULL,
          "revert" text,
          "permission" text,
          "agent" text,
          "model" text,
          "time_created" integer NOT NULL,
          "time_updated" integer NOT NULL,
          "time_compacting" integer,
          "time_archived" integer,
          CONSTRAINT "fk_session_project_id_project_id_fk" FOREIGN KEY ("project_id") REFERENCES "project"("id") ON DELETE CASCADE
        );
CREATE TABLE "todo" (
          "session_id" text NOT NULL,
          "content" text NOT NULL,
          "status" text NOT NULL,
          "priority" text NOT NULL,
          "position" integer NOT NULL,
          "time_created" integer NOT NULL,
          "time_updated" integer NOT NULL,
          CONSTRAINT "todo_pk" PRIMARY KEY("session_id", "position"),
          CONSTRAINT "fk_todo_session_id_session_id_fk" FOREIGN KEY ("session_id") REFERENCES "session"("id") ON DELETE CASCADE
        );
CREATE TABLE "session_share" (
          "session_id" text PRIMARY KEY,
          "id" text NOT NULL,
          "secret" text NOT NULL,
          "url" text NOT NULL,
          "time_created" integer NOT NULL,
          "time_updated" integer NOT NULL,
          CONSTRAINT "fk_session_share_session_id_session_id_fk" FOREIGN KEY ("session_id") REFERENCES "session"("id") ON DELETE CASCADE
        );
CREATE TABLE "migration" (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL);
CREATE UNIQUE INDEX "event_aggregate_seq_idx" ON "event" ("aggregate_id","seq");
CREATE INDEX "event_aggregate_type_seq_idx" ON "event" ("aggregate_id","type","seq");
CREATE UNIQUE INDEX "permission_project_action_resource_idx" ON "permission" ("project_id","action","resource");
CREATE INDEX "message_session_time_created_id_idx" ON "message" ("session_id","time_created","id");
CREATE INDEX "part_message_id_id_idx" ON "part" ("message_id","id");
CREATE INDEX "part_session_idx" ON "part" ("session_id");
CREATE INDEX "session_input_session_pending_delivery_seq_idx" ON "session_input" ("session_id","promoted_seq","delivery","admitted_seq");
CREATE UNIQUE INDEX "session_input_session_admitted_seq_idx" ON "session_input" ("session_id","admitted_seq");
CREATE UNIQUE INDEX "session_input_session_promoted_seq_idx" ON "session_input" ("session_id","promoted_seq");
CREATE UNIQUE INDEX "session_message_session_seq_idx" ON "session_message" ("session_id","seq");
CREATE INDEX "session_message_session_type_seq_idx" ON "session_message" ("session_id","type","seq");
CREATE INDEX "session_message_session_time_created_id_idx" ON "session_message" ("session_id","time_created","id");
CREATE INDEX "session_message_time_created_idx" ON "session_message" ("time_created");
CREATE INDEX "session_project_idx" ON "session" ("project_id");
CREATE INDEX "session_workspace_idx" ON "session" ("workspace_id");
CREATE INDEX "session_parent_idx" ON "session" ("parent_id");
CREATE INDEX "todo_session_idx" ON "todo" ("session_id");
`

// openCodeMigrations are the drizzle migrations 1.18.33 records in `migration`.
var openCodeMigrations = []string{
	"20260127222353_familiar_lady_ursula",
	"20260211171708_add_project_commands",
	"20260213144116_wakeful_the_professor",
	"20260225215848_workspace",
	"20260227213759_add_session_workspace_id",
	"20260228203230_blue_harpoon",
	"20260303231226_add_workspace_fields",
	"20260309230000_move_org_to_state",
	"20260312043431_session_message_cursor",
	"20260323234822_events",
	"20260410174513_workspace-name",
	"20260413175956_chief_energizer",
	"20260423070820_add_icon_url_override",
	"20260427172553_slow_nightmare",
	"20260428004200_add_session_path",
	"20260501142318_next_venus",
	"20260504145000_add_sync_owner",
	"20260507164347_add_workspace_time",
	"20260510033149_session_usage",
	"20260511000411_data_migration_state",
	"20260511173437_session-metadata",
	"20260601010001_normalize_storage_paths",
	"20260601202201_amazing_prowler",
	"20260602002951_lowly_union_jack",
	"20260602182828_add_project_directories",
	"20260603001617_session_message_projection_indexes",
	"20260603040000_session_message_projection_order",
	"20260603141458_session_input_inbox",
	"20260603160727_jittery_ezekiel_stane",
	"20260604172448_event_sourced_session_input",
	"20260605003541_add_session_context_snapshot",
	"20260605042240_add_context_epoch_agent",
	"20260611035744_credential",
	"20260611192811_lush_chimera",
	"20260612174303_project_dir_strategy",
	"20260622142730_simplify_session_context_epoch",
	"20260622170816_reset_v2_session_state",
	"20260622202450_simplify_session_input",
}

// WriteOpenCodeDB writes a large, realistic OpenCode 1.18.33 store at path (which
// must not exist): `sessions` sessions over a few git projects and the global
// project, with multi-turn conversations (text, reasoning, tool calls with outputs
// of up to 64 KiB, step parts), the session-row totals OpenCode maintains, and the
// odd states real stores have: turns killed mid-reply (open assistant), API aborts,
// provider errors, failed bare-model runs (user message only), sub-agent children,
// archived sessions and untitled ("New session - …") ones. Deterministic per seed.
// The database is left in WAL mode and fully checkpointed, like a store whose
// OpenCode has exited.
func WriteOpenCodeDB(path string, sessions int, seed int64) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s exists; WriteOpenCodeDB writes a new store only", path)
	}
	db, err := sql.Open("sqlite", "file:"+url.PathEscape(path)+"?_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(openCodeSchema); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	g := &ocGen{rnd: rand.New(rand.NewSource(seed)), now: 1795211000000}
	if err := g.write(tx, sessions); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return err
	}
	return db.Close()
}

type ocGen struct {
	rnd *rand.Rand
	now int64 // epoch ms of the newest activity
	seq int64 // id counter, keeps ids unique and ordered
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// id mimics OpenCode's identifiers: prefix, 12 hex digits of time (inverted for
// descending session ids), 14 random base62 characters.
func (g *ocGen) id(prefix string, ms int64, descending bool) string {
	g.seq++
	v := uint64(ms)*0x1000 + uint64(g.seq&0xfff)
	if descending {
		v = ^v
	}
	var b strings.Builder
	b.WriteString(prefix)
	fmt.Fprintf(&b, "%012x", v&0xffffffffffff)
	for i := 0; i < 14; i++ {
		b.WriteByte(base62[g.rnd.Intn(len(base62))])
	}
	return b.String()
}

var (
	ocWords = strings.Fields(`the a refactor cache layer tests failing handler route config parser module
		add fix update remove rename migrate endpoint database query index schema build lint type error
		function struct interface retry timeout context logger metrics docs readme release version`)
	ocTools = []string{"bash", "read", "edit", "write", "grep", "glob", "list", "webfetch", "todowrite", "task"}
	ocDirs  = []string{"/home/dev/frontend", "/home/dev/api-server", "/home/dev/billing", "/home/dev/docs-site",
		"/home/dev/tools", "/home/dev/infra", "/home/dev/mono/services/auth", "/home/dev/mono/web"}
	ocModels = [][2]string{{"anthropic", "claude-sonnet-4-5"}, {"openai", "gpt-5"}, {"opencode", "grok-code"},
		{"fake", "fake-model"}, {"google", "gemini-2.5-pro"}}
)

func (g *ocGen) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = ocWords[g.rnd.Intn(len(ocWords))]
	}
	return strings.Join(w, " ")
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps and slices of plain values are marshalled here
	}
	return string(b)
}

type ocTokens struct{ in, out, reasoning, cacheRead, cacheWrite int64 }

func (t ocTokens) json() map[string]any {
	return map[string]any{"total": t.in + t.out + t.reasoning + t.cacheRead + t.cacheWrite, "input": t.in,
		"output": t.out, "reasoning": t.reasoning, "cache": map[string]any{"read": t.cacheRead, "write": t.cacheWrite}}
}

func (g *ocGen) write(tx *sql.Tx, sessions int) error {
	for i, m := range openCodeMigrations {
		if _, err := tx.Exec("INSERT INTO migration(id, time_completed) VALUES (?, ?)", m, g.now-int64(40-i)); err != nil {
			return err
		}
	}
	// Projects: one per git repo (id = root commit sha), plus global.
	projectOf := map[string]string{}
	for i, d := range ocDirs {
		pid := fmt.Sprintf("%040x", g.rnd.Uint64()) // a root commit sha
		worktree := d
		if strings.HasPrefix(d, "/home/dev/mono/") {
			pid, worktree = "9a1b2c3d4e5f60718293a4b5c6d7e8f901234567", "/home/dev/mono"
		}
		if i%4 == 3 {
			pid, worktree = "global", "/"
		}
		projectOf[d] = pid
		if _, err := tx.Exec(`INSERT OR IGNORE INTO project(id, worktree, vcs, time_created, time_updated, sandboxes)
			VALUES (?, ?, ?, ?, ?, '[]')`, pid, worktree, map[bool]any{true: nil, false: "git"}[pid == "global"], g.now-40*86400000, g.now); err != nil {
			return err
		}
	}
	insSession, err := tx.Prepare(`INSERT INTO session(id, project_id, parent_id, slug, directory, path, title, version,
		cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model,
		permission, summary_additions, summary_deletions, summary_files, time_created, time_updated, time_archived)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'build', ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	insMsg, err := tx.Prepare("INSERT INTO message(id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)")
	if err != nil {
		return err
	}
	insPart, err := tx.Prepare("INSERT INTO part(id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)")
	if err != nil {
		return err
	}
	var parents []string
	// Sessions spread over the last 30 days, oldest first (like real creation order).
	span := int64(30 * 86400000)
	for i := 0; i < sessions; i++ {
		created := g.now - span + span*int64(i)/int64(max(sessions, 1)) + g.rnd.Int63n(60000)
		dir := ocDirs[g.rnd.Intn(len(ocDirs))]
		model := ocModels[g.rnd.Intn(len(ocModels))]
		sid := g.id("ses_", created, true)
		kind := g.rnd.Intn(100)
		parent := any(nil)
		if kind >= 90 && len(parents) > 0 { // sub-agent child of a recent session
			parent = parents[len(parents)-1-g.rnd.Intn(min(len(parents), 5))]
		}
		turns := 1 + g.rnd.Intn(6)
		if kind < 3 {
			turns = 1 // a failed bare-model run
		}
		t := created + 100
		var tot ocTokens
		cost := 0.0
		firstPrompt := ""
		for turn := 0; turn < turns; turn++ {
			last := turn == turns-1
			prompt := g.words(4 + g.rnd.Intn(20))
			if g.rnd.Intn(4) == 0 {
				prompt = "\"" + prompt + "\"" // a positional prompt, quoted by opencode run
			}
			if turn == 0 {
				firstPrompt = prompt
			}
			uid := g.id("msg_", t, false)
			user := map[string]any{"role": "user", "time": map[string]any{"created": t}, "agent": "build",
				"model": map[string]any{"providerID": model[0], "modelID": model[1]}, "summary": map[string]any{"diffs": []any{}}}
			if kind < 3 {
				user["model"] = map[string]any{"providerID": model[1], "modelID": ""}
			}
			if _, err := insMsg.Exec(uid, sid, t, t+20, js(user)); err != nil {
				return err
			}
			if _, err := insPart.Exec(g.id("prt_", t, false), uid, sid, t, t, js(map[string]any{"type": "text", "text": prompt})); err != nil {
				return err
			}
			if g.rnd.Intn(5) == 0 { // injected file context
				if _, err := insPart.Exec(g.id("prt_", t, false), uid, sid, t, t, js(map[string]any{"type": "text", "synthetic": true,
					"text": "Called the Read tool with the following input: " + strings.Repeat(g.words(12)+"\n", 20)})); err != nil {
					return err
				}
			}
			t += 500 + g.rnd.Int63n(3000)
			if kind < 3 {
				break // ProviderModelNotFoundError: no assistant message at all
			}
			steps := 1 + g.rnd.Intn(4)
			for step := 0; step < steps; step++ {
				finalStep := step == steps-1
				aid := g.id("msg_", t, false)
				tk := ocTokens{in: 200 + g.rnd.Int63n(4000), out: 20 + g.rnd.Int63n(800), cacheRead: g.rnd.Int63n(20000)}
				if g.rnd.Intn(3) == 0 {
					tk.reasoning = g.rnd.Int63n(500)
				}
				c := float64(tk.in)*3e-6 + float64(tk.out+tk.reasoning)*15e-6 + float64(tk.cacheRead)*0.3e-6
				if model[0] == "fake" {
					c = 0
				}
				start := t
				if _, err := insPart.Exec(g.id("prt_", t, false), aid, sid, t, t, js(map[string]any{"type": "step-start",
					"snapshot": fmt.Sprintf("%040x", g.rnd.Uint64())})); err != nil {
					return err
				}
				if tk.reasoning > 0 {
					if _, err := insPart.Exec(g.id("prt_", t, false), aid, sid, t, t, js(map[string]any{"type": "reasoning",
						"text": g.words(40), "time": map[string]any{"start": t, "end": t + 300}})); err != nil {
						return err
					}
				}
				t += 200 + g.rnd.Int63n(2000)
				if _, err := insPart.Exec(g.id("prt_", t, false), aid, sid, t, t, js(map[string]any{"type": "text",
					"text": g.words(10 + g.rnd.Intn(60)), "time": map[string]any{"start": t, "end": t + 50}})); err != nil {
					return err
				}
				finish := "stop"
				if !finalStep {
					finish = "tool-calls"
					for k := 1 + g.rnd.Intn(3); k > 0; k-- {
						tool := ocTools[g.rnd.Intn(len(ocTools))]
						size := 200 + g.rnd.Intn(3000)
						if g.rnd.Intn(50) == 0 {
							size = 64 << 10
						}
						out := strings.Repeat(g.words(8)+"\n", size/50+1)
						state := map[string]any{"status": "completed", "input": map[string]any{"command": "go test ./...", "filePath": dir + "/main.go"},
							"output": out, "title": tool, "metadata": map[string]any{}, "time": map[string]any{"start": t, "end": t + 800}}
						if g.rnd.Intn(15) == 0 {
							state = map[string]any{"status": "error", "input": map[string]any{"command": "make"}, "error": "exit status 2\n" + out[:min(len(out), 200)],
								"time": map[string]any{"start": t, "end": t + 300}}
						}
						if _, err := insPart.Exec(g.id("prt_", t, false), aid, sid, t, t+800, js(map[string]any{"type": "tool", "tool": tool,
							"callID": fmt.Sprintf("call_%016x", g.rnd.Uint64()), "state": state})); err != nil {
							return err
						}
						t += 800 + g.rnd.Int63n(4000)
					}
				}
				a := map[string]any{"parentID": uid, "role": "assistant", "mode": "build", "agent": "build",
					"path": map[string]any{"cwd": dir, "root": dir}, "cost": c, "tokens": tk.json(),
					"modelID": model[1], "providerID": model[0], "time": map[string]any{"created": start, "completed": t}, "finish": finish}
				open := false
				switch {
				case last && finalStep && kind >= 3 && kind < 8: // killed mid-reply
					delete(a, "finish")
					a["time"] = map[string]any{"created": start}
					a["tokens"] = ocTokens{}.json()
					tk, c, open = ocTokens{}, 0, true
				case last && finalStep && kind >= 8 && kind < 11:
					delete(a, "finish")
					a["error"] = map[string]any{"name": "MessageAbortedError", "data": map[string]any{"message": "Aborted"}}
				case last && finalStep && kind >= 11 && kind < 13:
					delete(a, "finish")
					a["error"] = map[string]any{"name": "APIError", "data": map[string]any{"message": "Rate limit exceeded", "statusCode": 429, "isRetryable": true}}
				}
				if !open {
					if _, err := insPart.Exec(g.id("prt_", t, false), aid, sid, t, t, js(map[string]any{"type": "step-finish",
						"reason": finish, "tokens": tk.json(), "cost": c})); err != nil {
						return err
					}
				}
				if _, err := insMsg.Exec(aid, sid, start, t, js(a)); err != nil {
					return err
				}
				tot.in += tk.in
				tot.out += tk.out
				tot.reasoning += tk.reasoning
				tot.cacheRead += tk.cacheRead
				cost += c
				t += 100
			}
			t += 10000 + g.rnd.Int63n(600000) // the user thinks
		}
		title := strings.ToUpper(firstPrompt[:1]) + firstPrompt[1:]
		if len(title) > 50 {
			title = title[:50]
		}
		if kind < 8 { // killed or failed before the small model answered
			title = "New session - " + time.UnixMilli(created).UTC().Format("2006-01-02T15:04:05.000Z")
		}
		var archived any
		if kind >= 13 && kind < 16 {
			archived = t
		}
		path := strings.TrimPrefix(dir, "/")
		var adds, dels, files any = 0, 0, 0
		if kind < 3 {
			adds, dels, files = nil, nil, nil
		} else if g.rnd.Intn(2) == 0 {
			adds, dels, files = g.rnd.Intn(300), g.rnd.Intn(100), 1+g.rnd.Intn(12)
		}
		if _, err := insSession.Exec(sid, projectOf[dir], parent, fmt.Sprintf("%s-%s", ocWords[g.rnd.Intn(len(ocWords))], ocWords[g.rnd.Intn(len(ocWords))]),
			dir, path, title, "1.18.33", cost, tot.in, tot.out, tot.reasoning, tot.cacheRead, tot.cacheWrite,
			js(map[string]any{"id": model[1], "providerID": model[0], "variant": "default"}),
			`[{"permission":"question","pattern":"*","action":"deny"}]`, adds, dels, files, created, t, archived); err != nil {
			return err
		}
		if parent == nil {
			parents = append(parents, sid)
		}
	}
	return nil
}
