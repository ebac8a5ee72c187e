package launch

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// StopTarget is a verified agent process: a PID only ever comes with its exact
// start time (and boot id), from a launch record or the agent's own registry.
type StopTarget struct {
	SessionID string
	PID       int
	Start     uint64
	BootID    string
	// Group: signal the process group (agentctl launches: pgid == pid via setsid).
	// Foreign sessions get kill(pid) only: their group is the user's shell job.
	Group    bool
	PGID     int
	LaunchID string
	// IntToPIDOnly sends SIGINT to the PID alone even for a group: an npm shim
	// forwards it, and a second copy through the group would abort harder
	// (docs/agents/codex.md §8).
	IntToPIDOnly bool
}

// StopOptions tune the escalation.
type StopOptions struct {
	Force bool // escalate to SIGKILL sooner
	// Steps overrides the escalation (tests); nil: SIGINT 3 s, SIGTERM 5 s,
	// SIGKILL 2 s, or with Force SIGINT 0.5 s, SIGTERM 1 s, SIGKILL 2 s.
	Steps []StopStep
	Poll  time.Duration // 0: 100 ms
}

// poll is how often the exit is checked.
func (o StopOptions) poll() time.Duration {
	if o.Poll <= 0 {
		return 100 * time.Millisecond
	}
	return o.Poll
}

// markStopRequested records on launch id, if any, that a stop was asked for
// now; StopRequested keeps the first ask.
func (d *Deps) markStopRequested(id string) {
	if id == "" {
		return
	}
	now := d.now()
	d.setField(id, func(r *meta.Launch) {
		if r.StopRequested == nil {
			r.StopRequested = &now
		}
		r.Stop = &meta.StopInfo{RequestedAt: now}
	})
}

// StopStep is one signal and how long to wait for the exit after it.
type StopStep struct {
	Signal syscall.Signal
	Wait   time.Duration
}

// StopResult is what happened, truthfully.
type StopResult struct {
	AlreadyGone  bool // the verified process was not alive (or its start time differed) before any signal
	ExitObserved bool
	Signals      []string
	LastSignal   string
	Elapsed      time.Duration
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return s.String()
}

// Stop ends a verified agent process (docs/agents/claude-code.md §8): it snapshots the
// descendants, then escalates, re-verifying PID + start time immediately before
// every signal — a PID whose start time does not match is never signalled — and
// polls until the exit is observed. Descendant process groups that survive (the
// Bash tool setsid's its commands) get SIGTERM, then SIGKILL. For launched
// sessions the request and its outcome are recorded and the auto-lock released.
func (d *Deps) Stop(ctx context.Context, t StopTarget, o StopOptions) (StopResult, error) {
	var res StopResult
	steps := o.Steps
	if steps == nil {
		steps = []StopStep{{syscall.SIGINT, 3 * time.Second}, {syscall.SIGTERM, 5 * time.Second}, {syscall.SIGKILL, 2 * time.Second}}
		if o.Force {
			steps = []StopStep{{syscall.SIGINT, 500 * time.Millisecond}, {syscall.SIGTERM, time.Second}, {syscall.SIGKILL, 2 * time.Second}}
		}
	}
	poll := o.poll()
	p, ok := d.verify(t.PID, t.Start, t.BootID)
	if !ok {
		res.AlreadyGone = true
		return res, nil
	}
	// Descendants, with their identities, before the first signal: after it they
	// may be reparented away from the agent.
	var kids []proc.Process
	if d.Snapshot != nil {
		kids = proc.Descendants(d.Snapshot(), t.PID)
	}
	begin := time.Now()
	d.markStopRequested(t.LaunchID)
	group := t.Group && t.PGID == t.PID && p.PGID == t.PID
	for _, st := range steps {
		if _, ok := d.verify(t.PID, t.Start, t.BootID); !ok {
			res.ExitObserved = true
			break
		}
		target := t.PID
		if group && !(t.IntToPIDOnly && st.Signal == syscall.SIGINT) {
			target = -t.PID
		}
		if err := d.Kill(target, st.Signal); err != nil {
			if err == syscall.EPERM {
				return res, fmt.Errorf("not permitted to signal pid %d (owned by another user)", t.PID)
			}
			if err != syscall.ESRCH {
				return res, fmt.Errorf("signal pid %d: %w", t.PID, err)
			}
		}
		res.Signals = append(res.Signals, signalName(st.Signal))
		res.LastSignal = signalName(st.Signal)
		deadline := time.Now().Add(st.Wait)
		for {
			if _, ok := d.verify(t.PID, t.Start, t.BootID); !ok {
				res.ExitObserved = true
				break
			}
			if !time.Now().Before(deadline) {
				break
			}
			if err := d.Sleep(ctx, poll); err != nil {
				return res, err
			}
		}
		if res.ExitObserved {
			break
		}
	}
	res.Elapsed = time.Since(begin)
	if res.ExitObserved {
		d.cleanupGroups(ctx, kids, t.PID, poll)
	}
	if t.LaunchID != "" {
		d.setField(t.LaunchID, func(r *meta.Launch) {
			if r.Stop == nil {
				r.Stop = &meta.StopInfo{RequestedAt: d.now()}
			}
			r.Stop.Signals = append([]string(nil), res.Signals...)
			r.Stop.ExitObserved = res.ExitObserved
		})
		if res.ExitObserved {
			if err := locks.ReleaseLaunch(d.Store, t.LaunchID); err != nil {
				d.warn("release the lock of %s: %v", t.LaunchID, err)
			}
		}
	}
	return res, nil
}

// cleanupGroups ends descendants that are still alive with their recorded start
// time and now sit in another process group than the agent's (which the group
// signal already reached): SIGTERM, then SIGKILL after 2 s. Their group is read
// fresh, since a tool may have called setsid after the snapshot.
func (d *Deps) cleanupGroups(ctx context.Context, kids []proc.Process, agentPID int, poll time.Duration) {
	alive := func() []proc.Process {
		var out []proc.Process
		for _, k := range kids {
			if p, ok := d.verify(k.PID, k.StartTicks, ""); ok && p.PGID != agentPID {
				out = append(out, p)
			}
		}
		return out
	}
	signal := func(left []proc.Process, sig syscall.Signal) {
		done := map[int]bool{}
		for _, k := range left {
			if _, ok := d.verify(k.PID, k.StartTicks, ""); !ok {
				continue
			}
			if k.PGID == k.PID {
				if !done[k.PGID] {
					done[k.PGID] = true
					_ = d.Kill(-k.PGID, sig)
				}
				continue
			}
			_ = d.Kill(k.PID, sig)
		}
	}
	left := alive()
	if len(left) == 0 {
		return
	}
	signal(left, syscall.SIGTERM)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if left = alive(); len(left) == 0 {
			return
		}
		if d.Sleep(ctx, poll) != nil {
			return
		}
	}
	signal(left, syscall.SIGKILL)
}
