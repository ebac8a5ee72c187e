package claude

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

// TestTokenDedup pins docs/agents/claude-code.md §3.1: the last line of each (message.id, requestId) group
// counts once.
func TestTokenDedup(t *testing.T) {
	const sid, cwd = idA, "/w"
	ts := func(s string) string { return "2026-11-20T21:00:" + s + ".000Z" }
	u := usageJSON(7, 42, 100, 1000)
	tests := []struct {
		name  string
		lines []string
		want  tokenCounts
		msgs  int
	}{
		{"three blocks repeating the final usage (2.1.197+)", []string{
			userPrompt(sid, cwd, ts("00"), "go"),
			assistantLine(sid, cwd, ts("01"), "m1", "r1", "claude-opus-4-8", thinkingBlock("hmm"), "tool_use", u),
			assistantLine(sid, cwd, ts("02"), "m1", "r1", "claude-opus-4-8", textBlock("running it"), "tool_use", u),
			assistantLine(sid, cwd, ts("03"), "m1", "r1", "claude-opus-4-8", toolUseBlock("t1", "Bash", `{"command":"ls"}`), "tool_use", u),
		}, tokenCounts{In: 7, Out: 42, CW5m: 100, CR: 1000}, 1},
		{"streaming snapshots (2.1.39): output 1, 1, 42", []string{
			assistantLine(sid, cwd, ts("01"), "m1", "r1", "claude-opus-4-8", thinkingBlock("hmm"), "", usageJSON(7, 1, 100, 1000)),
			assistantLine(sid, cwd, ts("02"), "m1", "r1", "claude-opus-4-8", textBlock("a"), "", usageJSON(7, 1, 100, 1000)),
			assistantLine(sid, cwd, ts("03"), "m1", "r1", "claude-opus-4-8", textBlock("b"), "", u),
		}, tokenCounts{In: 7, Out: 42, CW5m: 100, CR: 1000}, 1},
		{"a tool result between lines of one reply", []string{
			assistantLine(sid, cwd, ts("01"), "m1", "r1", "claude-opus-4-8", toolUseBlock("t1", "Bash", `{}`), "tool_use", u),
			toolResult(sid, cwd, ts("02"), "t1", "ok", false),
			assistantLine(sid, cwd, ts("03"), "m1", "r1", "claude-opus-4-8", toolUseBlock("t2", "Bash", `{}`), "tool_use", u),
		}, tokenCounts{In: 7, Out: 42, CW5m: 100, CR: 1000}, 1},
		{"two replies count twice", []string{
			assistantLine(sid, cwd, ts("01"), "m1", "r1", "claude-opus-4-8", textBlock("a"), "end_turn", u),
			assistantLine(sid, cwd, ts("02"), "m2", "r2", "claude-opus-4-8", textBlock("b"), "end_turn", u),
		}, tokenCounts{In: 14, Out: 84, CW5m: 200, CR: 2000}, 2},
		{"same message id, another request (a retry) counts again", []string{
			assistantLine(sid, cwd, ts("01"), "m1", "r1", "claude-opus-4-8", textBlock("a"), "end_turn", u),
			assistantLine(sid, cwd, ts("02"), "m1", "r2", "claude-opus-4-8", textBlock("a"), "end_turn", u),
		}, tokenCounts{In: 14, Out: 84, CW5m: 200, CR: 2000}, 2},
		{"lines without ids are summed", []string{
			assistantLine(sid, cwd, ts("01"), "", "", "claude-opus-4-8", textBlock("a"), "end_turn", u),
			assistantLine(sid, cwd, ts("02"), "", "", "claude-opus-4-8", textBlock("b"), "end_turn", u),
		}, tokenCounts{In: 14, Out: 84, CW5m: 200, CR: 2000}, 2},
		{"synthetic error lines are not usage", []string{
			assistantLine(sid, cwd, ts("01"), "m1", "r1", "claude-opus-4-8", textBlock("a"), "end_turn", u),
			assistantLine(sid, cwd, ts("02"), "m9", "r9", "<synthetic>", textBlock("API Error: 500"), "stop_sequence", usageJSON(0, 0, 0, 0)),
		}, tokenCounts{In: 7, Out: 42, CW5m: 100, CR: 1000}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeTranscript(t, t.TempDir(), "-w", sid, tt.lines...)
			a := parseWhole(t, p)
			if diff := cmp.Diff(tt.want, a.Tokens()); diff != "" {
				t.Errorf("tokens (-want +got):\n%s", diff)
			}
			if a.Messages != tt.msgs {
				t.Errorf("distinct messages %d, want %d", a.Messages, tt.msgs)
			}
		})
	}
}

