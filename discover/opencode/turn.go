package opencode

import (
	"fmt"

	"github.com/agentctl/agentctl/discover"
)

// turnOf reads what the latest message says about the session's turn
// (docs/agents/opencode.md §4.2): no messages, a reply being (or being, when killed)
// written, finished, aborted (MessageAbortedError: through the API), another
// error, or a kind of message not known here. detail is the human reason.
func turnOf(m lastMessage) (discover.Outcome, string) {
	switch m.Role {
	case "":
		return discover.OutcomeNone, "no messages"
	case "user":
		return discover.OutcomeOpen, "user message with no reply yet"
	case "assistant":
	case "idle":
		// OpenCode 2: the session went idle, with its execution's outcome.
		switch m.Idle {
		case "succeeded":
			return discover.OutcomeDone, "idle (succeeded)"
		case "interrupted":
			return discover.OutcomeAborted, "idle (interrupted)"
		case "failed":
			d := "idle (failed)"
			if m.ErrName != "" {
				d = "error: " + m.ErrName
			}
			if m.ErrMsg != "" {
				d += ": " + m.ErrMsg
			}
			return discover.OutcomeError, d
		}
		return discover.OutcomeUnknown, fmt.Sprintf("idle with unknown outcome %q", m.Idle)
	default:
		// An unknown role (a newer OpenCode): its state is not ours to guess.
		return discover.OutcomeUnknown, fmt.Sprintf("latest message has unknown role %q", m.Role)
	}
	switch {
	case m.ErrName == "MessageAbortedError" || m.ErrName == "aborted": // 1.x, 2
		return discover.OutcomeAborted, "aborted"
	case m.ErrName != "":
		d := "error: " + m.ErrName
		if m.ErrMsg != "" {
			d += ": " + m.ErrMsg
		}
		return discover.OutcomeError, d
	case m.Completed == 0:
		return discover.OutcomeOpen, "assistant message open (no time.completed)"
	case m.Finish == "tool-calls" || m.Finish == "unknown":
		// OpenCode's loop goes on after these: the next step's message follows.
		return discover.OutcomeOpen, "between steps (finish=" + m.Finish + ")"
	case m.Finish != "":
		return discover.OutcomeDone, "done (finish=" + m.Finish + ")"
	}
	return discover.OutcomeDone, "done (completed)"
}
