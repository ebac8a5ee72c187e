package opencode

import "fmt"

// turnState is what the latest message says about the session's turn
// (docs/agents/opencode.md §4.2).
type turnState int

const (
	turnEmpty   turnState = iota // no messages at all
	turnOpen                     // a reply is being (or was being, when killed) written
	turnDone                     // the assistant finished
	turnAborted                  // MessageAbortedError: stopped through the API
	turnError                    // the assistant ended in another error
	turnUnknown                  // the latest message is of a kind we do not know
)

// turnOf reads the latest message. detail is the human reason.
func turnOf(m lastMessage) (turnState, string) {
	switch m.Role {
	case "":
		return turnEmpty, "no messages"
	case "user":
		return turnOpen, "user message with no reply yet"
	case "assistant":
	default:
		// An unknown role (a newer OpenCode): its state is not ours to guess.
		return turnUnknown, fmt.Sprintf("latest message has unknown role %q", m.Role)
	}
	switch {
	case m.ErrName == "MessageAbortedError":
		return turnAborted, "aborted"
	case m.ErrName != "":
		d := "error: " + m.ErrName
		if m.ErrMsg != "" {
			d += ": " + m.ErrMsg
		}
		return turnError, d
	case m.Completed == 0:
		return turnOpen, "assistant message open (no time.completed)"
	case m.Finish == "tool-calls" || m.Finish == "unknown":
		// OpenCode's loop goes on after these: the next step's message follows.
		return turnOpen, "between steps (finish=" + m.Finish + ")"
	case m.Finish != "":
		return turnDone, "done (finish=" + m.Finish + ")"
	}
	return turnDone, "done (completed)"
}
