package launch

import (
	"context"
	"os/exec"
	"syscall"
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
// lock, it releases the auto-lock and journals the end (both quick), and the slow
// half follows (complete: on-complete, the webhook). lazy means the caller is not
// the supervisor: it re-checks under the lock that no owner process is alive (the
// supervisor, when alive, knows the real exit code and finalises itself), and it
// hands the slow half to a detached process when d.Detach is set, so a command
// that only reads never waits on a hook, a webhook or a gateway. It reports
// whether this call finalised.
func (d *Deps) finalise(ctx context.Context, id string, e ended, lazy bool) (bool, error) {
	detach := lazy && d.Detach != nil
	rec, err := d.claimEnd(id, e, lazy, !detach)
	if err != nil || rec == nil {
		return false, err
	}
	removeInput(rec.Input) // a kept-open run's FIFO ends with it
	if err := locks.ReleaseLaunch(d.Store, id); err != nil {
		d.warn("release the lock of %s: %v", id, err)
	}
	d.journalEnd(rec)
	switch {
	case rec.Ending == nil:
	case detach:
		d.detach(rec)
	default:
		// The supervisor retries a failed webhook delivery itself; a lazy
		// finaliser tries once and leaves the rest to the outbox.
		if err := d.complete(ctx, id, !lazy); err != nil {
			d.warn("%v", err)
		}
	}
	return true, nil
}

// claimEnd is finalise's claim: under the flock, the first caller records the
// end and whether a slow half is owed (Ending); hold makes this process its
// holder at once, so nobody else starts it meanwhile. nil: nothing to claim.
func (d *Deps) claimEnd(id string, e ended, lazy, hold bool) (*meta.Launch, error) {
	var rec *meta.Launch
	spid, sstart := d.self()
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
		r.Ending = nil
		if !e.Startup && (r.OnComplete != "" || r.WebhookURL != "") {
			r.Ending = &meta.Ending{}
			if hold {
				r.Ending.PID, r.Ending.Start = spid, sstart
			}
		}
		c := *r
		rec = &c
		return true, nil
	})
	return rec, err
}

// complete is the slow half of finalising, outside every lock: on-complete at
// most once, then the webhook at most once (notify). Whoever calls it takes the
// Ending under the flock unless another live process holds it; a holder that
// died before starting the hook leaves both to the next caller, one that died
// while the hook ran leaves the hook marked interrupted (it may have done its
// work; running it again could do it twice).
func (d *Deps) complete(ctx context.Context, id string, retries bool) error {
	spid, sstart := d.self()
	var rec meta.Launch
	took, hook := false, false
	err := d.Store.UpdateLaunches(func(l *meta.Launches) (bool, error) {
		r := l.Find(id)
		if r == nil || r.FinalisedAt == nil || r.Ending == nil || r.Ending.DoneAt != nil {
			return false, nil
		}
		en := r.Ending
		mine := en.PID == spid && en.Start == sstart
		if en.PID != 0 && !mine && d.Store.IsAlive(en.PID, en.Start, "") {
			return false, nil
		}
		en.PID, en.Start = spid, sstart
		switch {
		case r.OnComplete == "":
		case en.HookStartedAt == nil:
			now := d.now()
			en.HookStartedAt = &now
			hook = true
		case r.OnCompleteResult == "":
			r.OnCompleteResult = "interrupted: the process running it died; not run again"
		}
		rec = *r
		took = true
		return true, nil
	})
	if err != nil || !took {
		return err
	}
	if hook {
		res, herr := d.RunHook(ctx, "on-complete", rec.OnComplete, rec.Cwd, HookEnv(&rec, rec.ExitCode), rec.Log)
		if herr != nil {
			d.warn("%v", herr)
		}
		d.setField(id, func(r *meta.Launch) { r.OnCompleteResult = res })
	}
	if err := d.notify(ctx, id, retries); err != nil {
		d.warn("%v", err)
	}
	d.setField(id, func(r *meta.Launch) {
		if r.Ending != nil {
			now := d.now()
			r.Ending.DoneAt = &now
		}
	})
	return nil
}

// owed reports whether a finalised record's slow half is still to do and
// nobody alive is doing it (its holder died, or the handoff never started).
func (d *Deps) owed(r *meta.Launch) bool {
	return r.FinalisedAt != nil && r.Ending != nil && r.Ending.DoneAt == nil && !d.holding(r)
}

// holding reports whether a live process holds the record's Ending.
func (d *Deps) holding(r *meta.Launch) bool {
	return r.Ending != nil && r.Ending.PID != 0 && d.Store.IsAlive(r.Ending.PID, r.Ending.Start, "")
}

// detach hands a record's slow half to d.Detach; when that fails, the work
// stays owed and the next command (or sweep) picks it up.
func (d *Deps) detach(r *meta.Launch) {
	if err := d.Detach(r); err != nil {
		d.warn("finalise %s in the background: %v; `agentctl sweep` will finish it", r.ID, err)
	}
}

