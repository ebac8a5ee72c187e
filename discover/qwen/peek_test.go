package qwen

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentctl/agentctl/discover"
)

// item is what a peek line shows.
type item struct {
	Kind, Text string
	Tools      []discover.ToolCall
	IsError    bool
}

func peekItems(t *testing.T, id string, n int) []item {
	t.Helper()
	env, _ := testEnv(t, fixtureHome, nil, nil)
	a := New()
	s := discoverAll(t, a, env)[id]
	msgs, err := a.Peek(context.Background(), env, s, n)
	if err != nil {
		t.Fatalf("Peek: %v", err)
	}
	var out []item
	for _, m := range msgs {
		out = append(out, item{m.Kind, m.Text, m.Tools, m.IsError})
	}
	return out
}

// TestPeekResumedWithTool: the resumed session renders both prompts, the
// replies, and the shell call with the output the CLI showed attached.
func TestPeekResumedWithTool(t *testing.T) {
	got := peekItems(t, "29bc557d-a856-4500-8649-f043838f16dc", 0)
	want := []item{
		{Kind: "user", Text: "summarise the README for a new contributor"},
		{Kind: "assistant", Text: "The README explains setup."},
		{Kind: "user", Text: "RUN_TOOL: run echo hi and tell me what it printed"},
		{Kind: "assistant", Tools: []discover.ToolCall{{ID: "call_stub92a1b6fd", Name: "run_shell_command", Summary: "echo hi", HasResult: true, Result: "hi"}}},
		{Kind: "assistant", Text: "It printed hi."},
	}
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("peek (-want +got):\n%s", d)
	}
	if last := peekItems(t, "29bc557d-a856-4500-8649-f043838f16dc", 2); len(last) != 2 || last[1].Text != "It printed hi." {
		t.Errorf("peek -n 2: %+v", last)
	}
}

// TestPeekAPIError: a failed run shows its prompt and the API error.
func TestPeekAPIError(t *testing.T) {
	got := peekItems(t, "558b233b-3147-4452-99e6-e4fc9c3d5b79", 0)
	want := []item{
		{Kind: "user", Text: "fix the invoice rounding bug"},
		{Kind: "error", IsError: true, Text: "429 You exceeded your current quota, please check your plan and billing details. Your quota will reset at 2030-01-01T00:00:00Z."},
	}
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("peek (-want +got):\n%s", d)
	}
}

// TestPeekNoTranscript: a session with nothing written yet has no messages.
func TestPeekNoTranscript(t *testing.T) {
	env, _ := testEnv(t, t.TempDir(), nil, nil)
	_, err := New().Peek(context.Background(), env, discover.Session{ID: sid}, 5)
	if !errors.Is(err, discover.ErrNoSession) {
		t.Errorf("err %v, want ErrNoSession", err)
	}
}
