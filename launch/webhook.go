package launch

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// Payload is the session webhook body (README "Hooks and webhooks").
type Payload struct {
	HookType        string            `json:"hook_type"`
	SessionID       string            `json:"session_id"`
	Adapter         string            `json:"adapter"`
	Cwd             string            `json:"cwd"`
	DurationSeconds int64             `json:"duration_seconds"`
	ExitStatus      *int              `json:"exit_status"`
	Summary         string            `json:"summary"`
	Meta            map[string]string `json:"meta"`
	Timestamp       string            `json:"timestamp"`
	// ExitReason says why agentctl ended the run (budget:duration|cost|tokens),
	// Budget the figures of the breach.
	ExitReason string         `json:"exit_reason,omitempty"`
	Budget     map[string]any `json:"budget,omitempty"`
}

// PayloadFor builds the webhook body of a finalised launch record.
func PayloadFor(r *meta.Launch, now time.Time) Payload {
	p := Payload{HookType: "session.stopped", SessionID: r.CurrentSessionID(), Adapter: r.Adapter, Cwd: r.Cwd,
		ExitStatus: r.ExitCode, Summary: firstRunes(r.Prompt, 200), Meta: r.Meta, Timestamp: now.UTC().Format(time.RFC3339)}
	if p.Meta == nil {
		p.Meta = map[string]string{}
	}
	p.ExitReason = r.ExitReason
	if r.Breach != nil {
		p.Budget = breachData(r)
	}
	end := now
	if r.EndedAt != nil {
		end = *r.EndedAt
	}
	start := r.LaunchedAt
	if r.ConfirmedAt != nil {
		start = *r.ConfirmedAt
	}
	p.DurationSeconds = int64(math.Max(0, math.Round(end.Sub(start).Seconds())))
	return p
}

func firstRunes(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

// Sign is the lowercase hex HMAC-SHA256 of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// NewDelivery encodes and signs a payload once; retries send exactly these bytes.
func NewDelivery(url, secret string, v any, now time.Time) (meta.Delivery, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return meta.Delivery{}, err
	}
	d := meta.Delivery{ID: NewUUID4(), URL: url, Body: string(body), CreatedAt: now.UTC(), NextAttemptAt: now.UTC(),
		Headers: map[string]string{
			"Content-Type":         "application/json",
			"User-Agent":           "agentctl",
			"X-Agentctl-Timestamp": strconv.FormatInt(now.Unix(), 10),
		}}
	d.Headers["X-Agentctl-Delivery"] = d.ID
	if secret != "" {
		sig := Sign(secret, body)
		d.Headers["X-Agentctl-Signature"] = sig
		d.Headers["X-Signature"] = "sha256=" + sig
		d.Headers["X-Hub-Signature-256"] = "sha256=" + sig
	}
	return d, nil
}

// send makes one attempt (10 s timeout); any 2xx is success.
func (d *Deps) send(ctx context.Context, del meta.Delivery) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, del.URL, strings.NewReader(del.Body))
	if err != nil {
		return err
	}
	for k, v := range del.Headers {
		req.Header.Set(k, v)
	}
	client := d.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", del.URL, resp.Status)
	}
	return nil
}

