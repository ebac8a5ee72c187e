package main

import (
	"fmt"
	"syscall"
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
Escalation: SIGINT, 3 s, SIGTERM, 5 s, SIGKILL (--force: sooner). Prints
"stopped ID (exit observed)" only once the exit is seen; otherwise exits 1.
A session known only from a process-table scan needs --force.

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
			e, err := setup(c, s)
			if err != nil {
				return err
			}
			sess, env, err := e.resolve(c.Context, c.Args().First())
			if err != nil {
				return err
			}
			target, err := e.stopTarget(sess, env, c.Bool("force"))
			if err != nil {
				return err
			}
			d := e.deps()
			opts := launch.StopOptions{Force: c.Bool("force")}
			if sess.Adapter == "codex" {
				// SIGINT is codex's graceful stop (it records turn_aborted); give it
				// 10 s before SIGTERM (codex.md §8).
				intWait := 10 * time.Second
				if opts.Force {
					intWait = 2 * time.Second
				}
				target.IntToPIDOnly = true
				opts.Steps = []launch.StopStep{{Signal: syscall.SIGINT, Wait: intWait}, {Signal: syscall.SIGTERM, Wait: 5 * time.Second}, {Signal: syscall.SIGKILL, Wait: 2 * time.Second}}
			}
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

// stopTarget picks the verified PID to signal: the launch record's (its process
// group), or the agent registry's / argv's (the PID alone). A process-scan
// inference needs --force.
func (e *cmdEnv) stopTarget(sess discover.Session, env *discover.Env, force bool) (launch.StopTarget, error) {
	if sess.LaunchID != "" {
		if r := findLaunch(env.Launches, sess.LaunchID); r != nil && r.PID > 0 {
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
	case discover.EvidenceGateway:
		return launch.StopTarget{}, &exitError{exitFailed, fmt.Errorf("stopping %s sessions is not supported yet", sess.Adapter)}
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

func findLaunch(recs []meta.Launch, id string) *meta.Launch {
	for i := range recs {
		if recs[i].ID == id {
			return &recs[i]
		}
	}
	return nil
}
