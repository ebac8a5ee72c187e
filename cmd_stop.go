package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

func stopCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "stop",
		Usage:     "stop a session's agent process, verified",
		ArgsUsage: "ID",
		Description: `Signals only a verified process: a PID from agentctl's launch record or the
agent's own registry, re-checked against its exact start time immediately before
every signal. Launched sessions get their whole process group signalled.
Escalation: SIGINT, 3 s, SIGTERM, 5 s, SIGKILL (--force: sooner); opencode and
pi get SIGTERM first (5 s), codex SIGINT to the PID (10 s). Prints
"stopped ID (exit observed)" only once the exit is seen; otherwise exits 1.
A session that has already ended is not an error: "already stopped ID", exit 0
(--json: "already_stopped": true).
A session known only from a process-table scan needs --force.

Claude Code background sessions (claude --bg) are stopped Claude's way first:
` + "`claude stop <job id>`" + `, which keeps them attachable with ` + "`claude attach`" + `; the
exit is verified by PID and start time, and the signals above follow only if
Claude's stop fails. Claude's daemon, pty hosts and spares are never signalled.

OpenClaw sessions live in their gateway: stop aborts the run (sessions.abort)
and prints "stopped KEY (run RUN aborted)" once the gateway shows it ended. A
run agentctl did not start needs --force (connects with operator.admin).

Examples:
  agentctl stop 75098152
  agentctl stop --force 75098152`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Usage: "escalate to SIGKILL sooner; allow stopping a process-scan match"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *cli.Context) error {
			return runStop(c.Context, s, stopOptionsFrom(c))
		},
	}
}

// stopOptions are stop's flags and arguments.
type stopOptions struct {
	globalOptions
	Args        []string // the session ID
	Force, JSON bool
}

func stopOptionsFrom(c *cli.Context) stopOptions {
	return stopOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(), Force: c.Bool("force"), JSON: c.Bool("json")}
}

func runStop(ctx context.Context, s *host, o stopOptions) error {
	if err := needArgs("stop", o.Args, 1, "one session ID"); err != nil {
		return err
	}
	e, sess, env, err := setupSession(ctx, s, o.globalOptions, o.Args[0])
	if err != nil {
		return err
	}
	if !discover.Alive(sess.Status) {
		return stopEnded(ctx, e, o, sess)
	}
	drv, err := launch.DriverFor(sess.Adapter)
	if err != nil {
		return &exitError{exitFailed, err}
	}
	if drv.Gateway() {
		return stopGateway(ctx, e, o, drv, sess, env)
	}
	if backgroundStoppable(sess) {
		return stopBackground(ctx, e, o, drv, sess, env)
	}
	target, err := stopTarget(e, drv, sess, env, o.Force)
	if err != nil {
		return err
	}
	d := e.deps()
	opts := launch.StopOptions{Force: o.Force}
	plan := drv.StopPlan(opts.Force)
	opts.Steps, target.IntToPIDOnly = plan.Steps, plan.IntToPIDOnly
	res, err := d.Stop(ctx, target, opts)
	if err != nil {
		return &exitError{exitFailed, fmt.Errorf("stop %s: %w", sess.ID, err)}
	}
	if res.ExitObserved || res.AlreadyGone {
		// The supervisor finalises when it is alive; if it is gone too, do it now.
		e.finaliseDead(ctx)
	}
	if o.JSON {
		out := map[string]any{"id": sess.ID, "pid": target.PID, "signals": res.Signals, "exit_observed": res.ExitObserved,
			"already_gone": res.AlreadyGone, "already_stopped": false, "elapsed_ms": res.Elapsed.Milliseconds()}
		if err := writeJSON(s.Out, out); err != nil {
			return err
		}
	}
	switch {
	case res.AlreadyGone:
		if !o.JSON {
			printHuman(s.Out, "%s had already exited (pid %d is gone)\n", sess.ID, target.PID)
		}
		return nil
	case res.ExitObserved:
		if !o.JSON {
			printHuman(s.Out, "stopped %s (exit observed)\n", sess.ID)
		}
		return nil
	}
	return &exitError{exitFailed, fmt.Errorf("signal sent to %s; still alive after %s (pid %d, last signal %s)", sess.ID, res.Elapsed.Round(100*time.Millisecond), target.PID, res.LastSignal)}
}

