package claude

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

const (
	idA = "aaaaaaaa-1111-4222-8333-444455556666"
	idB = "bbbbbbbb-1111-4222-8333-444455556666"
	idC = "cccccccc-1111-4222-8333-444455556666"
)

func tokensOf(t *testing.T, s discover.Session) discover.Tokens {
	t.Helper()
	if s.Tokens == nil {
		t.Fatalf("%s: no tokens", s.ID)
	}
	return *s.Tokens
}

// TestPartialLastLine: a line still being written is not parsed; once its
// newline arrives, the index picks it up by parsing only the appended bytes.
func TestPartialLastLine(t *testing.T) {
	home := copyHome(t)
	env := newEnv(t, home, nil)
	path := filepath.Join(home, ".claude/projects/-home-dev-api-server/75098152-d081-42b6-b9b6-e7787f9a8747.jsonl")
	const id = "75098152-d081-42b6-b9b6-e7787f9a8747"
	line := assistantLine(id, "/home/dev/api-server", "2026-11-20T21:50:00.000Z", "msg_new", "req_new", "claude-opus-4-8",
		textBlock("more"), "end_turn", usageJSON(10, 5, 0, 0))
	half := len(line) / 2
	discovertest.AppendFile(t, path, line[:half])

	a := testAdapter()
	s := discovertest.DiscoverAll(t, a, env.Env)[id]
	if diff := cmp.Diff(discover.Tokens{Input: 20, Output: 10}, tokensOf(t, s)); diff != "" {
		t.Errorf("with a half-written line (-want +got):\n%s", diff)
	}
	if got := s.LastActivity.Format("15:04:05.000"); got != "21:43:17.305" {
		t.Errorf("last activity %s: the partial line was parsed", got)
	}

	// Prove the second run parses only the appended bytes: change the first
	// prompt in place (same length). A full parse would see the new text; the
	// index keeps the prompt it parsed before.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), `"content":"TOOLTEST please run it"`)
	copy(b[i:], `"content":"XOOLTEST please run it"`)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	discovertest.AppendFile(t, path, line[half:]+"\n")
	s = discovertest.DiscoverAll(t, a, env.Env)[id]
	if diff := cmp.Diff(discover.Tokens{Input: 30, Output: 15}, tokensOf(t, s)); diff != "" {
		t.Errorf("after the line completed (-want +got):\n%s", diff)
	}
	if got := s.LastActivity.Format("15:04:05.000"); got != "21:50:00.000" {
		t.Errorf("last activity %s, want the appended line's", got)
	}
	if s.Prompt != "TOOLTEST please run it" {
		t.Errorf("prompt %q: the whole file was re-parsed instead of the appended bytes", s.Prompt)
	}
}

