package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/e2e/synth"
)

// midnightHome writes one session of each agent with records on both sides of
// midnight in loc: 100 input / 10 output tokens at 23:50 on day 1 and 200 / 20
// at 00:10 on day 2.
func midnightHome(t *testing.T, home string, loc *time.Location) (day1, day2 string) {
	t.Helper()
	now := time.Now().In(loc)
	mid := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc).AddDate(0, 0, -1)
	before, after := mid.Add(-10*time.Minute), mid.Add(10*time.Minute)
	ts := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
	write := func(path string, lines ...string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, after, after); err != nil {
			t.Fatal(err)
		}
	}

	// Claude Code (docs/agents/claude-code.md §3.1).
	cid := "0b1c2d3e-0000-4000-8000-00000000c1a0"
	env := func(typ string, at time.Time, n int) string {
		return fmt.Sprintf(`{"type":%q,"timestamp":%q,"sessionId":%q,"cwd":"/work/mid","version":"2.1.197","entrypoint":"sdk-cli","isSidechain":false,"uuid":"u%d"`, typ, ts(at), cid, n)
	}
	claudeTurn := func(at time.Time, n, in, out int) []string {
		return []string{
			env("user", at.Add(-time.Minute), n) + `,"message":{"role":"user","content":"go on"}}`,
			env("assistant", at, n+1) + fmt.Sprintf(`,"requestId":"req_%d","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":%d,"output_tokens":%d}}}`, n, n, in, out),
		}
	}
	write(filepath.Join(home, ".claude", "projects", "-work-mid", cid+".jsonl"),
		append(claudeTurn(before, 1, 100, 10), claudeTurn(after, 3, 200, 20)...)...)

	// Codex (docs/agents/codex.md §2.1): cumulative total_token_usage.
	xid := "019a0000-0000-7000-8000-00000000c0de"
	xline := func(at time.Time, typ, payload string) string {
		return fmt.Sprintf(`{"timestamp":%q,"type":%q,"payload":%s}`, ts(at), typ, payload)
	}
	tc := func(in, out int) string {
		return fmt.Sprintf(`{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":%d,"reasoning_output_tokens":0,"total_tokens":%d}}}`, in, out, in+out)
	}
	start := before.Add(-5 * time.Minute)
	write(filepath.Join(home, ".codex", "sessions", start.UTC().Format("2006/01/02"), "rollout-"+start.UTC().Format("2006-01-02T15-04-05")+"-"+xid+".jsonl"),
		xline(start, "session_meta", fmt.Sprintf(`{"id":%q,"timestamp":%q,"cwd":"/work/mid","originator":"codex_exec","cli_version":"0.169.0","source":"exec","model_provider":"openai"}`, xid, ts(start))),
		xline(start, "turn_context", `{"turn_id":"t1","cwd":"/work/mid","approval_policy":"never","model":"gpt-6.1-sol"}`),
		xline(start, "event_msg", `{"type":"task_started","turn_id":"t1"}`),
		xline(start, "response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"go on"}]}`),
		xline(before, "event_msg", tc(100, 10)),
		xline(after, "event_msg", tc(300, 30)),
		xline(after, "event_msg", `{"type":"task_complete","turn_id":"t1"}`))

	// Pi (docs/agents/pi.md §2): each assistant message's usage.
	pid := "019a0000-0000-7000-8000-0000000000b1"
	pline := func(at time.Time, id, parent, msg string) string {
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":%s}`, id, parent, ts(at), msg)
	}
	pa := func(at time.Time, in, out int) string {
		return fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"fakeoai","model":"fake-model","usage":{"input":%d,"output":%d,"cacheRead":0,"cacheWrite":0,"totalTokens":%d,"cost":{"total":0}},"stopReason":"stop","timestamp":%d}`, in, out, in+out, at.UnixMilli())
	}
	pu := func(at time.Time) string {
		return fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"go on"}],"timestamp":%d}`, at.UnixMilli())
	}
	write(filepath.Join(home, ".pi", "agent", "sessions", "--work-mid--", strings.NewReplacer(":", "-", ".", "-").Replace(ts(start))+"_"+pid+".jsonl"),
		fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":%q,"cwd":"/work/mid"}`, pid, ts(start)),
		pline(before.Add(-time.Minute), "e1", "null", pu(before.Add(-time.Minute))),
		pline(before, "e2", `"e1"`, pa(before, 100, 10)),
		pline(after.Add(-time.Minute), "e3", `"e2"`, pu(after.Add(-time.Minute))),
		pline(after, "e4", `"e3"`, pa(after, 200, 20)))
	return before.Format("2006-01-02"), after.Format("2006-01-02")
}

