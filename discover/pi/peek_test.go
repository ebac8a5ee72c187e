package pi

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

const toolFile = fixtureHome + "/.pi/agent/sessions/--home-dev-api-server--/2026-11-20T21-43-44-539Z_01a1faea-589b-73ae-a8a8-6fa4991c7bc7.jsonl"

func peekPath(t *testing.T, path string, n int) []discover.Message {
	t.Helper()
	env, _ := testEnv(t, fixtureHome, nil)
	msgs, err := New().Peek(context.Background(), env, discover.Session{ID: "x", Adapter: "pi", Path: path}, n)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestPeekToolRoundTrip(t *testing.T) {
	got := peekPath(t, toolFile, 0)
	want := []discover.Message{
		{TS: ts("2026-11-20T21:43:44.550Z"), Kind: "system", Text: "model fakeoai/fake-model", MessageID: "b595dab2"},
		{TS: ts("2026-11-20T21:43:44.578Z"), Kind: "user", Text: "TOOL please run something", MessageID: "504795e5"},
		{TS: ts("2026-11-20T21:43:44.749Z"), Kind: "assistant", MessageID: "16cd5a70", Tools: []discover.ToolCall{
			{ID: "call_1", Name: "bash", Summary: "echo hello-from-tool", HasResult: true, Result: "hello-from-tool"}}},
		{TS: ts("2026-11-20T21:43:44.801Z"), Kind: "assistant", Text: "FAKE-REPLY to: TOOL please run something", MessageID: "f348249e"},
		{TS: ts("2026-11-20T21:48:39.818Z"), Kind: "user", Text: "SLOW resumed turn", MessageID: "8ef0e4c2"},
		{TS: ts("2026-11-20T21:48:55.021Z"), Kind: "assistant", Text: "FAKE-REPLY to: SLOW resumed turn", MessageID: "c65a39c6"},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(discover.Message{}, "Raw")); diff != "" {
		t.Errorf("peek (-want +got):\n%s", diff)
	}
	// Raw holds the native lines: the tool-call item carries the call and its result.
	lines := strings.Split(strings.TrimSpace(readFile(t, toolFile)), "\n")
	if len(got) == 6 {
		if diff := cmp.Diff([]string{lines[4], lines[5]}, raws(got[2])); diff != "" {
			t.Errorf("raw of the tool item (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{lines[8]}, raws(got[5])); diff != "" {
			t.Errorf("raw of the last item (-want +got):\n%s", diff)
		}
	}
}

func raws(m discover.Message) []string {
	var out []string
	for _, r := range m.Raw {
		out = append(out, string(r))
	}
	return out
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// -n counts items (messages), never lines or tool results.
func TestPeekN(t *testing.T) {
	kinds := func(ms []discover.Message) string {
		var k []string
		for _, m := range ms {
			s := m.Kind
			if len(m.Tools) > 0 {
				s += "+tool"
				if m.Tools[0].HasResult {
					s += "+result"
				}
			}
			k = append(k, s)
		}
		return strings.Join(k, ",")
	}
	for _, tt := range []struct {
		n    int
		want string
	}{
		{1, "assistant"},
		{2, "user,assistant"},
		{3, "assistant,user,assistant"},
		{4, "assistant+tool+result,assistant,user,assistant"},
		{6, "system,user,assistant+tool+result,assistant,user,assistant"},
		{100, "system,user,assistant+tool+result,assistant,user,assistant"},
	} {
		if got := kinds(peekPath(t, toolFile, tt.n)); got != tt.want {
			t.Errorf("-n %d = %s, want %s", tt.n, got, tt.want)
		}
	}
	got := peekPath(t, fixtureHome+"/.pi/agent/sessions/--home-dev-api-server--/2026-11-20T21-43-38-723Z_01a1faea-41e2-70ee-8a46-eefd8057a11e.jsonl", 2)
	if len(got) != 2 || got[0].Text != "continue turn" || got[1].Text != "FAKE-REPLY to: continue turn" {
		t.Errorf("-n 2 = %+v", got)
	}
}

// A launched session's first turn, before any file exists: rendered from the
// --mode json log (message_end events).
func TestPeekLaunchLog(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	s := discover.Session{ID: "01a1faeb-0000-7000-8000-0000000000aa", Adapter: "pi", Log: "testdata/captures/mode-json-tooluse.jsonl"}
	got, err := New().Peek(context.Background(), env, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []discover.Message{
		{Kind: "user", Text: "TOOL please run something"},
		{Kind: "assistant", Tools: []discover.ToolCall{{ID: "call_1", Name: "bash", Summary: "echo hello-from-tool", HasResult: true, Result: "hello-from-tool"}}},
		{Kind: "assistant", Text: "FAKE-REPLY to: TOOL please run something"},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(discover.Message{}, "Raw", "TS", "MessageID")); diff != "" {
		t.Errorf("peek from log (-want +got):\n%s", diff)
	}
	if len(got) > 0 && !got[0].TS.Equal(ts("2026-11-20T21:43:44.560Z")) {
		t.Errorf("ts = %v", got[0].TS)
	}
	// Nothing anywhere → ErrNoSession.
	_, err = New().Peek(context.Background(), env, discover.Session{ID: "01a1faeb-0000-7000-8000-0000000000bb", Adapter: "pi"}, 0)
	if !errors.Is(err, discover.ErrNoSession) {
		t.Errorf("err = %v, want ErrNoSession", err)
	}
}

// A session the core built from a launch record has no Path: peek finds the file
// by id.
func TestPeekFindsFileByID(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	got, err := New().Peek(context.Background(), env, discover.Session{ID: "01a1faea-b485-714f-9f73-af5206c9d06d", Adapter: "pi"}, 1)
	if err != nil || len(got) != 1 || got[0].Text != "FAKE-REPLY to: SLOW task please" {
		t.Errorf("peek = %+v, %v", got, err)
	}
}

func TestToolSummary(t *testing.T) {
	long := `{"pattern":"` + strings.Repeat("x", 200) + `"}`
	for _, tt := range []struct{ name, args, want string }{
		{"bash", `{"command":"go test ./..."}`, "go test ./..."},
		{"read", `{"path":"main.go","offset":10}`, "main.go"},
		{"edit", `{"path":"a.go","oldText":"x","newText":"y"}`, "a.go"},
		{"grep", `{"pattern": "TODO",  "path": "."}`, `{"pattern":"TODO","path":"."}`},
		{"grep", long, discover.OneLine(long, 120)},
	} {
		if got := toolSummary(tt.name, json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("toolSummary(%s, %s) = %q, want %q", tt.name, tt.args, got, tt.want)
		}
	}
}

func TestPeekErrorToolResultAndSeparators(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/s.jsonl"
	discovertest.WriteLines(t, p,
		hdr("01a1fb00-0000-7000-8000-0000000000c1", "2026-11-20T21:00:00.000Z", "/p"),
		userMsg("u1", "", "2026-11-20T21:00:00.100Z", "read it"),
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-20T21:00:01.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"reading"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"nope.txt"}}],"stopReason":"toolUse","timestamp":1795208401000}}`,
		`{"type":"message","id":"t1","parentId":"a1","timestamp":"2026-11-20T21:00:01.100Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"\nENOENT: no such file\nmore"}],"isError":true,"timestamp":1795208401100}}`,
		`{"type":"compaction","id":"k1","parentId":"t1","timestamp":"2026-11-20T21:00:02.000Z","summary":"s","firstKeptEntryId":"u1","tokensBefore":5}`,
		`{"type":"label","id":"l1","parentId":"k1","timestamp":"2026-11-20T21:00:02.100Z","targetId":"u1","label":"x"}`,
		`{"type":"custom_message","id":"cm1","parentId":"l1","timestamp":"2026-11-20T21:00:02.200Z","customType":"ext","content":"shown to user","display":true}`,
		`{"type":"custom_message","id":"cm2","parentId":"cm1","timestamp":"2026-11-20T21:00:02.300Z","customType":"ext","content":"hidden","display":false}`,
		`{"type":"message","id":"b1","parentId":"cm2","timestamp":"2026-11-20T21:00:03.000Z","message":{"role":"bashExecution","command":"ls","output":"a","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1795208403000}}`,
	)
	got := peekPath(t, p, 0)
	want := []discover.Message{
		{Kind: "user", Text: "read it"},
		{Kind: "assistant", Text: "reading", Tools: []discover.ToolCall{{ID: "c1", Name: "read", Summary: "nope.txt", HasResult: true, IsError: true, Result: "ENOENT: no such file"}}},
		{Kind: "system", Text: "context compacted"},
		{Kind: "system", Text: "shown to user"},
		{Kind: "system", Text: "$ ls (exit 0)"},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(discover.Message{}, "Raw", "TS", "MessageID")); diff != "" {
		t.Errorf("peek (-want +got):\n%s", diff)
	}
}

