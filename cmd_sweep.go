package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/locks"
)

// sweepReport is what one sweep did (--json prints it as is).
type sweepReport struct {
	FusesFired       []string `json:"fuses_fired"`
	BudgetStopped    []string `json:"budget_stopped"`
	Finalised        []string `json:"finalised"`
	LocksDropped     int      `json:"locks_dropped"`
	WebhooksSent     int      `json:"webhooks_delivered"`
	WebhooksPending  int      `json:"webhooks_pending"`
	LaunchRecordsNow int      `json:"launch_records"`
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
to run concurrently. It sweeps agentctl's one state dir ($AGENTCTL_HOME, else
~/.agentctl): ` + "`launch --home DIR`" + ` keeps its records there too, each with the home
its agent's files are under, so a plain sweep finalises those runs as well.

A crontab line runs it every minute: * * * * * agentctl sweep >/dev/null

Examples:
  agentctl sweep
  agentctl sweep --json | jq .fuses_fired
  (crontab -l; echo '* * * * * agentctl sweep >/dev/null') | crontab -`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print what was done as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			o, err := sweepOptionsFrom(c)
			if err != nil {
				return err
			}
			return runSweep(c.Context, s, o)
		},
	}
}

// sweepOptions are sweep's flags and arguments.
type sweepOptions struct {
	globalOptions
	Args []string // none are accepted
	JSON bool
}

func sweepOptionsFrom(c *cli.Context) (sweepOptions, error) {
	o := sweepOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(), JSON: c.Bool("json")}
	return o, o.check()
}

// check is every usage check of sweep's options; it reads nothing.
func (o sweepOptions) check() error {
	if len(o.Args) > 0 {
		return usageErrorf("sweep takes no arguments")
	}
	return nil
}

// runSweep does one sweep. It checks the options again (check, no I/O), so
// in-process callers that build them by hand get the same usage errors.
func runSweep(ctx context.Context, s *host, o sweepOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	if err := e.mustTrust("sweep"); err != nil {
		return err
	}
	rep, err := sweepOnce(ctx, e)
	if err != nil {
		return err
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
	printHuman(s.Out, "finalised %d launches, dropped %d dead locks, delivered %d webhooks (%d pending), %d launch records kept\n",
		len(rep.Finalised), rep.LocksDropped, rep.WebhooksSent, rep.WebhooksPending, rep.LaunchRecordsNow)
	return nil
}

// sweepOnce does the sweep of the state dir.
func sweepOnce(ctx context.Context, e *cmdEnv) (sweepReport, error) {
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
	if _, err := d.SweepPrompts(); err != nil {
		warn(s, fmt.Sprintf("prompt files: %v", err))
	}
	if _, err := d.SweepInputs(); err != nil {
		warn(s, fmt.Sprintf("input FIFOs of kept-open runs: %v", err))
	}
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
