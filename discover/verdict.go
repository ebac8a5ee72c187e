package discover

// Verdict is a session's status and what it rests on, as an adapter's liveness
// rules decide it.
type Verdict struct {
	Status, Evidence, Detail string
	PID                      int
	Inferred                 bool
}

// Apply sets s's status from v. The PID is kept only with a status that says
// the process is alive, unknown excepted (a PID is shown only when verified);
// a session that is not alive ended at its last activity (the same pointer:
// no copy per session).
func (v Verdict) Apply(s *Session) {
	s.Status, s.Evidence, s.EvidenceDetail, s.Inferred = v.Status, v.Evidence, v.Detail, v.Inferred
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
	case OutcomeError, OutcomeOpen:
		return Verdict{Status: StatusFailed, Evidence: EvidenceTranscript, Detail: detail}
	}
	return Verdict{Status: StatusUnknown, Evidence: EvidenceNone, Detail: detail}
}
