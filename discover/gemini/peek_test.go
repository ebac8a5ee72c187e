package gemini

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Peek of the resumed fixture session: the context and the tool-result user
// message are not items; the tool call shows its command and its result.
func TestPeekFixtureResumed(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	s := discoverAll(t, env)[idB]
	got, err := New().Peek(context.Background(), env, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []discover.Message{
		{Kind: "user", Text: "summarise the README for a new contributor", MessageID: "b65b4ffe-e48b-4710-9c69-a8a0cac78305"},
		{Kind: "assistant", Text: "The README explains setup.", MessageID: "ac638438-bcbd-4ae4-90cf-1142ac71e97b"},
		{Kind: "user", Text: "RUN_TOOL: run echo hi and tell me what it printed", MessageID: "75f5fe25-29be-4a64-8b62-7d234e41dfbf"},
		{Kind: "assistant", MessageID: "da5b7ae5-84da-4999-9dee-c4cf5d2b6f81", Tools: []discover.ToolCall{{
			ID: "run_shell_command__run_shell_command_1796164018480_0", Name: "run_shell_command",
			Summary: "echo hi", HasResult: true, Result: "hi"}}},
		{Kind: "assistant", Text: "It printed hi.", MessageID: "d3827648-c9da-4ec5-b356-4ac25862ba17"},
	}
	opts := cmpopts.IgnoreFields(discover.Message{}, "TS", "Raw")
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got[0].TS.IsZero() || len(got[0].Raw) != 1 {
		t.Errorf("first item: ts %v, %d raw records", got[0].TS, len(got[0].Raw))
	}
	last, err := New().Peek(context.Background(), env, s, 2)
	if err != nil || len(last) != 2 || last[1].Text != "It printed hi." {
		t.Errorf("peek -n 2 = %+v, %v", last, err)
	}
}

// A failed one-shot's prompt was rolled back by Gemini itself: nothing to show.
func TestPeekRolledBack(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	s := discoverAll(t, env)["542d084f-34b7-4b9d-93c9-3b8752e98320"]
	if _, err := New().Peek(context.Background(), env, s, 0); err != discover.ErrNoSession {
		t.Errorf("err = %v, want ErrNoSession", err)
	}
}

// Peek without a path finds the file by id.
func TestPeekByID(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	got, err := New().Peek(context.Background(), env, discover.Session{ID: idE}, 1)
	if err != nil || len(got) != 1 || got[0].Text != "The build uses make and go." {
		t.Errorf("peek = %+v, %v", got, err)
	}
}

// A tool call without resultDisplay shows its functionResponse output, without
// the <untrusted_context> wrapper; a failed call is an error.
func TestPeekToolResultFromResponse(t *testing.T) {
	msgs, err := replayFrom(context.Background(), strings.NewReader(strings.Join([]string{
		header(id1, "2026-12-01T10:00:00.000Z"),
		userMsg("u1", "2026-12-01T10:00:01.000Z", "look"),
		`{"id":"g1","timestamp":"2026-12-01T10:00:02.000Z","type":"gemini","content":"","toolCalls":[` +
			`{"id":"c1","name":"read_file","args":{"absolute_path":"/w/main.go"},"status":"success","result":[{"functionResponse":{"id":"c1","name":"read_file","response":{"output":"<untrusted_context>\nOutput: package main\n</untrusted_context>"}}}]},` +
			`{"id":"c2","name":"run_shell_command","args":{"command":"false"},"status":"error","result":[{"functionResponse":{"id":"c2","name":"run_shell_command","response":{"error":"exit 1"}}}]}]}`,
	}, "\n")+"\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	got := render(msgs, false)
	want := []discover.ToolCall{
		{ID: "c1", Name: "read_file", Summary: "/w/main.go", HasResult: true, Result: "package main"},
		{ID: "c2", Name: "run_shell_command", Summary: "false", HasResult: true, IsError: true, Result: "exit 1"},
	}
	if len(got) != 2 {
		t.Fatalf("got %d items, want 2", len(got))
	}
	if diff := cmp.Diff(want, got[1].Tools); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
