package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostileHome copies the recorded fixture home into a temp dir.
func hostileHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.CopyFS(home, os.DirFS("testdata/home")); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2026, 11, 20, 21, 55, 0, 0, time.UTC)
	filepath.WalkDir(home, func(p string, _ os.DirEntry, _ error) error { return os.Chtimes(p, old, old) })
	return home
}

// poisonCopy copies the session file src (under home) to a new session id with
// the replacements applied, stamped like the fixtures.
func poisonCopy(t *testing.T, home, src, oldID, newID string, repl ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, src))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), oldID, newID)
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(s, repl[i]) {
			t.Fatalf("%s: premise: %q not in the fixture", src, repl[i])
		}
		s = strings.ReplaceAll(s, repl[i], repl[i+1])
	}
	dst := filepath.Join(home, strings.ReplaceAll(src, oldID, newID))
	if err := os.WriteFile(dst, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2026, 11, 20, 21, 55, 0, 0, time.UTC)
	os.Chtimes(dst, old, old)
}

// poisonDB runs statements against a test's own copy of a SQLite store.
func poisonDB(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // the temp table lives in one connection
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func listJSON(t *testing.T, env map[string]string, home string) (map[string]string, string, string) {
	t.Helper()
	out, errOut, code := runCLI(t, env, "--home", home, "list", "-a", "--since", "3650d", "--json")
	if code != 0 {
		t.Fatalf("list --json exit %d\n%s", code, errOut)
	}
	var arr []json.RawMessage
	if err := json.Unmarshal([]byte(out), &arr); err != nil {
		t.Fatalf("list --json is not valid JSON: %v\n%s", err, out)
	}
	byID := map[string]string{}
	for _, m := range arr {
		var s struct{ ID string }
		json.Unmarshal(m, &s)
		byID[s.ID] = string(m)
	}
	return byID, out, errOut
}

func assertNoRawControls(t *testing.T, what, s string) {
	t.Helper()
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n') || c == 0x7f {
			t.Errorf("%s: raw control byte %#x at %d: %q", what, c, i, s[max(0, i-40):min(len(s), i+40)])
			return
		}
	}
	for _, r := range []string{"\u009b", "\u202e", "\u2066"} {
		if strings.Contains(s, r) {
			t.Errorf("%s: raw %q", what, r)
		}
	}
}