// deliver sends with retries (WebhookBackoff) and parks a delivery that still
// fails in the outbox, for sweep to retry. Delivery is at least once: the
// delivery is put in the outbox, claimed by this process, before the first
// attempt, and taken out only once a receiver answered 2xx — a process killed
// mid-POST leaves it for the next sweep, which sends the same body, signature
// and X-Agentctl-Delivery id (receivers de-duplicate on it).
func (d *Deps) deliver(ctx context.Context, del meta.Delivery, retries bool) error {
	if err := d.trusted(); err != nil {
		return fmt.Errorf("webhook not sent: %w", err)
	}
	pid, start := d.self()
	claimed := del
	claimed.ClaimPID, claimed.ClaimStart = pid, start
	// Parking can fail (a read-only state dir): the send goes ahead regardless.
	parked := d.Store.UpdateOutbox(func(o *meta.Outbox) (bool, error) {
		o.Deliveries = append(o.Deliveries, claimed)
		return true, nil
	}) == nil
	err := d.send(ctx, del)
	del.Attempts++
	if retries {
		for _, wait := range d.WebhookBackoff {
			if err == nil {
				break
			}
			if d.Sleep(ctx, wait) != nil {
				break
			}
			err = d.send(ctx, del)
			del.Attempts++
		}
	}
	if err == nil {
		if parked {
			if oerr := d.Store.UpdateOutbox(func(o *meta.Outbox) (bool, error) {
				return removeDelivery(o, del.ID), nil
			}); oerr != nil {
				d.warn("webhook %s delivered, but not taken out of outbox.json (%v): `agentctl sweep` will send it again", del.URL, oerr)
			}
		}
		return nil
	}
	del.LastError = err.Error()
	del.NextAttemptAt = d.now().Add(time.Minute)
	if oerr := d.Store.UpdateOutbox(func(o *meta.Outbox) (bool, error) {
		removeDelivery(o, del.ID)
		o.Deliveries = append(o.Deliveries, del)
		return true, nil
	}); oerr != nil {
		return fmt.Errorf("webhook %s failed (%v) and could not be queued: %w", del.URL, err, oerr)
	}
	return fmt.Errorf("webhook %s failed after %d attempts (%v); queued in outbox.json for `agentctl sweep`", del.URL, del.Attempts, err)
}

// removeDelivery drops the delivery id from o; it reports whether it was there.
func removeDelivery(o *meta.Outbox, id string) bool {
	kept := o.Deliveries[:0]
	for _, x := range o.Deliveries {
		if x.ID != id {
			kept = append(kept, x)
		}
	}
	found := len(kept) < len(o.Deliveries)
	o.Deliveries = kept
	return found
}

// RetryOutbox retries due deliveries once each (sweep calls it). A delivery is
// claimed under the outbox lock by this process before it is sent outside the
// lock, so concurrent sweeps never send one twice at the same time; a claim whose
// process died (killed mid-POST) is sent again — at least once, same delivery id. It returns
// how many were delivered and how many are still pending.
func (d *Deps) RetryOutbox(ctx context.Context) (delivered, pending int, err error) {
	if err := d.trusted(); err != nil {
		return 0, 0, fmt.Errorf("outbox not retried: %w", err)
	}
	pid, start := d.self()
	now := d.now()
	var due []meta.Delivery
	err = d.Store.UpdateOutbox(func(o *meta.Outbox) (bool, error) {
		changed := false
		for i := range o.Deliveries {
			x := &o.Deliveries[i]
			if x.NextAttemptAt.After(now) || d.Store.IsAlive(x.ClaimPID, x.ClaimStart, "") {
				continue
			}
			x.ClaimPID, x.ClaimStart = pid, start
			due = append(due, *x)
			changed = true
		}
		return changed, nil
	})
	if err != nil {
		return 0, 0, err
	}
	results := map[string]error{}
	for _, x := range due {
		results[x.ID] = d.send(ctx, x)
	}
	err = d.Store.UpdateOutbox(func(o *meta.Outbox) (bool, error) {
		kept := o.Deliveries[:0]
		for _, x := range o.Deliveries {
			if serr, ok := results[x.ID]; ok && x.ClaimPID == pid {
				x.ClaimPID, x.ClaimStart = 0, 0
				x.Attempts++
				if serr == nil {
					delivered++
					continue
				}
				x.LastError = serr.Error()
				back := time.Duration(math.Min(float64(time.Hour), float64(time.Minute)*math.Pow(2, float64(x.Attempts))))
				x.NextAttemptAt = d.now().Add(back)
			}
			kept = append(kept, x)
		}
		o.Deliveries = kept
		pending = len(kept)
		return len(results) > 0, nil
	})
	return delivered, pending, err
}
