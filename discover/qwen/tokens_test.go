package qwen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

const sid = "0b7f2a58-1c3d-4e5f-8a9b-0c1d2e3f4a5b"

// line builds a chat record of sid in /w with the given type and extra fields.
func line(ts, typ, extra string) string {
	return fmt.Sprintf(`{"uuid":"u-%s","parentUuid":null,"sessionId":%q,"timestamp":"2026-12-01T10:00:%s.000Z","type":%q,"cwd":"/w","version":"0.24.4","gitBranch":"main"%s}`,
		ts, sid, ts, typ, extra)
}

func prompt(ts, text string) string {
	return line(ts, "user", fmt.Sprintf(`,"provenance":"real_user","message":{"role":"user","parts":[{"text":%q}]}`, text))
}

// apiResponse is the telemetry of one API response (subagent "" for a main turn).
func apiResponse(ts, id string, in, out, cached, thoughts int, subagent string) string {
	sub := ""
	if subagent != "" {
		sub = fmt.Sprintf(`,"subagent_name":%q,"subagent_type":%q`, subagent, subagent)
	}
	return line(ts, "system", fmt.Sprintf(`,"provenance":"system","subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_response","response_id":%q,"model":"qwen3-coder-plus","status_code":200,"input_token_count":%d,"output_token_count":%d,"cached_content_token_count":%d,"thoughts_token_count":%d,"total_token_count":%d%s}}`,
		id, in, out, cached, thoughts, in+out, sub))
}

// reply is an assistant text record repeating its response's usage.
func reply(ts, text string, in, out, cached, thoughts int) string {
	return line(ts, "assistant", fmt.Sprintf(`,"provenance":"assistant_output","model":"qwen3-coder-plus","message":{"role":"model","parts":[{"text":%q}]},"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"thoughtsTokenCount":%d,"totalTokenCount":%d,"cachedContentTokenCount":%d}`,
		text, in, out, thoughts, in+out, cached))
}

func apiError(ts string, status int, msg, subagent string) string {
	sub := ""
	if subagent != "" {
		sub = fmt.Sprintf(`,"subagent_name":%q`, subagent)
	}
	return line(ts, "system", fmt.Sprintf(`,"provenance":"system","subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_error","response_id":"","model":"qwen3-coder-plus","error_message":%q,"error_type":"X","status_code":%d%s}}`,
		msg, status, sub))
}