// TestHostileHome: the recorded home with poisoned copies of sessions (times out
// of range, absurd and negative counts, control characters and bidi overrides in
// cwd and prompt, invalid UTF-8). Every clean session still lists byte for byte
// as without the poison, the poisoned ones are listed too, the JSON is valid, and
// no raw control reaches human output or an error.
func TestHostileHome(t *testing.T) {
	env := map[string]string{"AGENTCTL_HOME": t.TempDir(), "NO_COLOR": "1", "TZ": "UTC"}
	home := hostileHome(t)
	clean, _, _ := listJSON(t, env, home)
	if _, errOut, code := runCLI(t, env, "--home", home, "--adapter", "pi", "list", "-a", "--since", "3650d", "--json", "--strict"); code != 0 {
		t.Fatalf("premise: the clean home fails --strict --adapter pi (exit %d): %s", code, errOut)
	}
	if len(clean) < 20 {
		t.Fatalf("premise: %d sessions in the fixture home", len(clean))
	}

	const claudeID = "7e3394de-1ab5-4927-b7d8-0b4531418047"
	poisonCopy(t, home, ".claude/projects/-home-dev-notes/"+claudeID+".jsonl", claudeID, "7e3394de-0000-4000-8000-00000000bad1",
		`"cwd":"/home/dev/notes"`, `"cwd":"/home/dev/\u001b]0;pwned\u0007no\u001b[2Jtes\n\u202eevil\udcff"`,
		`"output_tokens":`, `"output_tokens":-`,
		// Its own requests: a copy sharing the first request would be a fork of
		// the clean session (and change that session's inherited figures).
		`"requestId":"req_`, `"requestId":"req_poison_`)
	const piID = "01a1faf0-7eef-715d-8e3d-80e07b008804"
	piSrc := ".pi/agent/sessions/--home-dev-api-server--/2026-11-20T21-50-27-567Z_" + piID + ".jsonl"
	poisonCopy(t, home, piSrc, piID, "01a1faf0-7eef-715d-8e3d-0000000bad02",
		`"timestamp":1795`, `"timestamp":3000001795`)
	const codexID = "01a1faf0-70be-7df3-9aa2-02c8425dc9ef"
	poisonCopy(t, home, ".codex/sessions/2026/11/21/rollout-2026-11-21T11-50-23-"+codexID+".jsonl", codexID, "01a1faf0-70be-7df3-9aa2-0000000bad03",
		`"cwd":"/home/dev/billing"`, `"cwd":"/home/dev/bill\u001b[31ming\r\n\u009b2J"`)

	// Impossible usage counts, one poisoned copy per agent that keeps per-record
	// usage (Claude Code's is above).
	const piUsageID = "01a1faea-41e2-70ee-8a46-0000000bad04"
	poisonCopy(t, home, ".pi/agent/sessions/--home-dev-api-server--/2026-11-20T21-43-38-723Z_01a1faea-41e2-70ee-8a46-eefd8057a11e.jsonl",
		"01a1faea-41e2-70ee-8a46-eefd8057a11e", piUsageID, `"usage":{"input":123`, `"usage":{"input":-123`)
	const codexUsageID = "01a1faeb-1023-71b2-9931-00000000bad5"
	poisonCopy(t, home, ".codex/sessions/2026/11/20/rollout-2026-11-20T21-44-31-01a1faeb-1023-71b2-9931-d11b29406e2b.jsonl",
		"01a1faeb-1023-71b2-9931-d11b29406e2b", codexUsageID,
		`"total_token_usage":{"input_tokens":126,"cached_input_tokens":0`, `"total_token_usage":{"input_tokens":126,"cached_input_tokens":999`)
	const ocUsageID = "ses_e0513e0d3ffeb4Nc0mnqBAD006"
	poisonDB(t, filepath.Join(home, ".local/share/opencode/opencode.db"),
		`CREATE TEMP TABLE p AS SELECT * FROM session WHERE id = 'ses_e0513e0d3ffeb4Nc0mnqJKxBsR'`,
		`UPDATE p SET id = '`+ocUsageID+`', tokens_input = -42`,
		`INSERT INTO session SELECT * FROM p`)

	got, raw, errOut := listJSON(t, env, home)
	if os.Getenv("HOSTILE_DEBUG") != "" {
		t.Logf("stderr:\n%s\n%s\n%s\n%s", errOut, got["7e3394de-0000-4000-8000-00000000bad1"], got["01a1faf0-7eef-715d-8e3d-0000000bad02"], got["01a1faf0-70be-7df3-9aa2-0000000bad03"])
	}
	for id, want := range clean {
		if got[id] != want {
			t.Errorf("clean session %s changed by its poisoned neighbours:\nwant %s\ngot  %s", id, want, got[id])
		}
	}
	for _, id := range []string{"7e3394de-0000-4000-8000-00000000bad1", "01a1faf0-7eef-715d-8e3d-0000000bad02", "01a1faf0-70be-7df3-9aa2-0000000bad03",
		piUsageID, codexUsageID, ocUsageID} {
		if got[id] == "" {
			t.Errorf("poisoned session %s not listed\n%s", id, errOut)
		}
	}
	// Pi: every usage record negative, so zero totals; Codex: the previous valid
	// cumulative count (84 in, 14 out); OpenCode: the store's negative totals absent.
	for id, want := range map[string]string{piUsageID: `{"input":0,"output":0,"cache_read":0,"cache_write":0}`,
		codexUsageID: `{"input":84,"output":14,"cache_read":0,"cache_write":0}`, ocUsageID: `null`} {
		var s struct{ Tokens json.RawMessage }
		json.Unmarshal([]byte(got[id]), &s)
		var c bytes.Buffer
		json.Compact(&c, s.Tokens)
		if c.String() != want && !(want == "null" && c.Len() == 0) {
			t.Errorf("session %s: tokens %s, want %s", id, c.String(), want)
		}
	}
	// Records with negative counts are left out of the totals: none is negative.
	if c := got["7e3394de-0000-4000-8000-00000000bad1"]; strings.Contains(c, ": -") || !strings.Contains(c, `"tokens"`) {
		t.Errorf("negative usage records reached the totals (or the tokens vanished): %s", c)
	}
	for _, w := range []string{"pi session 01a1faf0-7eef-715d-8e3d-0000000bad02: last_activity is out of range",
		"session 7e3394de-0000-4000-8000-00000000bad1: 1 usage record(s) with a negative or impossible token count left out of its totals",
		"session " + piUsageID + ": 4 usage record(s) with a negative or impossible token count left out of its totals",
		"session " + codexUsageID + ": 1 token_count record(s) with a negative or impossible cumulative count skipped; the previous valid one is used",
		"session " + ocUsageID + ": the store's token totals are negative; left out"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("no warning %q:\n%s", w, errOut)
		}
	}
	if !strings.Contains(raw, `\u001b]0;pwned`) {
		t.Errorf("JSON must keep the exact string (escaped by JSON): %s", got["7e3394de-0000-4000-8000-00000000bad1"])
	}
	assertNoRawControls(t, "list --json stderr", errOut)
	if _, _, code := runCLI(t, env, "--home", home, "--adapter", "pi", "list", "-a", "--since", "3650d", "--json", "--strict"); code != 1 {
		t.Errorf("list --json --strict with values left out: exit %d, want 1", code)
	}

	out, errOut, code := runCLI(t, env, "--home", home, "list", "-a", "--since", "3650d")
	if code != 0 {
		t.Fatalf("list exit %d: %s", code, errOut)
	}
	assertNoRawControls(t, "list", out)
	assertNoRawControls(t, "list stderr", errOut)
	if n := strings.Count(out, "\n"); n != len(got)+1 {
		t.Errorf("list printed %d lines for %d sessions (a newline broke a row?)\n%s", n, len(got), out)
	}
	for _, id := range []string{"7e3394de-0000-4000-8000-00000000bad1", "01a1faf0-7eef-715d-8e3d-0000000bad02", "01a1faf0-70be-7df3-9aa2-0000000bad03"} {
		for _, args := range [][]string{{"status", id}, {"status", "--json", id}, {"peek", id}} {
			out, errOut, code := runCLI(t, env, append([]string{"--home", home}, args...)...)
			if code != 0 {
				t.Errorf("%v: exit %d: %s", args, code, errOut)
			}
			if args[1] != "--json" {
				assertNoRawControls(t, strings.Join(args, " "), out)
			} else if !json.Valid([]byte(out)) {
				t.Errorf("%v: invalid JSON: %s", args, out)
			}
			assertNoRawControls(t, strings.Join(args, " ")+" stderr", errOut)
		}
	}
	_, errOut, code = runCLI(t, env, "--home", home, "status", "\x1b]0;x\x07\x1b[2Jnope")
	if code == 0 {
		t.Error("status of a missing id succeeded")
	}
	assertNoRawControls(t, "not-found error", errOut)
	if !strings.Contains(errOut, `\x1b[2Jnope`) {
		t.Errorf("the id should be echoed escaped: %q", errOut)
	}
}

