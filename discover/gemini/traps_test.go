package gemini

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/google/go-cmp/cmp"
)

const (
	id1   = "11111111-2222-4333-8444-555555555555"
	root1 = "/home/dev/proj"
	tok1  = `{"input":1000,"output":10,"cached":100,"thoughts":1,"tool":0,"total":1011}`
	tok2  = `{"input":2000,"output":20,"cached":200,"thoughts":2,"tool":5,"total":2022}`
)

// tokens of tok1 and tok2 in agentctl's classes (input − cached + tool,
// output + thoughts, cached).
var (
	want1 = discover.Tokens{Input: 900, Output: 11, CacheRead: 100}
	want2 = discover.Tokens{Input: 1805, Output: 22, CacheRead: 200}
)

func sum(ts ...discover.Tokens) discover.Tokens {
	var t discover.Tokens
	for _, x := range ts {
		t.Add(x)
	}
	return t
}

func one(t *testing.T, env *discover.Env, id string) discover.Session {
	t.Helper()
	got := discoverAll(t, env)
	s, ok := got[id]
	if !ok {
		t.Fatalf("session %s not listed; got %d sessions", id, len(got))
	}
	return s
}

func readLines(t *testing.T, lines ...string) *summary {
	t.Helper()
	s, err := readJSONL(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Trap 1: a gemini message is written again with the same id (and the same
// tokens) when its tool calls are attached: one request, counted once.
func TestTrapToolCallRewriteCountsOnce(t *testing.T) {
	s := readLines(t,
		header(id1, "2026-12-01T10:00:00.000Z"),
		setMessages("2026-12-01T10:00:00.001Z", ctxMsg),
		userMsg("u1", "2026-12-01T10:00:01.000Z", "run it"),
		geminiMsg("g1", "2026-12-01T10:00:02.000Z", "", tok1, "m"),
		`{"id":"g1","timestamp":"2026-12-01T10:00:02.000Z","type":"gemini","content":"","tokens":`+tok1+`,"model":"m","toolCalls":[{"id":"c1","name":"run_shell_command","args":{"command":"echo hi"},"status":"success","resultDisplay":"hi"}]}`,
		`{"id":"r1","timestamp":"2026-12-01T10:00:03.000Z","type":"user","content":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"hi"}}}]}`,
		geminiMsg("g2", "2026-12-01T10:00:04.000Z", "It printed hi.", tok2, "m"),
	)
	got, _ := s.Tokens()
	if want := sum(want1, want2); got != want {
		t.Errorf("tokens = %+v, want %+v", got, want)
	}
	if s.Prompts() != 1 {
		t.Errorf("prompts = %d, want 1 (a tool result is not a prompt)", s.Prompts())
	}
}

// Trap 2: a resume re-states the history in $set.messages without tokens or
// model; the earlier lines' tokens stand (per id, the latest line that has them).
func TestTrapResumeRestatesWithoutTokens(t *testing.T) {
	s := readLines(t,
		header(id1, "2026-12-01T10:00:00.000Z"),
		setMessages("2026-12-01T10:00:00.001Z", ctxMsg),
		userMsg("u1", "2026-12-01T10:00:01.000Z", "first"),
		geminiMsg("g1", "2026-12-01T10:00:02.000Z", "one", tok1, "model-a"),
		header(id1, "2026-12-01T10:05:00.000Z"),
		setMessages("2026-12-01T10:05:00.001Z", ctxMsg),
		`{"$set":{"sessionId":"`+id1+`"}}`,
		setMessages("2026-12-01T10:05:00.002Z", ctxMsg,
			userMsg("u1", "2026-12-01T10:05:00.002Z", "first"),
			`{"id":"g1","timestamp":"2026-12-01T10:05:00.002Z","type":"gemini","content":[{"text":"one"}]}`),
		userMsg("u2", "2026-12-01T10:05:01.000Z", "second"),
		geminiMsg("g2", "2026-12-01T10:05:02.000Z", "two", tok2, "model-b"),
		lastUpdated("2026-12-01T10:05:02.001Z"),
	)
	got, _ := s.Tokens()
	if want := sum(want1, want2); got != want {
		t.Errorf("tokens = %+v, want %+v", got, want)
	}
	if s.Prompts() != 2 || s.FirstPrompt != "first" {
		t.Errorf("prompts = %d first %q, want 2 \"first\"", s.Prompts(), s.FirstPrompt)
	}
	if s.Start.Format("15:04:05") != "10:00:00" {
		t.Errorf("start = %v, want the first header's", s.Start)
	}
	if s.Model != "model-b" || !cmp.Equal(s.Models, []string{"model-a", "model-b"}) {
		t.Errorf("model %q models %q", s.Model, s.Models)
	}
	if o, _ := s.outcome(); o != discover.OutcomeDone {
		t.Errorf("outcome = %v, want done", o)
	}
}

// Trap 3: a message later removed by $rewindTo was billed all the same.
func TestTrapRewoundRepliesStillCount(t *testing.T) {
	s := readLines(t,
		header(id1, "2026-12-01T10:00:00.000Z"),
		userMsg("u1", "2026-12-01T10:00:01.000Z", "first"),
		geminiMsg("g1", "2026-12-01T10:00:02.000Z", "one", tok1, "m"),
		`{"$rewindTo":"u1"}`,
		userMsg("u2", "2026-12-01T10:00:03.000Z", "again"),
		geminiMsg("g2", "2026-12-01T10:00:04.000Z", "two", tok2, "m"),
	)
	got, _ := s.Tokens()
	if want := sum(want1, want2); got != want {
		t.Errorf("tokens = %+v, want %+v", got, want)
	}
	msgs, err := replayFrom(context.Background(), strings.NewReader(strings.Join([]string{
		header(id1, "2026-12-01T10:00:00.000Z"),
		userMsg("u1", "2026-12-01T10:00:01.000Z", "first"),
		geminiMsg("g1", "2026-12-01T10:00:02.000Z", "one", tok1, "m"),
		`{"$rewindTo":"u1"}`,
		userMsg("u2", "2026-12-01T10:00:03.000Z", "again"),
	}, "\n")+"\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].M.ID != "u2" {
		t.Errorf("peek after a rewind shows %d messages, want only u2", len(msgs))
	}
}

// Trap 4: a resume in a later minute leaves a stray second file with the same
// id (a header and the context only). One session, from the real file.
func TestTrapStrayResumeFileIsOneSession(t *testing.T) {
	home := t.TempDir()
	real := writeSession(t, home, "proj", root1, "session-2026-12-01T10-00-11111111.jsonl",
		header(id1, "2026-12-01T10:00:00.000Z"),
		setMessages("2026-12-01T10:00:00.001Z", ctxMsg),
		userMsg("u1", "2026-12-01T10:00:01.000Z", "first"),
		geminiMsg("g1", "2026-12-01T10:00:02.000Z", "one", tok1, "m"),
		lastUpdated("2026-12-01T10:00:02.000Z"),
		`{"$set":{"sessionId":"`+id1+`"}}`,
		setMessages("2026-12-01T10:07:00.002Z", ctxMsg,
			userMsg("u1", "2026-12-01T10:07:00.002Z", "first"),
			`{"id":"g1","timestamp":"2026-12-01T10:07:00.002Z","type":"gemini","content":[{"text":"one"}]}`),
		userMsg("u2", "2026-12-01T10:07:01.000Z", "second"),
		geminiMsg("g2", "2026-12-01T10:07:02.000Z", "two", tok2, "m"),
		lastUpdated("2026-12-01T10:07:02.000Z"),
	)
	writeSession(t, home, "proj", root1, "session-2026-12-01T10-07-11111111.jsonl",
		header(id1, "2026-12-01T10:07:00.000Z"),
		setMessages("2026-12-01T10:07:00.001Z", ctxMsg),
	)
	env, warns := testEnv(t, home, nil)
	ss, err := New().Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("got %d sessions, want 1 (one id)", len(ss))
	}
	s := ss[0]
	if s.Path != real {
		t.Errorf("path = %s, want the file with the conversation %s", s.Path, real)
	}
	if s.StartedAt.Format("15:04:05") != "10:00:00" || s.LastActivity.Format("15:04:05") != "10:07:02" {
		t.Errorf("start %v last %v", s.StartedAt, s.LastActivity)
	}
	if *s.Tokens != sum(want1, want2) || s.Extra["user_prompts"] != 2 || s.Prompt != "first" || s.Status != discover.StatusStopped {
		t.Errorf("tokens %+v prompts %v prompt %q status %s", *s.Tokens, s.Extra["user_prompts"], s.Prompt, s.Status)
	}
	if len(*warns) > 0 {
		t.Errorf("warnings: %q", *warns)
	}
	// Find by the id names the same session through the file names.
	found, err := New().Find(context.Background(), env, discover.Query{Prefix: "1111111"})
	if err != nil || len(found) != 1 || !cmp.Equal(found[0], s) {
		t.Errorf("Find = %v, %v; want the Discover session", found, err)
	}
}

// The CLI's own <session_context>, hook context, slash commands and tool
// results are not prompts.
func TestNotPrompts(t *testing.T) {
	s := readLines(t,
		header(id1, "2026-12-01T10:00:00.000Z"),
		setMessages("2026-12-01T10:00:00.001Z", ctxMsg),
		userMsg("h", "2026-12-01T10:00:00.500Z", "<hook_context>x</hook_context>"),
		userMsg("s", "2026-12-01T10:00:00.600Z", "/stats"),
		`{"id":"r","timestamp":"2026-12-01T10:00:00.700Z","type":"user","content":[{"functionResponse":{"id":"c","name":"x","response":{"output":"ok"}}}]}`,
		userMsg("u", "2026-12-01T10:00:01.000Z", "the real one"),
	)
	if s.Prompts() != 1 || s.FirstPrompt != "the real one" {
		t.Errorf("prompts = %d first %q", s.Prompts(), s.FirstPrompt)
	}
}

// A corrupt line, a line of the wrong shape and a truncated last line are
// skipped; the rest of the file still counts.
func TestCorruptLinesSkipped(t *testing.T) {
	home := t.TempDir()
	p := writeSession(t, home, "proj", root1, "session-2026-12-01T10-00-11111111.jsonl",
		header(id1, "2026-12-01T10:00:00.000Z"),
		`{"id":"x","type":"gemini","tokens":{"input":"many"`,
		`not json at all`,
		`[1,2,3]`,
		userMsg("u1", "2026-12-01T10:00:01.000Z", "first"),
		`{"id":"bad","timestamp":"2026-12-01T10:00:01.500Z","type":"gemini","content":"x","tokens":{"input":5,"output":-3,"cached":0},"model":"m"}`,
		geminiMsg("g1", "2026-12-01T10:00:02.000Z", "one", tok1, "m"),
	)
	// A truncated last line (the CLI mid-write) is not read.
	discovertest.AppendFile(t, p, `{"id":"g2","timestamp":"2026-12-01T10:00:03.000Z","type":"gemini","tokens":`+tok2)
	env, warns := testEnv(t, home, nil)
	s := one(t, env, id1)
	if *s.Tokens != want1 || s.Prompt != "first" || s.Status != discover.StatusStopped {
		t.Errorf("tokens %+v prompt %q status %s", *s.Tokens, s.Prompt, s.Status)
	}
	if len(*warns) != 1 || !strings.Contains((*warns)[0], "impossible token counts") {
		t.Errorf("warnings = %q, want one about the negative count", *warns)
	}
}

// An older CLI's single-JSON session file is read too.
func TestOlderSingleJSONFile(t *testing.T) {
	home := t.TempDir()
	body := `{"sessionId":"` + id1 + `","projectHash":"` + hashOf(root1) + `","startTime":"2025-09-18T02:45:00.000Z","lastUpdated":"2025-09-18T02:46:00.000Z","messages":[` +
		userMsg("u1", "2025-09-18T02:45:01.000Z", "old prompt") + `,` +
		geminiMsg("g1", "2025-09-18T02:45:02.000Z", "old reply", tok1, "gemini-2.5-pro") + `]}`
	// An older CLI names the project dir by the root's sha256, with no .project_root.
	writeSession(t, home, hashOf(root1), "", "session-2025-09-18T02-45-11111111.json", body)
	writeFile(t, home+"/.gemini/projects.json", `{"projects":{"`+root1+`":"proj"}}`)
	env, _ := testEnv(t, home, nil)
	s := one(t, env, id1)
	want := discover.Session{ID: id1, Adapter: "gemini", Cwd: root1, Model: "gemini-2.5-pro", Models: []string{"gemini-2.5-pro"},
		Prompt: "old prompt", Tokens: &want1, Status: discover.StatusStopped, Evidence: discover.EvidenceTranscript}
	got := discover.Session{ID: s.ID, Adapter: s.Adapter, Cwd: s.Cwd, Model: s.Model, Models: s.Models, Prompt: s.Prompt,
		Tokens: s.Tokens, Status: s.Status, Evidence: s.Evidence}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if s.LastActivity.Format(timeFmt) != "2025-09-18T02:46:00" {
		t.Errorf("last activity %v", s.LastActivity)
	}
}

const timeFmt = "2006-01-02T15:04:05"

// GEMINI_CLI_HOME moves the data dir to $GEMINI_CLI_HOME/.gemini.
func TestEnvOverride(t *testing.T) {
	other := t.TempDir()
	writeSession(t, other, "proj", root1, "session-2026-12-01T10-00-11111111.jsonl",
		header(id1, "2026-12-01T10:00:00.000Z"),
		userMsg("u1", "2026-12-01T10:00:01.000Z", "first"),
	)
	env, _ := testEnv(t, fixtureHome, map[string]string{EnvHome: other})
	got := discoverAll(t, env)
	if len(got) != 1 || got[id1].ID != id1 {
		t.Errorf("with %s set, got %d sessions, want only the one under it", EnvHome, len(got))
	}
	if d := New().DataDir(env); d != other+"/.gemini" {
		t.Errorf("DataDir = %s", d)
	}
}

// A $rewindTo naming an id not in the list drops every message, as the CLI's
// own loader does; usage stays.
func TestRewindUnknownID(t *testing.T) {
	s := readLines(t,
		header(id1, "2026-12-01T10:00:00.000Z"),
		userMsg("u1", "2026-12-01T10:00:01.000Z", "first"),
		geminiMsg("g1", "2026-12-01T10:00:02.000Z", "one", tok1, "m"),
		`{"$rewindTo":"nope"}`,
	)
	if len(s.cur) != 0 {
		t.Errorf("%d messages left, want none", len(s.cur))
	}
	if got, _ := s.Tokens(); got != want1 {
		t.Errorf("tokens = %+v, want %+v", got, want1)
	}
}

// Inside its macOS seatbelt sandbox (SANDBOX=sandbox-exec) the CLI keeps its
// runtime files, sessions included, in ~/.cache/.gemini.
func TestSandboxRuntimeDir(t *testing.T) {
	home := t.TempDir()
	writeSession(t, home+"/.cache", "proj", root1, "session-2026-12-01T10-00-11111111.jsonl",
		header(id1, "2026-12-01T10:00:00.000Z"),
		userMsg("u1", "2026-12-01T10:00:01.000Z", "sandboxed"),
	)
	env, _ := testEnv(t, home, nil)
	if s := one(t, env, id1); s.Cwd != root1 || s.Prompt != "sandboxed" {
		t.Errorf("cwd %q prompt %q", s.Cwd, s.Prompt)
	}
}

// The same trap recorded from the real CLI (0.61.0 against a local stub; see
// docs/agents/gemini.md "Verified here"): a headless one-shot at 01:00, resumed
// with --resume <uuid> at 01:01, leaves session-…T01-01-32b57e4e.jsonl with
// only a header and the context. Each turn's stream-json stats said input
// 1227 (1234 − 7 cached), output 56 + 3 thoughts, cached 7.
func TestRealStrayResumeFile(t *testing.T) {
	env, warns := testEnv(t, "testdata/resumed", nil)
	got := discoverAll(t, env)
	if len(got) != 1 {
		t.Fatalf("got %d sessions, want 1", len(got))
	}
	s := got["32b57e4e-a207-4d23-9168-68b70f86cd60"]
	want := discover.Tokens{Input: 2 * 1227, Output: 2 * 59, CacheRead: 2 * 7}
	if s.Tokens == nil || *s.Tokens != want {
		t.Errorf("tokens %+v, want %+v", s.Tokens, want)
	}
	if s.Prompt != "hello there" || s.Extra["user_prompts"] != 2 || s.Cwd != "/tmp/gemproj/myproj" || s.Status != discover.StatusStopped {
		t.Errorf("prompt %q prompts %v cwd %q status %s", s.Prompt, s.Extra["user_prompts"], s.Cwd, s.Status)
	}
	if !s.StartedAt.Equal(*tp("2026-12-02T01:00:22.226Z")) || !s.LastActivity.Equal(*tp("2026-12-02T01:01:01.322Z")) {
		t.Errorf("started %v last %v", s.StartedAt, s.LastActivity)
	}
	if !strings.HasSuffix(s.Path, "session-2026-12-02T01-00-32b57e4e.jsonl") {
		t.Errorf("path %s, want the original file", s.Path)
	}
	if len(*warns) > 0 {
		t.Errorf("warnings: %q", *warns)
	}
}