// Big lines take the token-by-token skeleton path; the tree and the rendering are
// the same as for small ones.
func TestPeekBigLines(t *testing.T) {
	big := strings.Repeat("y", 300<<10)
	dir := t.TempDir()
	p := dir + "/s.jsonl"
	discovertest.WriteLines(t, p,
		hdr("01a1fb00-0000-7000-8000-0000000000e1", "2026-11-20T21:00:00.000Z", "/p"),
		userMsg("u1", "", "2026-11-20T21:00:00.100Z", textBlocks("go")),
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-20T21:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"cat big"}}],"stopReason":"toolUse","timestamp":1795208400900}}`,
		`{"type":"message","id":"t1","parentId":"a1","timestamp":"2026-11-20T21:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"`+big+`"}],"isError":false,"timestamp":1795208401999}}`,
		// keys in another order, content before role: still the same skeleton
		`{"timestamp":"2026-11-20T21:00:03.000Z","message":{"content":[{"type":"text","text":"`+big+`"}],"role":"user"},"parentId":"t1","type":"message","id":"u2"}`,
		`{"type":"message","id":"a2","parentId":"u2","timestamp":"2026-11-20T21:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"stopReason":"stop","timestamp":1795208403900}}`,
	)
	got := peekPath(t, p, 3)
	if len(got) != 3 || got[0].Tools[0].Result != strings.Repeat("y", 100) || got[1].Kind != "user" || len(got[1].Text) != len(big) || got[2].Text != "done" {
		t.Errorf("peek = %d items %+v", len(got), got[0])
	}
	for _, line := range strings.Split(readFile(t, p), "\n")[1:6] {
		small, ok1 := skeletonOf([]byte(strings.ReplaceAll(line, big, "y")))
		large, ok2 := skeletonOf([]byte(line))
		if !ok1 || !ok2 || !cmp.Equal(small, large) {
			t.Errorf("skeleton %+v %v vs %+v %v", small, ok1, large, ok2)
		}
	}
}

