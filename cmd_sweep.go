package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// rememberHome notes this command's state dir in the default one when --home
// moved it (DIR/.agentctl, no AGENTCTL_HOME), so that a plain `sweep` finds
// the launches kept there (meta.HomesFile). Launch and resume call it.
func (e *cmdEnv) rememberHome() {
	if !e.homeFlag || e.s.getenv("AGENTCTL_HOME") != "" {
		return
	}
	home := e.s.getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return
		}
	}
	def := filepath.Join(home, ".agentctl")
	if abs, err := filepath.Abs(def); err == nil {
		def = abs
	}
	if def == e.store.Dir {
		return
	}
	st := meta.NewStore(def)
	st.Now = e.s.now
	if err := st.AddHome(e.home, e.store.Dir); err != nil {
		warn(e.s, fmt.Sprintf("a plain sweep will not see this launch (sweep --home %s will): %v", e.home, err))
	}
}

// sweepReport is what one sweep did (--json prints it as is).
type sweepReport struct {
	FusesFired       []string `json:"fuses_fired"`
	BudgetStopped    []string `json:"budget_stopped"`
	Finalised        []string `json:"finalised"`
	LocksDropped     int      `json:"locks_dropped"`
	WebhooksSent     int      `json:"webhooks_delivered"`
	WebhooksPending  int      `json:"webhooks_pending"`
	LaunchRecordsNow int      `json:"launch_records"`
	// OtherStates are the state dirs of `launch --home DIR` runs this sweep
	// also swept (meta.HomesFile); their work is in the figures above.
	OtherStates []string `json:"other_state_dirs"`
}

func sweepCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:    "sweep",
		Aliases: []string{"prune"},
		Usage:   "housekeeping for cron: fire expired fuses, finalise dead launches, drop dead locks, retry webhooks",
		Description: `There is no daemon; sweep does, on demand, what any other command also does lazily:
fires expired fuses (and fuses whose firing process died mid-action), stops launched agents over their budget whose supervisor died,
finalises launches whose agent died without its supervisor noticing (firing
on-complete and the webhook exactly once), evicts launch records (and their logs)
7 days after their session ended, drops locks whose owner is dead or whose TTL
passed, and retries webhook deliveries waiting in the outbox. Idempotent and safe
to run concurrently. Without --home it also sweeps the state dirs that
` + "`launch --home DIR`" + ` runs used (DIR/.agentctl, noted in the default state dir when
they were launched), until they have no launch records left.

Example crontab line:
  * * * * * agentctl sweep >/dev/null`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print what was done as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			return runSweep(c.Context, s, sweepOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(), JSON: c.Bool("json")})
		},
	}
}

// sweepOptions are sweep's flags and arguments.
type sweepOptions struct {
	globalOptions
	Args []string // none are accepted
	JSON bool
}

func runSweep(ctx context.Context, s *host, o sweepOptions) error {
	if len(o.Args) > 0 {
		return usageErrorf("sweep takes no arguments")
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	rep, err := e.sweepOne(ctx)
	if err != nil {
		return err
	}
	rep.OtherStates = []string{}
	if !e.homeFlag {
		e.sweepOtherHomes(ctx, &rep)
	}
	if o.JSON {
		return writeJSON(s.Out, rep)
	}
	for _, dir := range rep.FusesFired {
		printHuman(s.Out, "fired the fuse on %s\n", dir)
	}
	for _, id := range rep.BudgetStopped {
		printHuman(s.Out, "stopped launch %s: over its budget, supervisor gone\n", id)
	}
	for _, id := range rep.Finalised {
		printHuman(s.Out, "finalised launch %s (agent gone, supervisor gone)\n", id)
	}
	for _, dir := range rep.OtherStates {
		printHuman(s.Out, "swept %s too (a launch --home state dir)\n", dir)
	}
	printHuman(s.Out, "finalised %d launches, dropped %d dead locks, delivered %d webhooks (%d pending), %d launch records kept\n",
		len(rep.Finalised), rep.LocksDropped, rep.WebhooksSent, rep.WebhooksPending, rep.LaunchRecordsNow)
	return nil
}

// sweepOtherHomes sweeps the state dirs `launch --home DIR` runs noted in this
// one (meta.HomesFile) and adds what it did to rep; a dir that is gone, or has
// no launch records left, is forgotten.
func (e *cmdEnv) sweepOtherHomes(ctx context.Context, rep *sweepReport) {
	homes, err := e.store.ReadHomes()
	if err != nil {
		warn(e.s, fmt.Sprintf("other state dirs (%s): %v", e.store.Path(meta.HomesFile), err))
		return
	}
	for _, h := range homes {
		if h.State == e.store.Dir {
			continue
		}
		if st, err := os.Stat(h.State); err != nil || !st.IsDir() {
			_ = e.store.DropHome(h.State)
			continue
		}
		o, err := setup(e.s, globalOptions{Home: h.Home})
		if err != nil || o.store.Dir != h.State {
			// --home is gone, or AGENTCTL_HOME points this sweep elsewhere.
			continue
		}
		r, err := o.sweepOne(ctx)
		if err != nil {
			warn(e.s, fmt.Sprintf("sweep %s: %v", h.State, err))
			continue
		}
		rep.OtherStates = append(rep.OtherStates, h.State)
		rep.FusesFired = append(rep.FusesFired, r.FusesFired...)
		rep.BudgetStopped = append(rep.BudgetStopped, r.BudgetStopped...)
		rep.Finalised = append(rep.Finalised, r.Finalised...)
		rep.LocksDropped += r.LocksDropped
		rep.WebhooksSent += r.WebhooksSent
		rep.WebhooksPending += r.WebhooksPending
		rep.LaunchRecordsNow += r.LaunchRecordsNow
		if r.LaunchRecordsNow == 0 {
			_ = e.store.DropHome(h.State)
		}
	}
}

// sweepOne does one state dir's sweep.
func (e *cmdEnv) sweepOne(ctx context.Context) (sweepReport, error) {
	s := e.s
	d := e.deps()
	var err error
	var rep sweepReport
	rep.FusesFired = []string{}
	for _, f := range e.fireFuses(ctx, true) {
		rep.FusesFired = append(rep.FusesFired, f.Fuse.Directory)
	}
	// Runs over their budget whose supervisor died: stopped first, so that
	// they are finalised below.
	if rep.BudgetStopped, err = d.SweepBudgets(ctx); err != nil {
		warn(s, fmt.Sprintf("budgets: %v", err))
	}
	if rep.BudgetStopped == nil {
		rep.BudgetStopped = []string{}
	}
	if rep.Finalised, err = d.FinaliseDead(ctx); err != nil {
		return rep, &exitError{exitFailed, fmt.Errorf("finalise ended launches: %w", err)}
	}
	before, err := locks.Read(e.store)
	if err != nil {
		return rep, &exitError{exitFailed, err}
	}
	after, err := locks.List(e.store) // drops dead and expired locks
	if err != nil {
		return rep, &exitError{exitFailed, err}
	}
	rep.LocksDropped = len(before) - len(after)
	if rep.WebhooksSent, rep.WebhooksPending, err = d.RetryOutbox(ctx); err != nil {
		warn(s, fmt.Sprintf("webhook outbox: %v", err))
	}
	recs, err := e.store.ReadLaunches()
	if err != nil {
		return rep, &exitError{exitFailed, err}
	}
	rep.LaunchRecordsNow = len(recs)
	if rep.Finalised == nil {
		rep.Finalised = []string{}
	}
	return rep, nil
}