// TestHugeLine: a 10 MB tool result on one line parses (no 64 KiB scanner limit)
// without holding more than a few copies of it.
func TestHugeLine(t *testing.T) {
	home := t.TempDir()
	const sid = idA
	big := strings.Repeat("0123456789abcdef", 10<<20/16)
	path := writeTranscript(t, home, "-w", sid,
		userPrompt(sid, "/w", "2026-11-20T21:00:00.000Z", "dump it"),
		assistantLine(sid, "/w", "2026-11-20T21:00:01.000Z", "m1", "r1", "claude-opus-4-8", toolUseBlock("t1", "Bash", `{"command":"cat big"}`), "tool_use", usageJSON(10, 5, 0, 0)),
		toolResult(sid, "/w", "2026-11-20T21:00:02.000Z", "t1", big, false),
		assistantLine(sid, "/w", "2026-11-20T21:00:03.000Z", "m2", "r2", "claude-opus-4-8", textBlock("done"), "end_turn", usageJSON(10, 5, 0, 0)),
	)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a := parseWhole(t, path)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*uint64(len(big)) {
		t.Errorf("parsing a %d MB line allocated %d MB", len(big)>>20, alloc>>20)
	}
	got := []int{a.Prompts, a.ToolResults, a.AssistantLines, a.TooLong, a.BadLines}
	if diff := cmp.Diff([]int{1, 1, 2, 0, 0}, got); diff != "" {
		t.Errorf("prompts, tool results, assistant lines, too long, bad (-want +got):\n%s", diff)
	}
	if u := a.Tokens(); u != (tokenCounts{In: 20, Out: 10}) {
		t.Errorf("tokens %+v", u)
	}
	msgs, err := testAdapter().Peek(t.Context(), newEnv(t, home, nil).Env, discover.Session{ID: sid, Path: path}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || len(msgs[0].Tools) != 1 || msgs[0].Tools[0].Result != big[:100] {
		t.Errorf("peek over a 10 MB line: %+v", msgs)
	}
}

// TestInvalidUTF8: bytes that are not UTF-8 become U+FFFD, never invalid output.
func TestInvalidUTF8(t *testing.T) {
	home := t.TempDir()
	line := userPrompt(idA, "/w", "2026-11-20T21:00:00.000Z", "caf\u00e9 PLACEHOLDER")
	line = strings.Replace(line, "PLACEHOLDER", "\xff\xfe bad", 1)
	writeTranscript(t, home, "-w", idA, line)
	s := discovertest.DiscoverAll(t, testAdapter(), newEnv(t, home, nil).Env)[idA]
	if want := "café \uFFFD\uFFFD bad"; s.Prompt != want {
		t.Errorf("prompt %q, want %q", s.Prompt, want)
	}
	b, err := json.Marshal(s)
	if err != nil || !utf8.Valid(b) {
		t.Errorf("session JSON invalid: %v", err)
	}
}

// TestUnknownLines: unknown record types and non-JSON lines are skipped, nothing
// else changes.
func TestUnknownLines(t *testing.T) {
	src := "testdata/home/.claude/projects/-home-dev-api-server/75098152-d081-42b6-b9b6-e7787f9a8747.jsonl"
	orig := parseWhole(t, src)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	extra := []string{
		`{"type":"brand-new-thing","payload":{"nested":[1,2,{"type":"assistant"}]}}` + "\n",
		"this is not json\n",
		`{"type":"assistant","message":` + "\n", // truncated by a crash, then continued on a new line
		`{"type":"user","subtype":"unheard-of","isMeta":false,"futureField":true,"message":{"role":"user","content":[{"type":"audio","data":"x"}]}}` + "\n",
	}
	mixed := strings.Join(lines[:3], "") + strings.Join(extra, "") + strings.Join(lines[3:], "")
	p := filepath.Join(t.TempDir(), idA+".jsonl")
	if err := os.WriteFile(p, []byte(mixed), 0o600); err != nil {
		t.Fatal(err)
	}
	got := parseWhole(t, p)
	if got.BadLines != 2 {
		t.Errorf("bad lines %d, want 2", got.BadLines)
	}
	got.BadLines, got.MetaUsers = 0, got.MetaUsers-1 // the audio-only user line has no text
	want := *orig
	want.Last.Off += int64(len(strings.Join(extra, "")))
	want.UsageOff += int64(len(strings.Join(extra, "")))
	if diff := cmp.Diff(want, *got, cmp.AllowUnexported(aggregate{})); diff != "" {
		t.Errorf("(-plain +with unknown lines):\n%s", diff)
	}
}

// TestCwdShapes: cwd comes from the records, never from the bucket name, whatever
// characters it holds and however Claude shortened the slug.
func TestCwdShapes(t *testing.T) {
	long := "/home/dev/" + strings.Repeat("very-long-directory-name_", 9) + "end"
	if len(long) <= 200 {
		t.Fatalf("path is only %d chars", len(long))
	}
	cases := []struct{ id, bucket, cwd string }{
		{idA, "-home-dev-My-Dir-x-y", "/home/dev/My.Dir_x y"},
		{idB, "-home-dev-caf--x-y---", "/home/dev/café/x.y ☃"},
		{idC, slug(long)[:200] + "-abc123", long},
		{"dddddddd-1111-4222-8333-444455556666", "-home-dev-my-app", "/home/dev/my-app"},
		{"eeeeeeee-1111-4222-8333-444455556666", "-home-dev-my-app", "/home/dev/my_app"},
	}
	home := t.TempDir()
	for _, c := range cases {
		writeTranscript(t, home, c.bucket, c.id, userPrompt(c.id, c.cwd, "2026-11-20T21:00:00.000Z", "hi"))
	}
	got := discovertest.DiscoverAll(t, testAdapter(), newEnv(t, home, nil).Env)
	for _, c := range cases {
		if s := got[c.id]; s.Cwd != c.cwd {
			t.Errorf("%s: cwd %q, want %q", c.id[:8], s.Cwd, c.cwd)
		}
	}
}

// slug is Claude's bucket name for a path: every char outside [A-Za-z0-9] → '-'.
func slug(p string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, p)
}

