package launch

import (
	"context"
	"time"

	"github.com/agentctl/agentctl/jsonl"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// ended is what is known about a run's end when it is finalised.
type ended struct {
	ExitCode *int
	Outcome  Outcome
	// Startup: the agent never confirmed a session; no hooks or webhook fire for
	// a launch that `agentctl launch` already reported as failed.
	Startup bool
}

// finalise closes a launch record exactly once: under the launches.json flock it
// claims the record (finalised_at) and stores the outcome; then, outside every
// lock, it releases the auto-lock, journals the end, runs on-complete and delivers
// the webhook. lazy means the caller is not the supervisor: it re-checks under the
// lock that no owner process is alive (the supervisor, when alive, knows the
// real exit code and finalises itself). It reports whether this call finalised.
func (d *Deps) finalise(ctx context.Context, id string, e ended, lazy bool) (bool, error) {
	var rec meta.Launch
	claimed := false
	err := d.Store.UpdateLaunches(func(l *meta.Launches) (bool, error) {
		r := l.Find(id)
		if r == nil || r.FinalisedAt != nil {
			return false, nil
		}
		if lazy && d.Store.Owned(r) {
			return false, nil
		}
		now := d.now()
		if r.EndedAt == nil {
			r.EndedAt = &now
		}
		if r.ExitCode == nil && e.ExitCode != nil {
			c := *e.ExitCode
			r.ExitCode = &c
		}
		if r.Failure == "" {
			r.Failure = e.Outcome.Failure()
		}
		if e.Outcome.Result != nil {
			r.Result = e.Outcome.Result
		}
		r.FinalisedAt = &now
		rec = *r
		claimed = true
		return true, nil
	})
	if err != nil || !claimed {
		return false, err
	}
	if err := locks.ReleaseLaunch(d.Store, id); err != nil {
		d.warn("release the lock of %s: %v", id, err)
	}
	d.journalEnd(&rec)
	if e.Startup {
		return true, nil
	}
	if rec.OnComplete != "" {
		res, herr := d.RunHook(ctx, "on-complete", rec.OnComplete, rec.Cwd, HookEnv(&rec, rec.ExitCode), rec.Log)
		if herr != nil {
			d.warn("%v", herr)
		}
		d.setField(id, func(r *meta.Launch) { r.OnCompleteResult = res })
	}
	if err := d.notify(ctx, id, !lazy); err != nil {
		d.warn("%v", err)
	}
	return true, nil
}

// setField updates one record under the lock (best effort: a warning on failure).
func (d *Deps) setField(id string, fn func(r *meta.Launch)) {
	err := d.Store.UpdateLaunches(func(l *meta.Launches) (bool, error) {
		r := l.Find(id)
		if r == nil {
			return false, nil
		}
		fn(r)
		return true, nil
	})
	if err != nil {
		d.warn("update launch record %s: %v", id, err)
	}
}

// notify delivers the session webhook at most once: the notified_at mark is set
// under the flock before the POST, so a second finaliser (or a crash and retry)
// never sends it again; a failed delivery waits in the outbox instead.
func (d *Deps) notify(ctx context.Context, id string, retries bool) error {
	var rec meta.Launch
	claimed := false
	err := d.Store.UpdateLaunches(func(l *meta.Launches) (bool, error) {
		r := l.Find(id)
		if r == nil || r.NotifiedAt != nil || r.WebhookURL == "" {
			return false, nil
		}
		now := d.now()
		r.NotifiedAt = &now
		rec = *r
		claimed = true
		return true, nil
	})
	if err != nil || !claimed {
		return err
	}
	del, err := NewDelivery(rec.WebhookURL, rec.WebhookSecret, PayloadFor(&rec, d.now()), d.now())
	if err != nil {
		return err
	}
	del.LaunchID, del.SessionID = rec.ID, rec.CurrentSessionID()
	return d.deliver(ctx, del, retries)
}

// journalEnd appends session.stopped or session.failed.
func (d *Deps) journalEnd(r *meta.Launch) {
	typ := meta.EventStopped
	if r.StopRequested == nil && (r.Failure != "" || (r.ExitCode != nil && *r.ExitCode != 0)) {
		typ = meta.EventFailed
	}
	d.journal(typ, r)
}

func (d *Deps) journal(typ string, r *meta.Launch) {
	sess := map[string]any{"id": r.CurrentSessionID(), "adapter": r.Adapter, "cwd": r.Cwd, "launch_id": r.ID, "kind": r.Kind,
		"started_at": r.LaunchedAt.UTC().Format(time.RFC3339)}
	model := r.Model
	if model == "" && r.Init != nil {
		model = r.Init.Model
	}
	for k, v := range map[string]string{"model": model, "group": r.Group, "branch": r.Branch, "log": r.Log, "failure": r.Failure} {
		if v != "" {
			sess[k] = v
		}
	}
	if r.PID > 0 {
		sess["pid"] = r.PID
	}
	if r.EndedAt != nil {
		sess["ended_at"] = r.EndedAt.UTC().Format(time.RFC3339)
		sess["exit_code"] = r.ExitCode // null when unknown
	}
	if r.StopRequested != nil {
		sess["stopped_by_agentctl"] = true
	}
	ev := meta.Event{Type: typ, Adapter: r.Adapter, SessionID: r.CurrentSessionID(), Session: sess, Meta: r.Meta, LaunchID: r.ID}
	if err := d.Store.AppendEvent(ev); err != nil {
		d.warn("events journal: %v", err)
	}
}

// FinaliseDead finalises every launch record whose agent is verifiably dead, whose
// supervisor (and launcher) are gone too, and which nobody finalised — the
// supervisor was killed, or the machine rebooted. Each is finalised once, under
// the flock, with exit_code null; on-complete and the webhook fire once, outside
// the lock (one webhook attempt here; failures wait in the outbox for sweep).
// Expired records are evicted on the way. Every command that reads sessions calls
// it; it only takes the lock when there is something to do.
func (d *Deps) FinaliseDead(ctx context.Context) ([]string, error) {
	recs, err := d.Store.ReadLaunches()
	if err != nil {
		return nil, err
	}
	var done []string
	for i := range recs {
		r := &recs[i]
		if r.FinalisedAt != nil || d.Store.Owned(r) {
			continue
		}
		e := ended{}
		switch {
		case r.Gateway != nil && r.ConfirmedAt != nil:
			// No process to see die: only the gateway knows whether the run
			// ended. Unreachable now → leave the record for the next command.
			code, o, ok := d.gatewayEnded(ctx, r)
			if !ok {
				continue
			}
			e.ExitCode, e.Outcome = &code, o
		case r.PID == 0:
			e.Startup = true
			e.Outcome = Outcome{Class: "aborted", Message: "the supervisor exited before the agent started; see " + r.Log}
		default:
			drv, derr := DriverFor(r.Adapter)
			if derr == nil {
				e.Outcome = drv.Classify(logTail(r.Log, r.LogOffset), -1, r.StopRequested != nil)
			}
			e.Startup = r.ConfirmedAt == nil
		}
		ok, err := d.finalise(ctx, r.ID, e, true)
		if err != nil {
			return done, err
		}
		if ok {
			done = append(done, r.ID)
		}
	}
	if err := d.Store.EvictLaunches(); err != nil {
		return done, err
	}
	return done, nil
}

// logTail is the complete lines of the last MiB of a run's log from offset on
// (what Classify reads; nil when the log is unreadable).
func logTail(path string, offset int64) [][]byte {
	lines, _, _, _ := jsonl.TailFrom(path, offset, 1<<20)
	return lines
}
