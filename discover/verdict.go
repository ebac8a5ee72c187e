package discover

import "strings"

// Verdict is a session's status and what it rests on, as an adapter's liveness
// rules decide it.
type Verdict struct {
	Status, Evidence, Detail string
	Blocked                  string // BlockedQuota, BlockedAuth or ""
	PID                      int
	Inferred                 bool
}

// VerdictOf is the verdict s's status came from (Apply's inverse): what
// `status --explain` explains, so its words can only say what the status says.
func VerdictOf(s *Session) Verdict {
	return Verdict{Status: s.Status, Evidence: s.Evidence, Detail: s.EvidenceDetail, Blocked: s.BlockedReason,
		PID: s.PID, Inferred: s.Inferred}
}

// Apply sets s's status from v. The PID is kept only with a status that says
// the process is alive, unknown excepted (a PID is shown only when verified);
// a session that is not alive ended at its last activity (the same pointer:
// no copy per session).
func (v Verdict) Apply(s *Session) {
	s.Status, s.Evidence, s.EvidenceDetail, s.Inferred = v.Status, v.Evidence, v.Detail, v.Inferred
	s.BlockedReason = v.Blocked
	if v.Status == StatusUnknown {
		return
	}
	if Alive(v.Status) {
		s.PID = v.PID
		return
	}
	s.EndedAt = s.LastActivity // times are never changed through these pointers
}

// Outcome is how a session's latest turn stands, as the agent's own files tell.
type Outcome int

const (
	OutcomeNone    Outcome = iota // no turn at all
	OutcomeOpen                   // a turn started and not finished
	OutcomeDone                   // the agent finished its reply
	OutcomeAborted                // stopped on request (interrupt, API call)
	OutcomeError                  // ended in an error
	OutcomeUnknown                // the latest record is of a kind not known here
)

// TranscriptVerdict is the status of a session no live process is found
// hosting, from how its latest turn stands; detail says why. A turn still open
// with nobody writing it means the agent died mid-turn (killed outside agentctl:
// a stop agentctl made is on its launch record, which the core folds in).
func TranscriptVerdict(o Outcome, detail string) Verdict {
	switch o {
	case OutcomeNone, OutcomeDone, OutcomeAborted:
		return Verdict{Status: StatusStopped, Evidence: EvidenceTranscript, Detail: detail}
	case OutcomeError:
		// The error the agent recorded may be the user's to fix (quota, login).
		return Verdict{Status: StatusFailed, Evidence: EvidenceTranscript, Detail: detail, Blocked: BlockedBy(detail)}
	case OutcomeOpen:
		return Verdict{Status: StatusFailed, Evidence: EvidenceTranscript, Detail: detail}
	}
	return Verdict{Status: StatusUnknown, Evidence: EvidenceNone, Detail: detail}
}

// ErrorOutcome is a turn that ended on the error msg the agent recorded
// ("error" when it recorded none).
func ErrorOutcome(msg string) (Outcome, string) {
	if msg == "" {
		msg = "error"
	}
	return OutcomeError, msg
}

// Blocked reasons: the session needs the user to act on the agent's account
// before any turn can succeed (README "How status is decided").
const (
	BlockedQuota = "quota" // quota, usage or rate limit exhausted (HTTP 429)
	BlockedAuth  = "auth"  // login or API key refused (HTTP 401/403)
	// BlockedAPIErrors: the provider's API kept failing until the agent gave up
	// retrying (5xx, overloaded, retry limit): no new turn will fare better until
	// the provider recovers or the user switches model or provider.
	BlockedAPIErrors = "api-error"
)

// BlockedBy classifies the error an agent recorded for its latest turn: quota,
// auth, api-error or "" (any other error, which is not the user's to fix).
// api-error is an error loop: every agent retries a failing provider itself and
// records a turn-ending error only once it gives up (Codex "exceeded retry
// limit", or on 500s its "experiencing high demand" error with codexErrorInfo
// internalServerError; Claude Code's "API Error: 5xx" after its retries), so such a record
// stands for a run of failures, not one. The agents write
// the provider's HTTP status into their messages ("429 Too Many Requests",
// "401 Unauthorized"), so a message is enough; docs/agents/*.md show each shape.
func BlockedBy(msg string) string {
	m := strings.ToLower(msg)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(m, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("429", "too many requests", "rate limit", "rate_limit", "ratelimit", "quota", "usage limit", "credit balance"):
		return BlockedQuota
	case has("401", "403 forbidden", "unauthorized", "unauthenticated", "authentication", "invalid api key",
		"invalid_api_key", "invalid x-api-key", "not logged in", "please run /login", "providerautherror"):
		return BlockedAuth
	case has("exceeded retry limit", "retries exhausted", "max retries exceeded", "api error: 5", "overloaded_error", "overloaded",
		"internalservererror", "experiencing high demand"):
		return BlockedAPIErrors
	}
	return ""
}