// stopEnded is stop of a session that has already ended (stopped or failed):
// nothing to signal, and like docker stop that is success: "already stopped
// ID", exit 0 (--json: already_stopped true and the status it ended in).
func stopEnded(ctx context.Context, e *cmdEnv, o stopOptions, sess discover.Session) error {
	// A launch whose agent died unnoticed gets its end recorded now.
	e.finaliseDead(ctx)
	if o.JSON {
		return writeJSON(e.s.Out, map[string]any{"id": sess.ID, "pid": 0, "signals": []string{}, "exit_observed": false,
			"already_gone": true, "already_stopped": true, "status": sess.Status, "elapsed_ms": 0})
	}
	how := ""
	if sess.Status != discover.StatusStopped {
		how = " (" + sess.Status + ")"
	}
	_, err := printHuman(e.s.Out, "already stopped %s%s\n", sess.ID, how)
	return err
}

// stopGateway aborts an OpenClaw run through the gateway (docs/agents/openclaw.md §6.3):
// there is no process to signal. A run agentctl started is aborted with its own
// device identity; any other run only with --force (operator.admin).
func stopGateway(ctx context.Context, e *cmdEnv, o stopOptions, drv launch.Driver, sess discover.Session, env *discover.Env) error {
	force := o.Force
	seen := seenOf(sess, env)
	if err := drv.Stoppable(seen, force); err != nil {
		return &exitError{exitFailed, err}
	}
	t := launch.GatewayStopTarget{Key: sess.ID, Home: env.Home}
	if rec := seen.Launch; rec != nil && rec.EndedAt == nil && rec.Gateway != nil {
		t.RunID, t.LaunchID = rec.Gateway.RunID, rec.ID
	}
	res, err := e.deps().StopGateway(ctx, t, force)
	if err != nil {
		return &exitError{exitFailed, fmt.Errorf("stop %s: %w", sess.ID, err)}
	}
	if res.Stopped {
		e.finaliseDead(ctx)
	}
	run := res.AbortedRunID
	if run == "" {
		run = t.RunID
	}
	if o.JSON {
		out := map[string]any{"id": sess.ID, "run_id": run, "aborted": res.AbortedRunID != "", "exit_observed": res.Stopped,
			"no_active_run": res.NoActiveRun, "elapsed_ms": res.Elapsed.Milliseconds()}
		if err := writeJSON(e.s.Out, out); err != nil {
			return err
		}
	}
	switch {
	case res.Stopped && res.NoActiveRun:
		if !o.JSON {
			printHuman(e.s.Out, "%s: no active run\n", sess.ID)
		}
		return nil
	case res.Stopped:
		if !o.JSON {
			printHuman(e.s.Out, "stopped %s (run %s aborted)\n", sess.ID, run)
		}
		return nil
	}
	return &exitError{exitFailed, fmt.Errorf("abort sent to %s (run %s); still running after %s", sess.ID, run, res.Elapsed.Round(100*time.Millisecond))}
}

// stopTarget picks the verified PID to signal: the launch record's (its process
// group), or, when the driver allows it (Stoppable), the one the read side
// found (the PID alone).
func stopTarget(e *cmdEnv, drv launch.Driver, sess discover.Session, env *discover.Env, force bool) (launch.StopTarget, error) {
	if sess.LaunchID != "" {
		if r := meta.FindLaunch(env.Launches, sess.LaunchID); r != nil && r.PID > 0 {
			if proc.Check(env.Procs, r.Agent()).Alive {
				return launch.StopTarget{SessionID: sess.ID, PID: r.PID, Start: r.StartTicks, BootID: r.BootID, PGID: r.PGID, Group: true, LaunchID: r.ID}, nil
			}
		}
	}
	if err := drv.Stoppable(seenOf(sess, env), force); err != nil {
		return launch.StopTarget{}, &exitError{exitFailed, err}
	}
	p, ok := env.Procs.Get(sess.PID)
	if !ok {
		return launch.StopTarget{}, &exitError{exitFailed, fmt.Errorf("%s: pid %d is gone", sess.ID, sess.PID)}
	}
	return launch.StopTarget{SessionID: sess.ID, PID: sess.PID, Start: p.StartTicks, BootID: env.Procs.BootID(), PGID: p.PGID}, nil
}
