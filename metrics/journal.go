package metrics

import (
	"time"

	"github.com/agentctl/agentctl/meta"
)

// End is one launched session's end as the journal recorded it.
type End struct {
	LaunchID string
	Adapter  string
	Outcome  string
	// Duration is from launch to end; -1 when the journal line does not say
	// when the session started.
	Duration time.Duration
}

// Ends reads the journal and returns one End per launch that has ended, oldest
// first. Only launches count: `events --follow` may report sessions agentctl did
// not start, and those have no launch id. A launch id seen twice (a finaliser
// retried after a crash between its journal line and its record) counts once,
// with its last line.
func Ends(read func(fn func(ev meta.Event, raw []byte) bool) error) ([]End, error) {
	var ends []End
	at := map[string]int{}
	err := read(func(ev meta.Event, _ []byte) bool {
		if ev.LaunchID == "" || (ev.Type != meta.EventStopped && ev.Type != meta.EventFailed) {
			return true
		}
		e := End{LaunchID: ev.LaunchID, Adapter: ev.Adapter, Outcome: outcome(ev), Duration: duration(ev)}
		if e.Adapter == "" {
			e.Adapter = "unknown"
		}
		if i, ok := at[e.LaunchID]; ok {
			ends[i] = e
			return true
		}
		at[e.LaunchID] = len(ends)
		ends = append(ends, e)
		return true
	})
	return ends, err
}

// outcome classifies an end line the way the finaliser chose its type
// (launch/finalise.go journalEnd): session.failed is a failure, a stop asked
// for with `agentctl stop` is "stopped", otherwise the exit code decides.
func outcome(ev meta.Event) string {
	if ev.Type == meta.EventFailed {
		return OutcomeFailed
	}
	if b, _ := ev.Session["stopped_by_agentctl"].(bool); b {
		return OutcomeStopped
	}
	switch code := ev.Session["exit_code"].(type) {
	case float64:
		if code == 0 {
			return OutcomeCompleted
		}
		return OutcomeFailed
	case int:
		if code == 0 {
			return OutcomeCompleted
		}
		return OutcomeFailed
	}
	return OutcomeUnknown
}

// duration is ended_at − started_at from the line's session object; the line's
// own timestamp stands in for a missing ended_at.
func duration(ev meta.Event) time.Duration {
	start, ok := timeField(ev.Session, "started_at")
	if !ok {
		return -1
	}
	end, ok := timeField(ev.Session, "ended_at")
	if !ok {
		end = ev.Timestamp
	}
	if end.Before(start) {
		return -1
	}
	return end.Sub(start)
}

func timeField(m map[string]any, k string) (time.Time, bool) {
	s, _ := m[k].(string)
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
