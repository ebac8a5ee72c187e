package launch

import (
	"context"
	"time"

	"github.com/agentctl/agentctl/gateway"
	"github.com/agentctl/agentctl/meta"
)

// Budget polling: quick while the session's totals move, backing off to
// budgetPollMax while they do not. Each poll reads only what the agent appended
// since the last one (the adapter's one-session path and the parse index).
var (
	budgetPollMin = 500 * time.Millisecond
	budgetPollMax = 5 * time.Second
)

// usageOf is what the run of r has taken so far: its session's own totals (less
// what a resumed session had before this run) and the time since the agent
// confirmed its session (runStart).
// ok is false when the session's totals could not be read (the duration still
// counts).
func (d *Deps) usageOf(ctx context.Context, r *meta.Launch) (meta.Usage, bool) {
	u := meta.Usage{Elapsed: d.now().Sub(runStart(r)).Seconds()}
	if d.Totals == nil || r.CurrentSessionID() == "" {
		return u, false
	}
	t, err := d.Totals(ctx, r)
	if err != nil {
		return u, false
	}
	u.Tokens, u.CostUSD = t.Tokens, t.CostUSD
	if b := r.BudgetBase; b != nil {
		u.Tokens -= b.Tokens
		if u.CostUSD != nil && b.CostUSD != nil {
			c := *u.CostUSD - *b.CostUSD
			u.CostUSD = &c
		}
	}
	return u, true
}

// runStart is when --max-duration starts counting: when the agent confirmed its
// session (a cold start on a loaded machine is not the run's time), else the
// launch.
func runStart(r *meta.Launch) time.Time {
	if r.ConfirmedAt != nil {
		return *r.ConfirmedAt
	}
	return r.LaunchedAt
}

// rebaseBudget records, for a resume, the session's totals before this run as
// r's BudgetBase: a resumed session's history is not this run's spending.
func (d *Deps) rebaseBudget(ctx context.Context, id string, r *meta.Launch) {
	if r.Kind != KindResume || r.BudgetBase != nil || d.Totals == nil {
		return
	}
	if t, err := d.Totals(ctx, r); err == nil {
		t.Elapsed = 0
		d.setField(id, func(x *meta.Launch) { x.BudgetBase = &t })
		r.BudgetBase = &t
	}
}

// budgetPoll is a budget watch's cadence: budgetPollMin while the session's
// tokens move, doubling up to budgetPollMax while they do not.
type budgetPoll struct {
	interval time.Duration
	last     meta.Usage
}

// wait is how long to wait before the next poll of r: the interval, cut short
// by r's duration limit.
func (p *budgetPoll) wait(r *meta.Launch, now time.Time) time.Duration {
	wait := p.interval
	if limit := r.Budget.MaxDuration(); limit > 0 {
		wait = min(wait, max(0, runStart(r).Add(limit).Sub(now)))
	}
	return wait
}

// saw sets the next interval from the usage a poll read.
func (p *budgetPoll) saw(u meta.Usage) {
	if u.Tokens != p.last.Tokens {
		p.interval = budgetPollMin
	} else {
		p.interval = min(p.interval*2, budgetPollMax)
	}
	p.last = u
}

