package discover

import (
	"testing"
	"time"
)

func TestVerdictApply(t *testing.T) {
	last := time.Unix(100, 0)
	tests := []struct {
		v          Verdict
		pid        int
		endedAtSet bool
	}{
		{Verdict{Status: StatusRunning, Evidence: EvidenceProcess, PID: 7}, 7, false},
		{Verdict{Status: StatusUnknown, Evidence: EvidenceProcess, PID: 7}, 0, false},
		{Verdict{Status: StatusStopped, Evidence: EvidenceTranscript, PID: 7}, 0, true},
	}
	for _, tt := range tests {
		s := Session{LastActivity: &last}
		tt.v.Apply(&s)
		if s.Status != tt.v.Status || s.Evidence != tt.v.Evidence || s.PID != tt.pid || (s.EndedAt != nil) != tt.endedAtSet {
			t.Errorf("%+v applied: status %s evidence %s pid %d ended %v", tt.v, s.Status, s.Evidence, s.PID, s.EndedAt)
		}
		if s.EndedAt != nil && !s.EndedAt.Equal(last) {
			t.Errorf("EndedAt %v, want the last activity", s.EndedAt)
		}
	}
}

func TestTranscriptVerdict(t *testing.T) {
	for o, want := range map[Outcome]string{
		OutcomeNone: StatusStopped, OutcomeDone: StatusStopped, OutcomeAborted: StatusStopped,
		OutcomeError: StatusFailed, OutcomeOpen: StatusFailed, OutcomeUnknown: StatusUnknown,
	} {
		if v := TranscriptVerdict(o, "d"); v.Status != want || v.Detail != "d" {
			t.Errorf("TranscriptVerdict(%d) = %+v, want status %s", o, v, want)
		}
	}
}

// Messages as the agents recorded them (Codex 0.169 task_complete errors against
// the stub's 429 and 401; OpenCode's error name).
func TestBlockedBy(t *testing.T) {
	for msg, want := range map[string]string{
		"exceeded retry limit, last status: 429 Too Many Requests":                                                BlockedQuota,
		"unexpected status 401 Unauthorized: stub error 401 (scripted), url: http://127.0.0.1:40643/v1/responses": BlockedAuth,
		"ProviderAuthError: missing key":                                                                          BlockedAuth,
		"You've hit your usage limit":                                                                             BlockedQuota,
		"unexpected status 500 Internal Server Error":                                                             "",
		"exceeded retry limit, last status: 500 Internal Server Error":                                            BlockedAPIErrors,
		`API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`:              BlockedAPIErrors,
		// Codex 0.169 after retrying the stub's 500s for 27 s (TestCodexAPIErrorLoopBlocked).
		`error: {"message":"We’re currently experiencing high demand, which may cause temporary errors.","codexErrorInfo":"internalServerError","additionalDetails":null}`: BlockedAPIErrors,
		"API Error: 400 bad request":            "",
		"stream disconnected before completion": "",
	} {
		if got := BlockedBy(msg); got != want {
			t.Errorf("BlockedBy(%q) = %q, want %q", msg, got, want)
		}
	}
}

// An error outcome carries the blocked reason its message shows, and Apply puts
// it on the session; an open turn (crashed) never does.
func TestTranscriptVerdictBlocked(t *testing.T) {
	var s Session
	TranscriptVerdict(OutcomeError, "error: APIError: 429 Too Many Requests").Apply(&s)
	if s.Status != StatusFailed || s.BlockedReason != BlockedQuota {
		t.Errorf("429 error: %s blocked %q, want failed, quota", s.Status, s.BlockedReason)
	}
	if v := TranscriptVerdict(OutcomeOpen, "429 in a crashed turn"); v.Blocked != "" {
		t.Errorf("open turn: blocked %q, want none", v.Blocked)
	}
}
