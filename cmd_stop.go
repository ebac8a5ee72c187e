package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/meta"
)

func stopCommand(s *streams) *cli.Command {
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
A session known only from a process-table scan needs --force.

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
			if err := needArgs(c, 1, "one session ID"); err != nil {
				return err
			}
			e, sess, env, err := setupSession(c, s)
			if err != nil {
				return err
			}
			if sess.Adapter == "openclaw" {
				return e.stopGateway(c, sess, env)
			}
			target, err := e.stopTarget(sess, env, c.Bool("force"))
			if err != nil {
				return err
			}
			d := e.deps()
			opts := launch.StopOptions{Force: c.Bool("force")}
			// Each agent's own escalation (docs/agents/*.md §8): codex SIGINT to the
			// PID, opencode and pi SIGTERM first, the others the default.
			plan := launch.StopPlanFor(sess.Adapter, opts.Force)
			opts.Steps, target.IntToPIDOnly = plan.Steps, plan.IntToPIDOnly
			res, err := d.Stop(c.Context, target, opts)
			if err != nil {
				return &exitError{exitFailed, fmt.Errorf("stop %s: %w", sess.ID, err)}
			}
			if res.ExitObserved || res.AlreadyGone {
				// The supervisor finalises when it is alive; if it is gone too, do it now.
				e.finaliseDead(c.Context)
			}
			if c.Bool("json") {
				out := map[string]any{"id": sess.ID, "pid": target.PID, "signals": res.Signals, "exit_observed": res.ExitObserved,
					"already_gone": res.AlreadyGone, "elapsed_ms": res.Elapsed.Milliseconds()}
				if err := writeJSON(s.out, out); err != nil {
					return err
				}
			}
			switch {
			case res.AlreadyGone:
				if !c.Bool("json") {
					fmt.Fprintf(s.out, "%s had already exited (pid %d is gone)\n", sess.ID, target.PID)
				}
				return nil
			case res.ExitObserved:
				if !c.Bool("json") {
					fmt.Fprintf(s.out, "stopped %s (exit observed)\n", sess.ID)
				}
				return nil
			}
			return &exitError{exitFailed, fmt.Errorf("signal sent to %s; still alive after %s (pid %d, last signal %s)", sess.ID, res.Elapsed.Round(100*time.Millisecond), target.PID, res.LastSignal)}
		},
	}
}

// stopGateway aborts an OpenClaw run through the gateway (docs/agents/openclaw.md §6.3):
// there is no process to signal. A run agentctl started is aborted with its own
// device identity; any other run only with --force (operator.admin).
func (e *cmdEnv) stopGateway(c *cli.Context, sess discover.Session, env *discover.Env) error {
	if !discover.Alive(sess.Status) {
		return &exitError{exitFailed, fmt.Errorf("%s is not running (%s); nothing to stop", sess.ID, sess.Status)}
	}
	force := c.Bool("force")
	var rec *meta.Launch
	if sess.LaunchID != "" {
		rec = meta.FindLaunch(env.Launches, sess.LaunchID)
	}
	t := launch.GatewayStopTarget{Key: sess.ID, Home: e.home}
	if rec != nil && rec.EndedAt == nil && rec.Gateway != nil {
		t.RunID, t.LaunchID = rec.Gateway.RunID, rec.ID
	} else if !force {
		return &exitError{exitFailed, fmt.Errorf("%s's current run was not started by agentctl, and the gateway lets only the device that started a run abort it; use --force to abort it with operator.admin scope", sess.ID)}
	}
	res, err := e.deps().StopGateway(c.Context, t, force)
	if err != nil {
		return &exitError{exitFailed, fmt.Errorf("stop %s: %w", sess.ID, err)}
	}
	if res.Stopped {
		e.finaliseDead(c.Context)
	}
	run := res.AbortedRunID
	if run == "" {
		run = t.RunID
	}
	if c.Bool("json") {
		out := map[string]any{"id": sess.ID, "run_id": run, "aborted": res.AbortedRunID != "", "exit_observed": res.Stopped,
			"no_active_run": res.NoActiveRun, "elapsed_ms": res.Elapsed.Milliseconds()}
		if err := writeJSON(e.s.out, out); err != nil {
			return err
		}
	}
	switch {
	case res.Stopped && res.NoActiveRun:
		if !c.Bool("json") {
			fmt.Fprintf(e.s.out, "%s: no active run\n", sess.ID)
		}
		return nil
	case res.Stopped:
		if !c.Bool("json") {
			fmt.Fprintf(e.s.out, "stopped %s (run %s aborted)\n", sess.ID, run)
		}
		return nil
	}
	return &exitError{exitFailed, fmt.Errorf("abort sent to %s (run %s); still running after %s", sess.ID, run, res.Elapsed.Round(100*time.Millisecond))}
}

// stopTarget picks the verified PID to signal: the launch record's (its process
// group), or the agent registry's / argv's (the PID alone). A process-scan
// inference needs --force.
func (e *cmdEnv) stopTarget(sess discover.Session, env *discover.Env, force bool) (launch.StopTarget, error) {
	if sess.LaunchID != "" {
		if r := meta.FindLaunch(env.Launches, sess.LaunchID); r != nil && r.PID > 0 {
			if alive, _, _ := discover.LaunchAlive(env.Procs, *r); alive {
				return launch.StopTarget{SessionID: sess.ID, PID: r.PID, Start: r.StartTicks, BootID: r.BootID, PGID: r.PGID, Group: true, LaunchID: r.ID}, nil
			}
		}
	}
	if !discover.Alive(sess.Status) || sess.PID <= 0 {
		if sess.Status == discover.StatusUnknown {
			return launch.StopTarget{}, &exitError{exitFailed, fmt.Errorf("cannot stop %s: no verified process (status unknown, evidence %s)", sess.ID, sess.Evidence)}
		}
		return launch.StopTarget{}, &exitError{exitFailed, fmt.Errorf("%s is not running (%s); nothing to stop", sess.ID, sess.Status)}
	}
	switch sess.Evidence {
	case discover.EvidenceRegistry, discover.EvidenceArgv, discover.EvidenceLaunchRecord:
	default:
		if !force || sess.Evidence != discover.EvidenceProcess {
			return launch.StopTarget{}, &exitError{exitFailed, fmt.Errorf("%s's pid %d is only inferred (%s); check it with `agentctl status %s` and use --force to stop it anyway", sess.ID, sess.PID, sess.Evidence, sess.ID)}
		}
	}
	p, ok := env.Procs.Get(sess.PID)
	if !ok {
		return launch.StopTarget{}, &exitError{exitFailed, fmt.Errorf("%s: pid %d is gone", sess.ID, sess.PID)}
	}
	return launch.StopTarget{SessionID: sess.ID, PID: sess.PID, Start: p.StartTicks, BootID: env.Procs.BootID(), PGID: p.PGID}, nil
}