// awaitExit waits for the agent to exit. With a budget on the record it polls
// the session's totals meanwhile, and on a breach stops the agent (enforce)
// and goes on waiting for the exit that follows.
func (d *Deps) awaitExit(ctx context.Context, id string, exited chan int) (int, error) {
	r := d.record(id)
	if r == nil || r.Budget.Empty() {
		select {
		case c := <-exited:
			return c, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	d.rebaseBudget(ctx, id, r)
	poll := budgetPoll{interval: budgetPollMin}
	for {
		select {
		case c := <-exited:
			return c, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(poll.wait(r, d.now())):
		}
		u, _ := d.usageOf(ctx, r)
		if b := r.Budget.Check(u); b != nil {
			d.enforce(ctx, id, b, "supervisor")
			select {
			case c := <-exited:
				return c, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		poll.saw(u)
	}
}

// enforce acts on a breach exactly once: under the flock the first to see it
// records the breach and the exit reason and journals session.budget_exceeded;
// then it does the verified stop. A later caller (the next sweep, when the
// process that claimed the breach died before the agent was gone) only stops.
// It reports whether this call claimed the breach.
func (d *Deps) enforce(ctx context.Context, id string, b *meta.Breach, by string) bool {
	spid, sstart := d.self()
	var rec meta.Launch
	claimed, act := false, false
	err := d.Store.UpdateLaunches(func(l *meta.Launches) (bool, error) {
		r := l.Find(id)
		if r == nil || r.FinalisedAt != nil {
			return false, nil
		}
		if r.Breach != nil {
			mine := r.Breach.PID == spid && r.Breach.Start == sstart
			if !mine && d.Store.IsAlive(r.Breach.PID, r.Breach.Start, "") {
				return false, nil // its claimer is stopping it
			}
			r.Breach.PID, r.Breach.Start = spid, sstart
			rec, act = *r, true
			return true, nil
		}
		c := *b
		c.At, c.By, c.PID, c.Start = d.now(), by, spid, sstart
		r.Breach = &c
		r.ExitReason = c.Reason
		rec, claimed, act = *r, true, true
		return true, nil
	})
	if err != nil {
		d.warn("launch record %s: %v", id, err)
		return false
	}
	if claimed {
		d.journal(meta.EventBudgetExceeded, &rec)
	}
	if !act || rec.Gateway == nil && rec.PID <= 0 {
		return claimed
	}
	what, stopped, err := d.budgetStop(ctx, id, &rec)
	if err != nil {
		d.warn("%s for its budget (%s): %v", what, rec.ExitReason, err)
		return claimed
	}
	d.setField(id, func(r *meta.Launch) {
		if r.Breach != nil {
			r.Breach.Stopped = stopped
		}
	})
	return claimed
}

// budgetStop ends a run over its budget. An OpenClaw run has no local process:
// it is aborted on its gateway, as `agentctl stop` does (docs/agents/openclaw.md
// §6.3); a local one gets the verified stop. what names the act, for a warning;
// stopped is whether the run is gone.
func (d *Deps) budgetStop(ctx context.Context, id string, rec *meta.Launch) (what string, stopped bool, err error) {
	if rec.Gateway != nil {
		res, err := d.StopGateway(ctx, GatewayStopTarget{Key: rec.CurrentSessionID(), RunID: rec.Gateway.RunID, LaunchID: id}, false)
		return "abort " + rec.CurrentSessionID() + " on its gateway", res.Stopped || res.NoActiveRun, err
	}
	t := StopTarget{SessionID: rec.CurrentSessionID(), PID: rec.PID, Start: rec.StartTicks, BootID: rec.BootID,
		PGID: rec.PGID, Group: true, LaunchID: id}
	var res StopResult
	if ask := d.backgroundStop(rec); ask != nil {
		// A Claude Code background session ends Claude's way, so that its job
		// record says stopped (docs/agents/claude-code.md §4.5); signals only if that fails.
		var ares AgentStopResult
		ares, err = d.StopViaAgent(ctx, t, ask, AgentStopTimeout, AgentStopExit, StopOptions{})
		res = ares.StopResult
	} else {
		res, err = d.Stop(ctx, t, StopOptions{})
	}
	return "stop " + rec.CurrentSessionID(), res.ExitObserved || res.AlreadyGone, err
}

// SweepBudgets is sweep's half of budget enforcement: a launch whose
// supervisor died cannot watch its budget, so sweep reads the totals of every
// such run whose agent is alive and stops those over their budget, exactly
// once (enforce). It returns the launch ids it acted on.
func (d *Deps) SweepBudgets(ctx context.Context) ([]string, error) {
	recs, err := d.Store.ReadLaunches()
	if err != nil {
		return nil, err
	}
	var out []string
	for i := range recs {
		r := &recs[i]
		if r.FinalisedAt != nil || r.Budget.Empty() || r.ConfirmedAt == nil {
			continue
		}
		if d.Store.IsAlive(r.SupervisorPID, r.SupervisorStart, "") {
			continue // the supervisor watches it
		}
		if r.Gateway == nil && !d.Store.AgentAlive(r) {
			continue // nothing to stop
		}
		if r.Gateway != nil && r.Breach == nil && !d.gatewayRunActive(ctx, r) {
			continue // the run ended (or its gateway is away): lazy finalisation's business
		}
		b := r.Breach
		if b == nil {
			u, _ := d.usageOf(ctx, r)
			if b = r.Budget.Check(u); b == nil {
				continue
			}
		}
		d.enforce(ctx, r.ID, b, "sweep")
		out = append(out, r.ID)
	}
	return out, nil
}

// watchGatewayBudget is awaitExit's budget half for an OpenClaw run, which has
// no local process to wait for: it polls the run's usage with the same back-off
// and on a breach aborts the run (enforce). It returns when done is closed or
// after acting on a breach; the supervisor's wait for the run then sees it end.
func (d *Deps) watchGatewayBudget(ctx context.Context, id string, done <-chan struct{}) {
	r := d.record(id)
	if r == nil || r.Budget.Empty() {
		return
	}
	d.rebaseBudget(ctx, id, r)
	// Reading an OpenClaw session's totals is a gateway round trip over its
	// whole history, seconds on a busy gateway: with only a duration limit they
	// are not read at all (the breach's figures then have the elapsed time
	// only), so that nothing delays the abort.
	durationOnly := r.Budget.MaxTokens == 0 && r.Budget.MaxCostUSD == 0
	poll := budgetPoll{interval: budgetPollMin}
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-time.After(poll.wait(r, d.now())):
		}
		u := meta.Usage{Elapsed: d.now().Sub(runStart(r)).Seconds()}
		if !durationOnly {
			u, _ = d.usageOf(ctx, r)
		}
		if b := r.Budget.Check(u); b != nil {
			d.enforce(ctx, id, b, "supervisor")
			return
		}
		poll.saw(u)
	}
}

// gatewayRunActive asks r's gateway whether r's run is still active. An
// unreachable gateway counts as not: sweep acts on what it can see.
func (d *Deps) gatewayRunActive(ctx context.Context, r *meta.Launch) bool {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, _, err := d.dialGateway(cctx, d.gatewayEnv(d.Environ, r.Home), []string{gateway.ScopeRead}, []string{"sessions.list"})
	if err != nil {
		d.warn("openclaw: %v", err)
		return false
	}
	defer conn.Close(context.Background())
	row, found, err := gatewayRow(cctx, conn, r.CurrentSessionID())
	return err == nil && found && row.active() && (row.LastRunID == "" || row.LastRunID == r.Gateway.RunID)
}

// breachData is the figures of a breach as events and webhooks carry them.
func breachData(r *meta.Launch) map[string]any {
	b := r.Breach
	m := map[string]any{"reason": b.Reason, "limit": b.Limit, "used": b.Used, "by": b.By,
		"tokens": b.Usage.Tokens, "elapsed_seconds": b.Usage.Elapsed}
	if b.Usage.CostUSD != nil {
		m["cost_usd"] = *b.Usage.CostUSD
	}
	if r.Budget != nil {
		m["budget"] = r.Budget
	}
	return m
}