func parseLines(t *testing.T, lines ...string) *summary {
	t.Helper()
	s, err := parse(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEachResponseOnce: the assistant record repeats its response's usage in
// usageMetadata (never added), and a response id seen twice counts once.
func TestEachResponseOnce(t *testing.T) {
	s := parseLines(t,
		prompt("00", "go"),
		apiResponse("01", "r1", 1000, 50, 100, 0, ""),
		reply("02", "done", 1000, 50, 100, 0),
		apiResponse("03", "r1", 1000, 50, 100, 0, ""), // the same response again
	)
	want := discover.Tokens{Input: 900, Output: 50, CacheRead: 100}
	if d := cmp.Diff(want, s.Tokens()); d != "" {
		t.Errorf("tokens (-want +got):\n%s", d)
	}
	if s.Responses != 1 {
		t.Errorf("responses %d, want 1", s.Responses)
	}
}

// TestCachedInsidePromptReasoningInsideOutput: prompt counts include the
// cached tokens (input = prompt − cached) and completion counts include the
// reasoning (thoughts are never added on top).
func TestCachedInsidePromptReasoningInsideOutput(t *testing.T) {
	s := parseLines(t, prompt("00", "go"), apiResponse("01", "r1", 1500, 60, 200, 5, ""), reply("02", "ok", 1500, 60, 200, 5))
	want := discover.Tokens{Input: 1300, Output: 60, CacheRead: 200}
	if d := cmp.Diff(want, s.Tokens()); d != "" {
		t.Errorf("tokens (-want +got):\n%s", d)
	}
}

// TestSubagentShare: the memory extractor's requests (subagent_name set, no
// assistant record) are in the session's tokens and reported apart as
// extra.tokens_subagents, as Claude's subagents are.
func TestSubagentShare(t *testing.T) {
	home := t.TempDir()
	writeChat(t, home, "/w", sid,
		prompt("00", "go"),
		apiResponse("01", "r1", 1000, 50, 100, 0, ""),
		reply("02", "done", 1000, 50, 100, 0),
		apiResponse("03", "r2", 3000, 60, 301, 0, "managed-auto-memory-extractor"),
	)
	env, _ := testEnv(t, home, nil, nil)
	s := discoverAll(t, New(), env)[sid]
	if d := cmp.Diff(&discover.Tokens{Input: 900 + 2699, Output: 110, CacheRead: 401}, s.Tokens); d != "" {
		t.Errorf("tokens (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"tokens_subagents": discover.Tokens{Input: 2699, Output: 60, CacheRead: 301}}, s.Extra); d != "" {
		t.Errorf("extra (-want +got):\n%s", d)
	}
	// A subagent's failure does not fail an answered turn.
	writeChat(t, home, "/w", sid, prompt("00", "go"), reply("02", "done", 1, 1, 0, 0), apiError("03", 429, "429 quota exceeded", "managed-auto-memory-extractor"))
	if s := discoverAll(t, New(), env)[sid]; s.Status != discover.StatusStopped || s.BlockedReason != "" {
		t.Errorf("subagent error after the reply: %s %q, want stopped", s.Status, s.BlockedReason)
	}
}

// TestBadLinesSkipped: a corrupt line, a record with a damaged count and a
// torn last line are skipped; the rest of the file still counts.
func TestBadLinesSkipped(t *testing.T) {
	home := t.TempDir()
	p := writeChat(t, home, "/w", sid,
		prompt("00", "go"),
		`{"uuid":"x","type":"system",,, not json`,
		apiResponse("01", "r1", 1000, 50, 100, 0, ""),
		strings.Replace(apiResponse("02", "r2", 7, 7, 0, 0, ""), `"input_token_count":7`, `"input_token_count":"lots"`, 1),
		strings.Replace(apiResponse("03", "r3", 7, 7, 0, 0, ""), `"output_token_count":7`, `"output_token_count":-7`, 1),
		reply("04", "done", 1000, 50, 100, 0),
	)
	discovertest.AppendFile(t, p, apiResponse("05", "r4", 99999, 9, 0, 0, "")[:80]) // torn: no newline yet
	env, warns := testEnv(t, home, nil, nil)
	s := discoverAll(t, New(), env)[sid]
	if d := cmp.Diff(&discover.Tokens{Input: 900, Output: 50, CacheRead: 100}, s.Tokens); d != "" {
		t.Errorf("tokens (-want +got):\n%s", d)
	}
	if !s.StartedAt.Equal(*tsPtr("2026-12-01T10:00:00Z")) {
		t.Errorf("started %v, want the first record's time", s.StartedAt)
	}
	if s.Prompt != "go" || s.Status != discover.StatusStopped || s.LastActivity.Format("05") != "04" {
		t.Errorf("prompt %q status %s last %v", s.Prompt, s.Status, s.LastActivity)
	}
	if len(*warns) != 1 || !strings.Contains((*warns)[0], "2 api_response record(s)") {
		t.Errorf("warnings %q, want one naming the 2 damaged records", *warns)
	}
}

// TestBlockedByStatusCode: the HTTP status Qwen recorded decides the blocked
// reason, whatever the provider's message says.
func TestBlockedByStatusCode(t *testing.T) {
	for _, tc := range []struct {
		status int
		msg    string
		want   string
	}{
		{429, "slow down", discover.BlockedQuota},
		{401, "who are you", discover.BlockedAuth},
		{403, "nope", discover.BlockedAuth},
		{500, "internal", ""},
	} {
		s := parseLines(t, prompt("00", "go"), apiError("01", tc.status, tc.msg, ""))
		if o, _ := s.outcome(); o != discover.OutcomeError {
			t.Errorf("%d: outcome %v, want error", tc.status, o)
		}
		if got := s.blocked(); got != tc.want {
			t.Errorf("%d %q: blocked %q, want %q", tc.status, tc.msg, got, tc.want)
		}
	}
	// An error that a retry then answered leaves the turn done.
	s := parseLines(t, prompt("00", "go"), apiError("01", 429, "slow down", ""), reply("02", "ok", 1, 1, 0, 0))
	if o, _ := s.outcome(); o != discover.OutcomeDone {
		t.Errorf("answered after a retry: outcome %v, want done", o)
	}
}