// Detached returns a Deps.Detach that starts `self __finalise --state DIR
// <launch-id>` the way Start starts the supervisor — its own session, output
// appended to the launch log, the command's environment (the hooks') — and does
// not wait for it: it outlives the command that started it.
func (d *Deps) Detached(self string) func(r *meta.Launch) error {
	return func(r *meta.Launch) error {
		cmd := &exec.Cmd{
			Path:        self,
			Args:        []string{self, "__finalise", "--state", d.Store.Dir, r.ID},
			Env:         d.Environ,
			SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		}
		if r.Log != "" {
			if f, err := meta.OpenAppend(r.Log, d.Store.Warn); err == nil {
				defer f.Close()
				cmd.Stdout, cmd.Stderr = f, f
			}
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		// Reap it if this process lives on (list --watch, tests); a CLI command
		// simply exits and the finaliser carries on.
		go func() { _ = cmd.Wait() }()
		return nil
	}
}

// FinishLaunch is `agentctl __finalise <launch-id>`: the slow half of one
// launch's end, handed off by a command that reads. For an OpenClaw run whose
// supervisor died it first asks the gateway whether the run ended (only the
// gateway can tell), holding the record's Ending meanwhile so that other
// commands do not start a second check.
func (d *Deps) FinishLaunch(ctx context.Context, id string) error {
	r := d.record(id)
	if r == nil {
		return nil
	}
	if r.FinalisedAt != nil {
		return d.complete(ctx, id, true)
	}
	if r.Gateway == nil || r.ConfirmedAt == nil || d.Store.Owned(r) || !d.holdCheck(id) {
		return nil
	}
	code, o, ok := d.gatewayEnded(ctx, r)
	if !ok {
		return nil
	}
	rec, err := d.claimEnd(id, ended{ExitCode: &code, Outcome: o}, true, true)
	if err != nil || rec == nil {
		return err
	}
	if err := locks.ReleaseLaunch(d.Store, id); err != nil {
		d.warn("release the lock of %s: %v", id, err)
	}
	d.journalEnd(rec)
	if rec.Ending == nil {
		return nil
	}
	return d.complete(ctx, id, true)
}

// holdCheck takes an unfinalised record's Ending for a gateway check unless a
// live process holds it.
func (d *Deps) holdCheck(id string) bool {
	spid, sstart := d.self()
	took := false
	err := d.Store.UpdateLaunches(func(l *meta.Launches) (bool, error) {
		r := l.Find(id)
		if r == nil || r.FinalisedAt != nil || d.holding(r) {
			return false, nil
		}
		r.Ending = &meta.Ending{PID: spid, Start: sstart}
		took = true
		return true, nil
	})
	if err != nil {
		d.warn("launch record %s: %v", id, err)
	}
	return took
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
	if r.ExitReason != "" {
		sess["exit_reason"] = r.ExitReason
	}
	ev := meta.Event{Type: typ, Adapter: r.Adapter, SessionID: r.CurrentSessionID(), Session: sess, Meta: r.Meta, LaunchID: r.ID}
	if typ == meta.EventBudgetExceeded && r.Breach != nil {
		ev.Data = breachData(r)
	}
	if err := d.Store.AppendEvent(ev); err != nil {
		d.warn("events journal: %v", err)
	}
}

// FinaliseDead finalises every launch record whose agent is verifiably dead, whose
// supervisor (and launcher) are gone too, and which nobody finalised — the
// supervisor was killed, or the machine rebooted. Each is finalised once, under
// the flock, with exit_code null; on-complete and the webhook fire once, outside
// the lock — in a detached process when d.Detach is set, else here (one webhook
// attempt; failures wait in the outbox for sweep). A slow half that is owed and
// that nobody alive is doing (its process died) is taken up again. Expired
// records are evicted on the way. Every command that reads sessions calls it; it
// only takes the lock when there is something to do.
func (d *Deps) FinaliseDead(ctx context.Context) ([]string, error) {
	recs, err := d.Store.ReadLaunches()
	if err != nil {
		return nil, err
	}
	var done []string
	for i := range recs {
		r := &recs[i]
		if d.owed(r) {
			if d.Detach != nil {
				d.detach(r)
			} else if err := d.complete(ctx, r.ID, false); err != nil {
				d.warn("%v", err)
			}
			continue
		}
		if r.FinalisedAt != nil || d.Store.Owned(r) {
			continue
		}
		e := ended{}
		switch {
		case r.Gateway != nil && r.ConfirmedAt != nil && d.Detach != nil:
			// Only the gateway can tell whether the run ended: ask it from a
			// detached process (FinishLaunch), unless one is asking already.
			if !d.holding(r) {
				d.detach(r)
			}
			continue
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
		case r.Background && r.JobID != "" && r.ClaudeRoot != "":
			// Claude's job record says how it ended (docs/agents/claude-code.md §4.5).
			code, o := bgEnd(r.ClaudeRoot, r.JobID, r.StopRequested != nil)
			if code >= 0 {
				e.ExitCode = &code
			}
			e.Outcome = o
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
