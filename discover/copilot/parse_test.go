package copilot

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
)

const testID = "0c0c0c0c-1111-4222-8333-444444444444"

func parseLines(t *testing.T, lines ...string) *summary {
	t.Helper()
	s, err := parseEvents(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Event lines shaped as Copilot 1.0.102 writes them (trimmed to the fields read).
const (
	evStartLine  = `{"type":"session.start","data":{"sessionId":"` + testID + `","copilotVersion":"1.0.102","startTime":"2026-12-01T10:00:00.000Z","selectedModel":"claude-sonnet-4.5","context":{"cwd":"/w","branch":"main"}},"id":"e1","timestamp":"2026-12-01T10:00:00.100Z"}`
	evUserLine   = `{"type":"user.message","data":{"content":"do it","messageId":"u1"},"id":"e2","timestamp":"2026-12-01T10:00:01.000Z"}`
	evTurnStart  = `{"type":"assistant.turn_start","data":{"turnId":"0"},"id":"e3","timestamp":"2026-12-01T10:00:01.100Z"}`
	evTurnEnd    = `{"type":"assistant.turn_end","data":{"turnId":"0"},"id":"e6","timestamp":"2026-12-01T10:00:02.100Z"}`
	evAnswerLine = `{"type":"assistant.message","data":{"model":"claude-sonnet-4.5","content":"done","toolRequests":[]},"id":"e5","timestamp":"2026-12-01T10:00:02.000Z"}`
	// The stub's disjoint 1900 in + 500 read + 11 write, as Copilot records it.
	evUsage1 = `{"type":"session.usage_record","data":{"usage":{"model":"claude-sonnet-4.5","inputTokens":2411,"outputTokens":90,"cacheReadTokens":500,"cacheWriteTokens":11,"reasoningTokens":null,"apiCallId":"msg_1","accounting":{"usageId":"msg_1"}}},"id":"e4","timestamp":"2026-12-01T10:00:01.900Z"}`
	evUsage2 = `{"type":"session.usage_record","data":{"usage":{"model":"claude-sonnet-4.5","inputTokens":3512,"outputTokens":30,"cacheReadTokens":600,"cacheWriteTokens":12,"apiCallId":"msg_2","accounting":{"usageId":"msg_2"}}},"id":"e8","timestamp":"2026-12-01T10:05:01.900Z"}`
	// Cumulative: after the first request, then after both.
	evShutdown1  = `{"type":"session.shutdown","data":{"shutdownType":"routine","modelMetrics":{"claude-sonnet-4.5":{"requests":{"count":1},"usage":{"inputTokens":2411,"outputTokens":90,"cacheReadTokens":500,"cacheWriteTokens":11}}}},"id":"e7","timestamp":"2026-12-01T10:00:03.000Z"}`
	evResumeLine = `{"type":"session.resume","data":{"selectedModel":"claude-sonnet-4.5","context":{"cwd":"/w"}},"id":"e7b","timestamp":"2026-12-01T10:05:00.000Z"}`
	evShutdown2  = `{"type":"session.shutdown","data":{"shutdownType":"routine","modelMetrics":{"claude-sonnet-4.5":{"requests":{"count":2},"usage":{"inputTokens":5923,"outputTokens":120,"cacheReadTokens":1100,"cacheWriteTokens":23}}}},"id":"e9","timestamp":"2026-12-01T10:05:03.000Z"}`
)

// Trap: inputTokens includes the cache reads AND writes; agentctl's input is
// what is left.
func TestUsageInputIncludesCaches(t *testing.T) {
	s := parseLines(t, evStartLine, evUserLine, evUsage1, evAnswerLine)
	want := discover.Tokens{Input: 1900, Output: 90, CacheRead: 500, CacheWrite: 11}
	if d := cmp.Diff(want, s.tokens()); d != "" {
		t.Errorf("tokens (-want +got):\n%s", d)
	}
}

// Trap: every session.shutdown is cumulative over the whole session (across
// resumes): never added to the usage records, nor to each other.
func TestShutdownTotalsNeverAdded(t *testing.T) {
	lines := []string{evStartLine, evUserLine, evUsage1, evAnswerLine, evShutdown1, evResumeLine, evUserLine, evUsage2, evAnswerLine, evShutdown2}
	s := parseLines(t, lines...)
	want := discover.Tokens{Input: 1900 + 2900, Output: 120, CacheRead: 1100, CacheWrite: 23}
	if d := cmp.Diff(want, s.tokens()); d != "" {
		t.Errorf("records and shutdowns (-want +got):\n%s", d)
	}
	// Without usage records, the LATEST shutdown is the total: not their sum.
	var noRecords []string
	for _, l := range lines {
		if !strings.Contains(l, "usage_record") {
			noRecords = append(noRecords, l)
		}
	}
	s = parseLines(t, noRecords...)
	if d := cmp.Diff(want, s.tokens()); d != "" {
		t.Errorf("shutdowns only (-want +got):\n%s", d)
	}
	if got := s.Slots.Sum(); !got.Zero() {
		t.Errorf("shutdown fallback put %v in slots (no timestamps of its requests)", got)
	}
}

// Each request is counted once by accounting.usageId, should a record repeat.
func TestUsageRecordCountedOncePerUsageID(t *testing.T) {
	s := parseLines(t, evStartLine, evUserLine, evUsage1, evUsage1, evAnswerLine)
	if s.Usage != 1 || s.tokens().Input != 1900 {
		t.Errorf("usage records %d, input %d; want 1, 1900", s.Usage, s.tokens().Input)
	}
	if d := cmp.Diff(s.tokens(), s.Slots.Sum()); d != "" {
		t.Errorf("slots do not sum to the tokens:\n%s", d)
	}
}

// One bad line or value never breaks the parse: the rest still counts.
func TestCorruptLinesSkipped(t *testing.T) {
	negative := strings.Replace(evUsage2, `"outputTokens":30`, `"outputTokens":-30`, 1)
	stringy := strings.Replace(strings.Replace(evUsage2, `"outputTokens":30`, `"outputTokens":"30"`, 1), "msg_2", "msg_3", 2)
	body := strings.Join([]string{
		evStartLine,
		`{"type":"user.message","data":{"content":"do it"`, // torn mid-line
		evUserLine,
		`not json at all`,
		`{"type":"session.start","data":"oops"}`,
		negative, // an impossible count: left out, never clamped
		stringy,  // a count of the wrong type: left out
		evUsage1,
		evAnswerLine,
		evTurnEnd,
	}, "\n") + "\n" + evUsage2[:40] // an unterminated last line is still being written
	s, err := parseEvents(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if s.tokens() != (discover.Tokens{Input: 1900, Output: 90, CacheRead: 500, CacheWrite: 11}) {
		t.Errorf("tokens %v", s.tokens())
	}
	if s.BadUsage != 2 || s.Prompt != "do it" || s.Cwd != "/w" || s.model() != "claude-sonnet-4.5" {
		t.Errorf("bad usage %d, prompt %q, cwd %q, model %q", s.BadUsage, s.Prompt, s.Cwd, s.model())
	}
	if o, _ := s.outcome(); o != discover.OutcomeDone {
		t.Errorf("outcome %v", o)
	}
}

// session.error gives blocked_reason; the latest prompt decides.
func TestSessionErrorStatus(t *testing.T) {
	e429 := `{"type":"session.error","data":{"errorType":"rate_limit","message":"Failed to get response from the AI model; retried 5 times Last error: 429 You exceeded your current quota","statusCode":429},"id":"x1","timestamp":"2026-12-01T10:00:09.000Z"}`
	e401 := `{"type":"session.error","data":{"errorType":"authentication","message":"Authentication failed with provider at http://127.0.0.1:1 (HTTP 401).","statusCode":401},"id":"x2","timestamp":"2026-12-01T10:00:09.000Z"}`
	// An auth error whose text happens to say "quota": the type and status decide.
	eAuthQuota := strings.Replace(e401, "Authentication failed", "Authentication failed (quota project unset)", 1)
	later := `{"type":"user.message","data":{"content":"again"},"id":"u9","timestamp":"2026-12-01T10:01:00.000Z"}`
	for _, tc := range []struct {
		name            string
		lines           []string
		status, blocked string
	}{
		{"429", []string{evStartLine, evUserLine, evTurnStart, evTurnEnd, e429, evShutdown1}, "failed", "quota"},
		{"401", []string{evStartLine, evUserLine, evTurnStart, evTurnEnd, e401, evShutdown1}, "failed", "auth"},
		{"401 saying quota", []string{evStartLine, evUserLine, e401[:0] + eAuthQuota}, "failed", "auth"},
		{"answered after the error", []string{evStartLine, evUserLine, e429, later, evUsage1, evAnswerLine, evTurnEnd}, "stopped", ""},
		{"error before any prompt", []string{evStartLine, e429}, "stopped", ""},
		{"killed mid-turn", []string{evStartLine, evUserLine, evTurnStart}, "failed", ""},
		{"killed between tool call and its answer", []string{evStartLine, evUserLine, evTurnStart,
			`{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"t1","name":"bash","arguments":{"command":"ls"}}]},"id":"a1","timestamp":"2026-12-01T10:00:02.000Z"}`, evTurnEnd}, "failed", ""},
		{"clean exit mid-turn", []string{evStartLine, evUserLine, evTurnStart, evShutdown1}, "stopped", ""},
		{"no prompt", []string{evStartLine}, "stopped", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := testEnv(t, homeWith(t, testID, tc.lines...), nil, nil)
			s := discoverAll(t, env)[testID]
			if s.Status != tc.status || s.BlockedReason != tc.blocked {
				t.Errorf("status %s blocked %q (%s); want %s %q", s.Status, s.BlockedReason, s.EvidenceDetail, tc.status, tc.blocked)
			}
		})
	}
}

func TestResumeFacts(t *testing.T) {
	resumeElsewhere := strings.Replace(evResumeLine, `"cwd":"/w"`, `"cwd":"/w/sub"`, 1)
	gpt := strings.Replace(strings.Replace(evUsage2, "claude-sonnet-4.5", "gpt-4.1", 1), "msg_2", "msg_9", 2)
	gpt = strings.Replace(gpt, "10:05:01.900Z", "10:20:01.900Z", 1)
	env, _ := testEnv(t, homeWith(t, testID, evStartLine, evUserLine, evUsage1, evAnswerLine, evShutdown1, resumeElsewhere, evUserLine, gpt, evShutdown2), nil, nil)
	s := discoverAll(t, env)[testID]
	if s.Cwd != "/w" || s.LastCwd != "/w/sub" || s.Model != "gpt-4.1" || !cmp.Equal(s.Models, []string{"claude-sonnet-4.5", "gpt-4.1"}) {
		t.Errorf("cwd %q last %q model %q models %v", s.Cwd, s.LastCwd, s.Model, s.Models)
	}
	if s.GitBranch != "main" || s.AgentVersion != "1.0.102" || s.StartedAt == nil || !s.StartedAt.Equal(ts("2026-12-01T10:00:00Z")) {
		t.Errorf("branch %q version %q started %v", s.GitBranch, s.AgentVersion, s.StartedAt)
	}
	if len(s.Slots) != 2 {
		t.Errorf("slots %v: want one per 15-minute slot with requests", s.Slots)
	}
}

// Events from the 1.0.102 schema (schemas/session-events.schema.json), not seen
// in a recording: abort, a crash shutdown, permission requests, sub-agent usage.
func TestSchemaOnlyEvents(t *testing.T) {
	abort := `{"type":"abort","data":{"reason":"user_abort"},"id":"ab","timestamp":"2026-12-01T10:00:03.000Z"}`
	crash := `{"type":"session.shutdown","data":{"shutdownType":"error","errorReason":"out of memory","modelMetrics":{}},"id":"sd","timestamp":"2026-12-01T10:00:04.000Z"}`
	e403 := `{"type":"session.error","data":{"errorType":"authorization","message":"403 Forbidden: not entitled","statusCode":403},"id":"x3","timestamp":"2026-12-01T10:00:09.000Z"}`
	for _, tc := range []struct {
		name            string
		lines           []string
		status, blocked string
	}{
		{"aborted turn, process killed", []string{evStartLine, evUserLine, evTurnStart, abort}, "stopped", ""},
		{"crash shutdown", []string{evStartLine, evUserLine, evUsage1, evAnswerLine, evTurnEnd, crash}, "failed", ""},
		{"403: the message decides", []string{evStartLine, evUserLine, e403}, "failed", "auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := testEnv(t, homeWith(t, testID, tc.lines...), nil, nil)
			s := discoverAll(t, env)[testID]
			if s.Status != tc.status || s.BlockedReason != tc.blocked {
				t.Errorf("status %s blocked %q (%s); want %s %q", s.Status, s.BlockedReason, s.EvidenceDetail, tc.status, tc.blocked)
			}
		})
	}

	sub := strings.Replace(strings.Replace(evUsage2, `"apiCallId"`, `"initiator":"sub-agent","parentToolCallId":"t1","apiCallId"`, 1), "msg_2", "msg_s", 2)
	env, _ := testEnv(t, homeWith(t, testID, evStartLine, evUserLine, evUsage1, sub, evAnswerLine, evTurnEnd), nil, nil)
	s := discoverAll(t, env)[testID]
	if s.Tokens == nil || s.Tokens.Input != 1900+2900 || s.Extra["tokens_subagents"] != (discover.Tokens{Input: 2900, Output: 30, CacheRead: 600, CacheWrite: 12}) {
		t.Errorf("tokens %v, extra %v: sub-agent requests count in the session's tokens and in tokens_subagents", s.Tokens, s.Extra)
	}
}
