package meta

import (
	"time"
)

// OutboxFile holds webhook deliveries that failed and wait for a retry (sweep).
const OutboxFile = "outbox.json"

// OutboxTTL is how long a failing delivery is retried before it is dropped.
const OutboxTTL = 7 * 24 * time.Hour

// Outbox is the content of outbox.json.
type Outbox struct {
	Schema     int        `json:"schema"`
	Deliveries []Delivery `json:"deliveries"`
}

// Delivery is one webhook POST, stored exactly as it was first signed so a retry
// sends the same body, signature and delivery id (receivers can de-duplicate).
type Delivery struct {
	ID            string            `json:"id"` // X-Agentctl-Delivery
	LaunchID      string            `json:"launch_id,omitempty"`
	SessionID     string            `json:"session_id,omitempty"`
	URL           string            `json:"url"`
	Body          string            `json:"body"` // the exact signed bytes (a string: JSON re-indenting would break the signature)
	Headers       map[string]string `json:"headers,omitempty"`
	CreatedAt     time.Time         `json:"created_at"`
	Attempts      int               `json:"attempts"`
	LastError     string            `json:"last_error,omitempty"`
	NextAttemptAt time.Time         `json:"next_attempt_at"`
	// A retrying process claims the delivery (PID + start time) while it sends
	// outside the lock, so two sweeps never send it at the same time.
	ClaimPID   int    `json:"claim_pid,omitempty"`
	ClaimStart uint64 `json:"claim_start,omitempty"`
}

// UpdateOutbox is Update on outbox.json; deliveries older than OutboxTTL and not
// claimed by a live process are dropped with a warning (nothing accumulates).
func (s *Store) UpdateOutbox(fn func(*Outbox) (bool, error)) error {
	return Update(s, OutboxFile, func(o *Outbox) (bool, error) {
		changed, err := fn(o)
		if err != nil {
			return false, err
		}
		now := s.now()
		kept := o.Deliveries[:0]
		for _, d := range o.Deliveries {
			if now.Sub(d.CreatedAt) > OutboxTTL && !s.alive(d.ClaimPID, d.ClaimStart, "") {
				s.warn("webhook delivery %s to %s gave up after %d attempts (%s): %s", d.ID, d.URL, d.Attempts, OutboxTTL, d.LastError)
				changed = true
				continue
			}
			kept = append(kept, d)
		}
		o.Deliveries = kept
		if changed {
			o.Schema = Schema
		}
		return changed, nil
	})
}

// ReadOutbox returns the pending deliveries without locking.
func (s *Store) ReadOutbox() ([]Delivery, error) {
	var o Outbox
	if err := s.Read(OutboxFile, &o); err != nil {
		return nil, err
	}
	return o.Deliveries, nil
}