// TestDamagedCacheChangesNoOutput: random damage to the parse index files under
// cache/ (flip, truncate, extend, swap between adapters) never changes
// `list -a --json` from a run without a cache.
func TestDamagedCacheChangesNoOutput(t *testing.T) {
	home := hostileHome(t)
	state := t.TempDir()
	// One pinned clock for every run: the home's files are minutes old, and a
	// status that follows their age (a transcript written in the last minute) would
	// otherwise change between the cold run and a late trial on a loaded machine.
	env := map[string]string{"AGENTCTL_HOME": state, "NO_COLOR": "1", "TZ": "UTC",
		"TEST_NOW": time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)}
	cold, _, code := runCLI(t, env, "--home", home, "list", "-a", "--since", "3650d", "--json")
	if code != 0 {
		t.Fatal("cold run failed")
	}
	cache := filepath.Join(state, "cache")
	ents, _ := os.ReadDir(cache)
	orig := map[string][]byte{}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".index") {
			b, _ := os.ReadFile(filepath.Join(cache, e.Name()))
			orig[e.Name()] = b
			names = append(names, e.Name())
		}
	}
	if len(names) < 2 {
		t.Fatalf("premise: index files %v", names)
	}
	r := rand.New(rand.NewPCG(19, 1))
	trials := 200
	if testing.Short() {
		trials = 40
	}
	for i := 0; i < trials; i++ {
		for n, b := range orig { // every file intact, then damage one
			os.WriteFile(filepath.Join(cache, n), b, 0o600)
		}
		name := names[r.IntN(len(names))]
		b := bytes.Clone(orig[name])
		switch r.IntN(4) {
		case 0:
			b[r.IntN(len(b))] ^= byte(1 << r.IntN(8))
		case 1:
			b = b[:r.IntN(len(b))]
		case 2:
			b = append(b, byte(r.Uint32()), byte(r.Uint32()))
		case 3:
			b = orig[names[(r.IntN(len(names)-1)+1+indexOf(names, name))%len(names)]]
		}
		os.WriteFile(filepath.Join(cache, name), b, 0o600)
		out, errOut, code := runCLI(t, env, "--home", home, "list", "-a", "--since", "3650d", "--json")
		if code != 0 || out != cold {
			t.Fatalf("trial %d (%s damaged): exit %d, output differs from a cold run\n%s", i, name, code, errOut)
		}
	}
}

func indexOf(l []string, s string) int {
	for i, x := range l {
		if x == s {
			return i
		}
	}
	return -1
}
