package copilot

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentctl/agentctl/discover"
)

// B of the fixture: a prompt, an answer, a resume, a prompt that made one
// shell tool call, and the answer after it.
func TestPeekResumedSessionWithToolCall(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil, nil)
	s := discoverAll(t, env)[idB]
	got, err := New().Peek(context.Background(), env, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []discover.Message{
		{Kind: "user", Text: "summarise the README for a new contributor"},
		{Kind: "assistant", Text: "The README explains setup."},
		{Kind: "system", Text: "resumed"},
		{Kind: "user", Text: "RUN_TOOL: run echo hi and tell me what it printed"},
		{Kind: "assistant", Tools: []discover.ToolCall{{ID: "toolu_stub568aa403", Name: "bash", Summary: "echo hi", HasResult: true, Result: "hi"}}},
		{Kind: "assistant", Text: "It printed hi."},
	}
	ignore := cmpopts.IgnoreFields(discover.Message{}, "TS", "MessageID", "UUID", "Raw")
	if d := cmp.Diff(want, got, ignore); d != "" {
		t.Errorf("peek (-want +got):\n%s", d)
	}
	if len(got[4].Raw) != 2 {
		t.Errorf("the tool call's raw records: %d, want the call and its result", len(got[4].Raw))
	}
	last2, err := New().Peek(discover.WithoutRaw(context.Background()), env, s, 2)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want[4:], last2, ignore); d != "" || last2[1].Raw != nil {
		t.Errorf("peek -n 2 (-want +got):\n%s", d)
	}
}

func TestPeekError(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil, nil)
	got, err := New().Peek(context.Background(), env, discover.Session{ID: idD}, 1) // no Path: found by id
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Kind != "error" || !got[0].IsError || got[0].Text[:21] != "Authentication failed" {
		t.Errorf("peek of the 401 run: %+v", got)
	}
	if _, err := New().Peek(context.Background(), env, discover.Session{ID: "nope"}, 1); !errors.Is(err, discover.ErrNoSession) {
		t.Errorf("unknown session: %v", err)
	}
}