// A session that runs over midnight counts on both days, each with the tokens
// of its own records there; --by adapter still sums to what list reports. The
// zone is TZ's (a zone with a half-hour offset, so UTC days would split the
// records differently).
func TestUsageByDaySplitsAtMidnight(t *testing.T) {
	for _, tz := range []string{"Asia/Kolkata", "America/New_York"} {
		loc, err := time.LoadLocation(tz)
		if err != nil {
			t.Skipf("no zone data: %v", err)
		}
		dir := t.TempDir()
		home := filepath.Join(dir, "home")
		day1, day2 := midnightHome(t, home, loc)
		// Cold, then from the parse index; and again after a `list -a`
		// indexed the home first (Codex then indexes rollouts without their
		// slots, which usage counts then).
		for run := 0; run < 4; run++ {
			env := map[string]string{"AGENTCTL_HOME": filepath.Join(dir, "state"), "HOME": home, "TZ": tz}
			if run >= 2 {
				env["AGENTCTL_HOME"] = filepath.Join(dir, "state-listed")
			}
			if run == 2 {
				if _, stderr, code := runCLI(t, env, "--home", home, "list", "-a", "--json", "--since", "30d"); code != 0 {
					t.Fatalf("list -a: exit %d: %s", code, stderr)
				}
			}
			got := usageRows(t, env, home, "--since", "30d", "--by", "day,adapter")
			rows := map[string]usageRow{}
			for _, r := range got.Rows {
				rows[r.Key["day"]+" "+r.Key["adapter"]] = r
			}
			for _, a := range []string{"claude-code", "codex", "pi"} {
				r1, r2 := rows[day1+" "+a], rows[day2+" "+a]
				if r1.Tokens != (discover.Tokens{Input: 100, Output: 10}) || r2.Tokens != (discover.Tokens{Input: 200, Output: 20}) ||
					r1.Sessions != 1 || r2.Sessions != 1 {
					t.Errorf("%s run %d, %s: %s %+v, %s %+v; want 100/10 then 200/20, one session each\nrows: %+v", tz, run, a, day1, r1, day2, r2, got.Rows)
				}
			}
			if len(got.Rows) != 6 || got.Total.Sessions != 3 {
				t.Errorf("%s: %d rows, %d sessions; want 6 rows (3 agents × 2 days), 3 sessions: %+v", tz, len(got.Rows), got.Total.Sessions, got.Rows)
			}
			for _, by := range []string{"adapter", "model"} {
				compareUsage(t, tz+" --by "+by, usageRows(t, env, home, "--since", "30d", "--by", by), usageFromList(t, env, home, "30d", []string{by}))
			}
		}
	}
}

// Every session's slots add up to its tokens, over the recorded fixtures and a
// generated home: the day split loses and invents nothing.
func TestSlotsAddUpToTotals(t *testing.T) {
	fixHome, fixState := fixtureHome(t)
	dir := t.TempDir()
	gen := filepath.Join(dir, "home")
	if err := synth.WriteClaudeHome(gen, 30, 4<<10, 64<<10, 5); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteCodexHome(gen, 30, 5); err != nil {
		t.Fatal(err)
	}
	if err := synth.WritePiHome(gen, 20, 5); err != nil {
		t.Fatal(err)
	}
	ocdb := filepath.Join(gen, ".local", "share", "opencode", "opencode.db")
	if err := os.MkdirAll(filepath.Dir(ocdb), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteOpenCodeDB(ocdb, 20, 5); err != nil {
		t.Fatal(err)
	}
	legacyHome := filepath.Join(dir, "legacy")
	if err := synth.WriteOpenCodeLegacy(filepath.Join(legacyHome, ".local", "share", "opencode", "storage"), 20, 6); err != nil {
		t.Fatal(err)
	}
	for _, h := range [][2]string{{fixHome, fixState}, {gen, filepath.Join(dir, "state")}, {legacyHome, filepath.Join(dir, "legacy-state")}} {
		for run := 0; run < 2; run++ { // cold, then from the parse index
			env := map[string]string{"AGENTCTL_HOME": h[1], "HOME": h[0]}
			s := &host{IOStreams: &IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}}, now: time.Now,
				getenv: func(k string) string {
					if v, ok := env[k]; ok {
						return v
					}
					return os.Getenv(k)
				}}
			e, err := setup(s, globalOptions{Home: h[0]})
			if err != nil {
				t.Fatal(err)
			}
			e.slots = true // as usage --by day asks
			_, ls := e.listing(context.Background())
			split := map[string]int{}
			for i := 0; i < ls.Len(); i++ {
				ss := ls.At(i)
				if ss.Tokens == nil || ss.Tokens.Zero() {
					continue
				}
				switch ss.Adapter {
				case "claude-code", "codex", "pi", "opencode":
				default:
					continue
				}
				if got := ss.Slots.Sum(); got != *ss.Tokens {
					t.Errorf("%s %s (%s): slots add up to %v; tokens %v", ss.Adapter, ss.ID, ss.Path, got, *ss.Tokens)
				}
				if len(ss.Slots) > 1 {
					split[ss.Adapter]++
				}
			}
			for _, a := range []string{"claude-code", "codex", "pi", "opencode"} {
				if (h[0] == gen || h[0] == legacyHome && a == "opencode") && split[a] == 0 {
					t.Errorf("no %s session of the generated home spans two slots: the check above proves little", a)
				}
			}
		}
	}
}

