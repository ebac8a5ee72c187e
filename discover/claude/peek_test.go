package claude

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
)

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// ignoreRaw compares items without their native records (checked separately).
var ignoreRaw = cmpopts.IgnoreFields(discover.Message{}, "Raw")

func peek(t *testing.T, env *discover.Env, s discover.Session, n int) []discover.Message {
	t.Helper()
	msgs, err := testAdapter().Peek(t.Context(), env, s, n)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

var toolTurn75098152 = []discover.Message{
	{TS: ts("2026-11-20T21:43:17.122Z"), Kind: "user", Text: "TOOLTEST please run it", UUID: "9e91d57f-8288-485d-a311-d65ec7992ba0"},
	{TS: ts("2026-11-20T21:43:17.198Z"), Kind: "assistant", MessageID: "msg_fake_30990f2cc852444b8e49", UUID: "f97cd616-d1f9-4986-9545-cc08dc3d17fe",
		Tools: []discover.ToolCall{{ID: "toolu_fake_d6f27ea5288a4398a5c0", Name: "Bash", Summary: "echo hi", HasResult: true, Result: "hi"}}},
	{TS: ts("2026-11-20T21:43:17.305Z"), Kind: "assistant", Text: "tool said: hi", MessageID: "msg_fake_e1c1593078684f79bf66", UUID: "2ef29d66-6b0d-454d-ae33-fc757455df23"},
}

func TestPeekFixture(t *testing.T) {
	home := copyHome(t)
	env := newEnv(t, home, nil).Env
	got := peek(t, env, discover.Session{ID: "75098152-d081-42b6-b9b6-e7787f9a8747"}, 20)
	if diff := cmp.Diff(toolTurn75098152, got, ignoreRaw); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Raw: the assistant tool call carries its line and its tool_result line.
	if n := len(got[1].Raw); n != 2 {
		t.Errorf("tool call item has %d raw records, want 2 (call + result)", n)
	}
	// A caller that prints no native records gets the same items without them.
	bare, err := testAdapter().Peek(discover.WithoutRaw(t.Context()), env, discover.Session{ID: "75098152-d081-42b6-b9b6-e7787f9a8747"}, 20)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(toolTurn75098152, bare); diff != "" {
		t.Errorf("without raw records (-want +got):\n%s", diff)
	}
	// -n counts items, never lines or tool results.
	if got := peek(t, env, discover.Session{ID: "75098152-d081-42b6-b9b6-e7787f9a8747"}, 2); len(got) != 2 || got[0].MessageID != "msg_fake_30990f2cc852444b8e49" {
		t.Errorf("-n 2: %+v", got)
	}
}

// TestPeek329: the 2.1.329 file has 57 KB prompt snapshots, api-request-blob lines
// with message content, cost-state, … between the messages: only the
// conversation comes out.
func TestPeek329(t *testing.T) {
	env := newEnv(t, copyHome(t), nil).Env
	got := peek(t, env, discover.Session{ID: idCliTool}, 0)
	type short struct{ Kind, Text, Tools string }
	var have []short
	for _, m := range got {
		s := short{Kind: m.Kind, Text: m.Text}
		for _, tc := range m.Tools {
			s.Tools += tc.Name + ":" + tc.Summary + "→" + tc.Result
		}
		have = append(have, s)
	}
	want := []short{
		{"user", "TOOLTEST v329 SLEEP=3\nTOOLCMD: echo v329", ""},
		{"assistant", "", "Bash:echo v329→v329"},
		{"assistant", "tool said: v329", ""},
		{"user", "again v329", ""},
		{"assistant", "", "Bash:echo v329→v329"},
		{"assistant", "tool said: v329", ""},
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPeekAfterClear: the caveat (isMeta) is skipped, the /clear record renders
// as its slash command.
func TestPeekAfterClear(t *testing.T) {
	env := newEnv(t, copyHome(t), nil).Env
	got := peek(t, env, discover.Session{ID: idAfter}, 0)
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Kind+": "+m.Text)
	}
	want := []string{"user: /clear", "user: second prompt after clear", "assistant: FAKE-REPLY: hi from fake server (#28)"}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPeekOrder: file order is not conversation order (a TUI wrote the tool_use
// before the prompt that caused it); items sort by timestamp, then offset. The
// status tail follows the same order.
func TestPeekOrder(t *testing.T) {
	const sid, cwd = idA, "/w"
	home := t.TempDir()
	p := writeTranscript(t, home, "-w", sid,
		assistantLine(sid, cwd, "2026-11-20T21:00:02.000Z", "m1", "r1", "claude-opus-4-8", textBlock("let me look"), "tool_use", usageJSON(1, 1, 0, 0)),
		assistantLine(sid, cwd, "2026-11-20T21:00:03.000Z", "m1", "r1", "claude-opus-4-8", toolUseBlock("t1", "Read", `{"file_path":"/w/a.go"}`), "tool_use", usageJSON(1, 1, 0, 0)),
		userPrompt(sid, cwd, "2026-11-20T21:00:01.000Z", "read a.go"),
	)
	got := peek(t, newEnv(t, home, nil).Env, discover.Session{ID: sid, Path: p}, 10)
	want := []discover.Message{
		{TS: ts("2026-11-20T21:00:01Z"), Kind: "user", Text: "read a.go", UUID: "u-2026-11-20T21:00:01.000Z"},
		{TS: ts("2026-11-20T21:00:02Z"), Kind: "assistant", Text: "let me look", MessageID: "m1", UUID: "a-m1-2026-11-20T21:00:02.000Z",
			Tools: []discover.ToolCall{{ID: "t1", Name: "Read", Summary: "/w/a.go"}}},
	}
	if diff := cmp.Diff(want, got, ignoreRaw); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if a := parseWhole(t, p); a.Last.Kind != tailToolUse {
		t.Errorf("status tail is kind %d, want the tool_use (latest timestamp)", a.Last.Kind)
	}
}

// TestPeekItems covers the remaining item kinds and tool summaries.
func TestPeekItems(t *testing.T) {
	const sid, cwd = idA, "/w"
	home := t.TempDir()
	tu := func(ts, id, name, input string) string {
		return assistantLine(sid, cwd, ts, "m-"+id, "r-"+id, "claude-opus-4-8", toolUseBlock(id, name, input), "tool_use", usageJSON(1, 1, 0, 0))
	}
	p := writeTranscript(t, home, "-w", sid,
		`{"type":"user","isMeta":true,"message":{"role":"user","content":"<local-command-caveat>Caveat: x</local-command-caveat>"},"timestamp":"2026-11-20T21:00:00.000Z"}`,
		userPrompt(sid, cwd, "2026-11-20T21:00:00.500Z", "<system-reminder>injected</system-reminder>"),
		userPrompt(sid, cwd, "2026-11-20T21:00:01.000Z", "do things"),
		assistantLine(sid, cwd, "2026-11-20T21:00:02.000Z", "m0", "r0", "claude-opus-4-8", thinkingBlock("secret"), "tool_use", usageJSON(1, 1, 0, 0)),
		tu("2026-11-20T21:00:03.000Z", "t1", "Grep", `{"pattern":"TODO","path":"."}`),
		tu("2026-11-20T21:00:04.000Z", "t2", "Task", `{"subagent_type":"Explore","description":"find callers","prompt":"…"}`),
		tu("2026-11-20T21:00:05.000Z", "t3", "WebFetch", `{"url":"http://127.0.0.1/x"}`),
		tu("2026-11-20T21:00:06.000Z", "t4", "WebSearch", `{"query":"go generics"}`),
		tu("2026-11-20T21:00:07.000Z", "t5", "mcp__x__y", `{"b": 1, "a": [1, 2]}`),
		tu("2026-11-20T21:00:08.000Z", "t6", "Edit", `{"file_path":"/w/b.go","old_string":"x"}`),
		toolResult(sid, cwd, "2026-11-20T21:00:09.000Z", "t1", "\n\n  first line  \nsecond", false),
		toolResult(sid, cwd, "2026-11-20T21:00:09.100Z", "t6", "String not found", true),
		`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t2","type":"tool_result","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}],"is_error":true}]},"toolUseResult":{"interrupted":true},"timestamp":"2026-11-20T21:00:09.200Z"}`,
		toolResult(sid, cwd, "2026-11-20T21:00:09.300Z", "t-elsewhere", "orphan", false),
		`{"type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"auto","preTokens":167000},"timestamp":"2026-11-20T21:00:10.000Z","uuid":"c1"}`,
		`{"type":"system","subtype":"turn_duration","durationMs":5,"timestamp":"2026-11-20T21:00:10.500Z"}`,
		`{"type":"assistant","isApiErrorMessage":true,"message":{"id":"e1","model":"<synthetic>","content":[{"type":"text","text":"API Error: 500 boom"}]},"timestamp":"2026-11-20T21:00:11.000Z","uuid":"e-1"}`,
	)
	got := peek(t, newEnv(t, home, nil).Env, discover.Session{ID: sid, Path: p}, 0)
	type short struct {
		Kind, Text string
		Tools      []discover.ToolCall
		IsError    bool
	}
	var have []short
	for _, m := range got {
		have = append(have, short{m.Kind, m.Text, m.Tools, m.IsError})
	}
	one := func(id, name, summary string) []discover.ToolCall {
		return []discover.ToolCall{{ID: id, Name: name, Summary: summary}}
	}
	want := []short{
		{Kind: "user", Text: "do things"},
		{Kind: "assistant", Tools: []discover.ToolCall{{ID: "t1", Name: "Grep", Summary: "TODO", HasResult: true, Result: "first line"}}},
		{Kind: "assistant", Tools: []discover.ToolCall{{ID: "t2", Name: "Task", Summary: "(Explore) find callers", HasResult: true, Result: "[Request interrupted by user for tool use]", IsError: true, Interrupted: true}}},
		{Kind: "assistant", Tools: one("t3", "WebFetch", "http://127.0.0.1/x")},
		{Kind: "assistant", Tools: one("t4", "WebSearch", "go generics")},
		{Kind: "assistant", Tools: one("t5", "mcp__x__y", `{"b":1,"a":[1,2]}`)},
		{Kind: "assistant", Tools: []discover.ToolCall{{ID: "t6", Name: "Edit", Summary: "/w/b.go", HasResult: true, Result: "String not found", IsError: true}}},
		{Kind: "system", Text: "context compacted (auto, 167000 tokens)"},
		{Kind: "error", Text: "API Error: 500 boom", IsError: true},
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPeekLaunchLog: before the transcript exists, peek renders the launch's
// stream-json stdout, opened by the launch prompt.
func TestPeekLaunchLog(t *testing.T) {
	env := newEnv(t, t.TempDir(), nil).Env
	const id = "75098152-d081-42b6-b9b6-e7787f9a8747"
	launched := ts("2026-11-20T21:43:17.000Z")
	env.Launches = []meta.Launch{{ID: "l-1", Adapter: Name, SessionID: id, Prompt: "TOOLTEST please run it",
		Log: filepath.Join("testdata/captures/2.1.197-print-tooluse.stream-json.jsonl"), LaunchedAt: launched}}
	got := peek(t, env, discover.Session{ID: id}, 20)
	want := []discover.Message{
		{TS: launched, Kind: "user", Text: "TOOLTEST please run it"},
		{TS: ts("2026-11-20T21:43:17.287Z"), Kind: "assistant", MessageID: "msg_fake_30990f2cc852444b8e49", UUID: "f97cd616-d1f9-4986-9545-cc08dc3d17fe",
			Tools: []discover.ToolCall{{ID: "toolu_fake_d6f27ea5288a4398a5c0", Name: "Bash", Summary: "echo hi", HasResult: true, Result: "hi"}}},
		{TS: ts("2026-11-20T21:43:17.287Z"), Kind: "assistant", Text: "tool said: hi", MessageID: "msg_fake_e1c1593078684f79bf66", UUID: "2ef29d66-6b0d-454d-ae33-fc757455df23"},
	}
	if diff := cmp.Diff(want, got, ignoreRaw); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The SIGKILLed run's log has only its init line.
	env.Launches[0].Log = "testdata/captures/2.1.197-print-sigkill.stream-json.jsonl"
	env.Launches[0].Prompt = ""
	if _, err := testAdapter().Peek(t.Context(), env, discover.Session{ID: id}, 20); err != discover.ErrNoSession {
		t.Errorf("err = %v, want ErrNoSession", err)
	}
}

// TestPeekWindowGrows: with more than 256 KiB after the first prompt, the window
// grows until it holds n items.
func TestPeekWindowGrows(t *testing.T) {
	const sid, cwd = idA, "/w"
	home := t.TempDir()
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = 'x'
	}
	p := writeTranscript(t, home, "-w", sid,
		userPrompt(sid, cwd, "2026-11-20T21:00:01.000Z", "first"),
		`{"type":"attachment","attachment":{"type":"prompt_snapshot","content":"`+string(big)+`"},"timestamp":"2026-11-20T21:00:01.500Z"}`,
		userPrompt(sid, cwd, "2026-11-20T21:00:02.000Z", "second"),
	)
	got := peek(t, newEnv(t, home, nil).Env, discover.Session{ID: sid, Path: p}, 2)
	if len(got) != 2 || got[0].Text != "first" || got[1].Text != "second" {
		t.Errorf("got %+v", got)
	}
}

// TestPeekWindowFitsItems: items of very different sizes (short prompts, tool
// results of hundreds of KiB) make the window grow by what it found, not by
// doubling: peek reads at most half as much again as the bytes its n items take
// (each byte of a mapped transcript costs a page fault on first read). Doubling
// read twice as much here, nextWindow 1.4 times.
func TestPeekWindowFitsItems(t *testing.T) {
	const sid, cwd = idA, "/w"
	home := t.TempDir()
	out := strings.Repeat("result line of a long tool output\n", 12000) // ~400 KiB quoted
	var lines []string
	var turnStart []int64 // offset of each turn's first line
	var off int64
	add := func(l string) {
		lines = append(lines, l)
		off += int64(len(l)) + 1
	}
	for i := 0; i < 30; i++ {
		turnStart = append(turnStart, off)
		ts := fmt.Sprintf("2026-11-20T21:%02d:00.000Z", i)
		add(userPrompt(sid, cwd, ts, fmt.Sprintf("prompt %d", i)))
		add(fmt.Sprintf(`{"type":"assistant","sessionId":%q,"timestamp":%q,"requestId":"r%d","message":{"id":"m%d","model":"claude-opus-4-8","role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"make"}}],"usage":{"input_tokens":1,"output_tokens":1}}}`, sid, ts, i, i, i))
		add(fmt.Sprintf(`{"type":"user","sessionId":%q,"timestamp":%q,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":%q}]}}`, sid, ts, i, out))
	}
	p := writeTranscript(t, home, "-w", sid, lines...)
	var tail *discover.Tail
	open := func(path string) (*discover.Tail, error) {
		var err error
		tail, err = discover.OpenTailMapped(path)
		return tail, err
	}
	const n = 20 // ten turns: a prompt and a tool call (its result attached) each
	got, err := peekTail(discover.WithoutRaw(t.Context()), p, n, open)
	if err != nil || len(got) != n || got[0].Text != "prompt 20" {
		t.Fatalf("%d items (first %+v), %v", len(got), got[:min(1, len(got))], err)
	}
	need := off - turnStart[20]
	read := tail.Size() - tail.Start()
	if read > need+need/2 {
		t.Errorf("read the last %d KiB for items taking %d KiB: more than half as much again", read>>10, need>>10)
	}
}