// TestNoClaude: a missing config root or an empty projects/ is an empty list.
func TestNoClaude(t *testing.T) {
	missing := t.TempDir()
	empty := t.TempDir()
	if err := os.MkdirAll(filepath.Join(empty, ".claude", "projects"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, home := range map[string]string{"missing ~/.claude": missing, "empty projects/": empty} {
		ss, err := testAdapter().Discover(t.Context(), newEnv(t, home, nil).Env)
		if err != nil || len(ss) != 0 {
			t.Errorf("%s: %d sessions, err %v; want none, no error", name, len(ss), err)
		}
	}
}

// TestConfigDir: $CLAUDE_CONFIG_DIR relocates everything, independently of HOME.
func TestConfigDir(t *testing.T) {
	cfg := t.TempDir()
	writeTranscript(t, cfg, "-w", idA, userPrompt(idA, "/w", "2026-11-20T21:00:00.000Z", "hi"))
	if err := os.Rename(filepath.Join(cfg, ".claude"), filepath.Join(cfg, "cfg")); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, copyHome(t), nil)
	env.Getenv = func(k string) string {
		if k == "CLAUDE_CONFIG_DIR" {
			return filepath.Join(cfg, "cfg")
		}
		return ""
	}
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	if diff := cmp.Diff([]string{idA}, sortedIDs(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestNotSessions: subagent transcripts, old agent-*.jsonl, indexes and 2.1.329
// peer keys are not sessions or registry entries.
func TestNotSessions(t *testing.T) {
	home := t.TempDir()
	writeTranscript(t, home, "-w", idA, userPrompt(idA, "/w", "2026-11-20T21:00:00.000Z", "hi"))
	for _, rel := range []string{
		"projects/-w/" + idA + "/subagents/agent-a1b2c3.jsonl",
		"projects/-w/agent-a1b2c3.jsonl",
		"projects/-w/sessions-index.json",
		"projects/-w/" + idB + ".jsonl.bak",
		"sessions/4242.0123abcd.key",
	} {
		p := filepath.Join(home, ".claude", rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(userPrompt(idB, "/w", "2026-11-20T21:00:00.000Z", "sub")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got := discovertest.DiscoverAll(t, testAdapter(), newEnv(t, home, &proc.Fake{}).Env)
	if diff := cmp.Diff([]string{idA}, sortedIDs(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestVanishedFile: Claude's cleanup deletes transcripts between ReadDir and
// Open; that is not an error.
func TestVanishedFile(t *testing.T) {
	home := copyHome(t)
	ts, err := listTranscripts(filepath.Join(home, ".claude"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ts[0].Path); err != nil {
		t.Fatal(err)
	}
	sc := &scanner{ix: loadIndex("")}
	files, _ := sc.scan(t.Context(), ts)
	if len(files) != len(ts)-1 {
		t.Errorf("%d files, want %d", len(files), len(ts)-1)
	}
}

// TestDuplicateTranscripts: the same id in two buckets (a manual copy) is one
// session, read from the newest file, with a warning.
func TestDuplicateTranscripts(t *testing.T) {
	home := t.TempDir()
	old := writeTranscript(t, home, "-a", idA, userPrompt(idA, "/a", "2026-11-20T21:00:00.000Z", "old copy"))
	newer := writeTranscript(t, home, "-b", idA, userPrompt(idA, "/b", "2026-11-20T21:00:00.000Z", "new copy"))
	later := fixtureMtime.Add(time.Minute)
	os.Chtimes(newer, later, later)
	env := newEnv(t, home, nil)
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	if s := got[idA]; len(got) != 1 || s.Prompt != "new copy" || s.Path != newer {
		t.Errorf("got %d sessions, prompt %q from %s", len(got), s.Prompt, s.Path)
	}
	want := []string{"session " + idA + " has several transcripts; using the newest, " + newer + " (ignoring " + old + ")"}
	if diff := cmp.Diff(want, env.warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// A project folder that cannot be listed (here a symbolic link that loops:
// the error a permission denial also gives, for root too) costs its sessions
// with a warning naming it, in a full listing and in a lookup; a dangling
// link or a stray file in projects/ is no folder and warns nothing.
func TestUnreadableProjectFolderWarns(t *testing.T) {
	home := copyHome(t)
	projects := filepath.Join(home, ".claude", "projects")
	if err := os.Symlink("loop", filepath.Join(projects, "loop")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(home, "nowhere"), filepath.Join(projects, "dangling"))
	os.WriteFile(filepath.Join(projects, "stray.txt"), nil, 0o644)
	a := testAdapter()

	env := newEnv(t, home, nil)
	all := discovertest.DiscoverAll(t, a, env.Env)
	if len(all) == 0 {
		t.Fatal("the readable folders' sessions are missing")
	}
	warned := func(env *testEnv) string {
		env.mu.Lock()
		defer env.mu.Unlock()
		var out []string
		for _, w := range env.warnings {
			if strings.Contains(w, "project folder") {
				out = append(out, w)
			}
		}
		if len(out) != 1 || !strings.Contains(out[0], filepath.Join(projects, "loop")) || !strings.Contains(out[0], "1 project folder") {
			t.Fatalf("warnings %q: want one naming the looping folder", env.warnings)
		}
		return out[0]
	}
	warned(env)

	var id string
	for k := range all {
		id = k
		break
	}
	env = newEnv(t, home, nil)
	ss, err := a.Find(context.Background(), env.Env, discover.Query{Prefix: id})
	if err != nil || len(ss) != 1 {
		t.Fatalf("Find(%s): %d sessions, %v", id, len(ss), err)
	}
	warned(env)
}
