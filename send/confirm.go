package send

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// Same reports whether a user record's text is msg: the whole text, not a
// prefix. Line ends are compared as \n and the whitespace around the text is
// left out (agents trim what they are given; a file ends with a newline).
func Same(recorded, msg string) bool { return norm(recorded) == norm(msg) }

func norm(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
}

// Key names one transcript item across reads.
func Key(m discover.Message) string {
	switch {
	case m.MessageID != "":
		return "m:" + m.MessageID
	case m.UUID != "":
		return "u:" + m.UUID
	}
	return "t:" + m.TS.Format(time.RFC3339Nano) + "|" + m.Kind + "|" + m.Text
}

// Earlier is the set of user records with this text the transcript holds
// before the send: none of them can confirm it.
func Earlier(msgs []discover.Message, msg string) map[string]bool {
	out := map[string]bool{}
	for _, m := range msgs {
		if m.Kind == "user" && Same(m.Text, msg) {
			out[Key(m)] = true
		}
	}
	return out
}

// Recorded finds the user record that confirms a send: its text is msg, it
// was not there before, and it is not older than the send (to the second:
// some agents record whole seconds).
func Recorded(msgs []discover.Message, msg string, earlier map[string]bool, sent time.Time) (discover.Message, bool) {
	floor := sent.Truncate(time.Second)
	for _, m := range msgs {
		if m.Kind != "user" || !Same(m.Text, msg) || earlier[Key(m)] {
			continue
		}
		if !m.TS.IsZero() && m.TS.Before(floor) {
			continue
		}
		return m, true
	}
	return discover.Message{}, false
}

// Count is how many user records hold msg.
func Count(msgs []discover.Message, msg string) int {
	n := 0
	for _, m := range msgs {
		if m.Kind == "user" && Same(m.Text, msg) {
			n++
		}
	}
	return n
}

// ErrNotRecorded: the agent did not record the message before the deadline.
var ErrNotRecorded = errors.New("not recorded")

// Waiter polls a session's transcript until it records a message.
type Waiter struct {
	// Peek reads the session's latest items (it may fail while the transcript
	// does not exist yet: that is retried).
	Peek  func(ctx context.Context) ([]discover.Message, error)
	Now   func() time.Time
	Every time.Duration // between reads
}

// Wait returns the record that confirms msg (Recorded) once the transcript
// has it, or ErrNotRecorded at deadline.
func (w Waiter) Wait(ctx context.Context, msg string, earlier map[string]bool, sent, deadline time.Time) (discover.Message, error) {
	for {
		msgs, err := w.Peek(ctx)
		if err == nil {
			if m, ok := Recorded(msgs, msg, earlier, sent); ok {
				return m, nil
			}
		}
		left := deadline.Sub(w.Now())
		if left <= 0 {
			return discover.Message{}, ErrNotRecorded
		}
		select {
		case <-ctx.Done():
			return discover.Message{}, ctx.Err()
		case <-time.After(min(w.Every, left)):
		}
	}
}