// Pi 1.6 records the system prompt and tool loadout as a "system" message, and
// drops a failed reply from the model's context with a context_edit before it
// retries (testdata/pi16/README.md): peek names the sections and tools, and
// says which reply each edit dropped.
func TestPeekPi16SystemAndContextEdit(t *testing.T) {
	got := peekPath(t, "testdata/pi16/retry.jsonl", 0)
	want := []discover.Message{
		{TS: ts("2026-12-02T03:50:18.202Z"), Kind: "system", Text: "model fakeoai/fake-model", MessageID: "061ba880"},
		{TS: ts("2026-12-02T03:50:18.298Z"), Kind: "system", Text: "system prompt (preamble, tools, rules, docs, cwd); tools +read +bash +edit +write", MessageID: "563bc620"},
		{TS: ts("2026-12-02T03:50:18.298Z"), Kind: "user", Text: "hello there", MessageID: "9ea516e0"},
		{TS: ts("2026-12-02T03:50:18.588Z"), Kind: "error", Text: "Connection error.: bad port", MessageID: "a90240a7", IsError: true},
		{TS: ts("2026-12-02T03:50:18.595Z"), Kind: "system", Text: "context edit: error a90240a7 dropped from the model's context", MessageID: "9e45e24b"},
		{TS: ts("2026-12-02T03:50:20.684Z"), Kind: "error", Text: "Connection error.: bad port", MessageID: "bf85e332", IsError: true},
		{TS: ts("2026-12-02T03:50:20.685Z"), Kind: "system", Text: "context edit: error bf85e332 dropped from the model's context", MessageID: "ad0bea5b"},
		{TS: ts("2026-12-02T03:50:24.746Z"), Kind: "error", Text: "Connection error.: bad port", MessageID: "24471d81", IsError: true},
		{TS: ts("2026-12-02T03:50:24.747Z"), Kind: "system", Text: "context edit: error 24471d81 dropped from the model's context", MessageID: "1a1a0ff5"},
		{TS: ts("2026-12-02T03:50:32.753Z"), Kind: "error", Text: "Connection error.: bad port", MessageID: "473de6d9", IsError: true},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(discover.Message{}, "Raw")); diff != "" {
		t.Errorf("peek (-want +got):\n%s", diff)
	}
}