// TestCacheWriteSplit: cache writes keep their 5m/1h split (they cost 1.25× and
// 2× input); without cache_creation they are all 5m.
func TestCacheWriteSplit(t *testing.T) {
	tests := []struct {
		usage string
		want  tokenCounts
	}{
		{`{"input_tokens":1,"output_tokens":2,"cache_creation_input_tokens":300,"cache_read_input_tokens":4,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":200}}`,
			tokenCounts{In: 1, Out: 2, CW5m: 100, CW1h: 200, CR: 4}},
		{`{"input_tokens":1,"output_tokens":2,"cache_creation_input_tokens":300,"cache_read_input_tokens":4}`,
			tokenCounts{In: 1, Out: 2, CW5m: 300, CR: 4}},
	}
	for _, tt := range tests {
		if got := parseUsage([]byte(tt.usage)); got != tt.want {
			t.Errorf("parseUsage(%s) = %+v, want %+v", tt.usage, got, tt.want)
		}
	}
}

// TestForkTotals: a fork's file holds copies of its parent's turns, so its own
// totals include them (README: 30/15 for the parent, 50/25 for the fork).
func TestForkTotals(t *testing.T) {
	env := newEnv(t, copyHome(t), nil)
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	want := map[string]discover.Tokens{idWebapp: {Input: 30, Output: 15}, idFork: {Input: 50, Output: 25}}
	for id, w := range want {
		if diff := cmp.Diff(w, tokensOf(t, got[id])); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id[:8], diff)
		}
	}
}

// TestSyntheticError: an API error line never becomes the model; a session that
// ended on one is failed with the error as detail.
func TestSyntheticError(t *testing.T) {
	const sid, cwd = idA, "/w"
	home := t.TempDir()
	writeTranscript(t, home, "-w", sid,
		userPrompt(sid, cwd, "2026-11-20T21:00:00.000Z", "hi"),
		assistantLine(sid, cwd, "2026-11-20T21:00:01.000Z", "m1", "r1", "claude-opus-4-8", textBlock("hello"), "end_turn", usageJSON(10, 5, 0, 0)),
		userPrompt(sid, cwd, "2026-11-20T21:00:02.000Z", "again"),
		`{"type":"assistant","isApiErrorMessage":true,"error":"server_error","message":{"id":"e1","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: 500 {\"type\":\"error\"}"}],"stop_reason":"stop_sequence","usage":{"input_tokens":0,"output_tokens":0}},"timestamp":"2026-11-20T21:00:03.000Z","sessionId":"`+sid+`","cwd":"/w"}`,
	)
	s := discovertest.DiscoverAll(t, testAdapter(), newEnv(t, home, &proc.Fake{}).Env)[sid]
	if s.Model != "claude-opus-4-8" || len(s.Models) != 1 {
		t.Errorf("model %q %v, want claude-opus-4-8 only", s.Model, s.Models)
	}
	want := liveness{discover.StatusFailed, discover.EvidenceTranscript, `API Error: 500 {"type":"error"}`, false, 0}
	if diff := cmp.Diff(want, livenessOf(s)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