// The same for OpenCode's database (Env.Slots: one more query): a generated
// session whose assistant messages are moved to both sides of midnight.
func TestUsageByDaySplitsOpenCode(t *testing.T) {
	loc, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Skipf("no zone data: %v", err)
	}
	dir := t.TempDir()
	home, state := filepath.Join(dir, "home"), filepath.Join(dir, "state")
	path := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteOpenCodeDB(path, 10, 7); err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(loc)
	mid := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc).AddDate(0, 0, -1)
	before, after := mid.Add(-10*time.Minute), mid.Add(10*time.Minute)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Keep the session with the most assistant messages, alone.
	var sid string
	if err := db.QueryRow(`SELECT session_id FROM message WHERE json_extract(data, '$.role') = 'assistant'
	    GROUP BY session_id ORDER BY count(*) DESC LIMIT 1`).Scan(&sid); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM part WHERE session_id != ?`, `DELETE FROM message WHERE session_id != ?`, `DELETE FROM session WHERE id != ?`} {
		if _, err := db.Exec(q, sid); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	rows, err := db.Query(`SELECT id FROM message WHERE json_extract(data, '$.role') = 'assistant' ORDER BY time_created, id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) < 2 {
		t.Fatalf("the generated session has %d assistant messages; want 2 or more", len(ids))
	}
	var want [2]discover.Tokens
	for i, id := range ids {
		at, half := before, 0
		if i >= len(ids)/2 {
			at, half = after, 1
		}
		if _, err := db.Exec(`UPDATE message SET time_created = ?, data = json_set(data, '$.time.created', ?, '$.time.completed', ?) WHERE id = ?`,
			at.UnixMilli(), at.UnixMilli(), at.UnixMilli(), id); err != nil {
			t.Fatal(err)
		}
		var in, out, rs, cr, cw int64
		if err := db.QueryRow(`SELECT coalesce(json_extract(data, '$.tokens.input'), 0), coalesce(json_extract(data, '$.tokens.output'), 0),
			coalesce(json_extract(data, '$.tokens.reasoning'), 0), coalesce(json_extract(data, '$.tokens.cache.read'), 0),
			coalesce(json_extract(data, '$.tokens.cache.write'), 0) FROM message WHERE id = ?`, id).Scan(&in, &out, &rs, &cr, &cw); err != nil {
			t.Fatal(err)
		}
		want[half].Add(discover.Tokens{Input: in, Output: out + rs, CacheRead: cr, CacheWrite: cw})
	}
	if _, err := db.Exec(`UPDATE session SET time_created = ?, time_updated = ?`, before.Add(-time.Hour).UnixMilli(), after.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	env := map[string]string{"AGENTCTL_HOME": state, "HOME": home, "TZ": "Asia/Kolkata"}
	got := usageRows(t, env, home, "--since", "30d", "--by", "day,adapter", "--adapter", "opencode")
	rowsBy := map[string]usageRow{}
	for _, r := range got.Rows {
		rowsBy[r.Key["day"]] = r
	}
	d1, d2 := before.Format("2006-01-02"), after.Format("2006-01-02")
	if rowsBy[d1].Tokens != want[0] || rowsBy[d2].Tokens != want[1] || len(got.Rows) != 2 {
		t.Errorf("opencode by day: %+v\nwant %s %v, %s %v", got.Rows, d1, want[0], d2, want[1])
	}
	compareUsage(t, "opencode --by adapter", usageRows(t, env, home, "--since", "30d", "--by", "adapter", "--adapter", "opencode"),
		usageFromList(t, env, home, "30d", []string{"adapter"}, "--adapter", "opencode"))
}
