package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/claude"
	"github.com/agentctl/agentctl/launch"
)

// backgroundStoppable reports whether sess is a live Claude Code background
// session that Claude's own `claude stop` can end (docs/agents/claude-code.md §4.5): its
// daemon hosts it under a short id, and its PID is verified by the registry.
func backgroundStoppable(sess discover.Session) bool {
	return sess.Adapter == claude.Name && sess.Kind == claude.KindBackground && sess.JobID != "" &&
		sess.PID > 0 && discover.Alive(sess.Status) && sess.Status != discover.StatusUnknown
}

// stopBackground stops a Claude background session the agent's way: `claude
// stop <short>` with the binary the session runs (the one that owns the
// daemon) and the config root it was found under, then the exit is verified by
// PID and start time; if Claude's stop fails or the process outlives it, the
// usual signal ladder runs on the session's PID alone. Claude's daemon, its pty
// hosts and spares are never signalled: only the session process is a target.
func stopBackground(ctx context.Context, e *cmdEnv, o stopOptions, drv launch.Driver, sess discover.Session, env *discover.Env) error {
	target, err := stopTarget(e, drv, sess, env, o.Force)
	if err != nil {
		return err
	}
	// The session's group is its pty host's business: never more than its PID
	// (a launched background session records no group either).
	target.Group = false
	bin, err := env.Procs.Exe(sess.PID)
	if err != nil || bin == "" {
		bin = "claude"
	}
	ask := launch.ClaudeStopCommand(bin, sess.JobID, env.Home, claude.Root(env), os.Environ())
	if ok, why := claude.DaemonStatus(claude.Root(env), env.Procs); !ok {
		// `claude stop` would wait for a daemon that is gone (seen: > 10 s after
		// the daemon was killed); the sessions outlive it, so signal at once.
		ask = func(context.Context) error { return errors.New(why) }
	}
	d := e.deps()
	opts := launch.StopOptions{Force: o.Force}
	plan := drv.StopPlan(opts.Force)
	opts.Steps, target.IntToPIDOnly = plan.Steps, plan.IntToPIDOnly
	res, err := d.StopViaAgent(ctx, target, ask, launch.AgentStopTimeout, launch.AgentStopExit, opts)
	if err != nil {
		return &exitError{exitFailed, fmt.Errorf("stop %s: %w", sess.ID, err)}
	}
	if res.ExitObserved || res.AlreadyGone {
		e.finaliseDead(ctx)
	}
	via := "claude stop " + sess.JobID
	if res.Via == "signals" {
		via = "signals"
	}
	if o.JSON {
		out := map[string]any{"id": sess.ID, "pid": target.PID, "job_id": sess.JobID, "via": via, "signals": res.Signals,
			"exit_observed": res.ExitObserved, "already_gone": res.AlreadyGone, "elapsed_ms": res.Elapsed.Milliseconds()}
		if res.AgentErr != "" {
			out["agent_stop_error"] = res.AgentErr
		}
		if err := writeJSON(e.s.Out, out); err != nil {
			return err
		}
	}
	switch {
	case res.AlreadyGone:
		if !o.JSON {
			printHuman(e.s.Out, "%s had already exited (pid %d is gone)\n", sess.ID, target.PID)
		}
		return nil
	case res.ExitObserved && res.Via == "agent":
		if !o.JSON {
			printHuman(e.s.Out, "stopped %s (exit observed after `claude stop %s`, %s); `claude attach %s` reopens it\n",
				sess.ID, sess.JobID, res.Elapsed.Round(time.Millisecond), sess.JobID)
		}
		return nil
	case res.ExitObserved:
		if !o.JSON {
			printHuman(e.s.Out, "stopped %s (exit observed after %s; `claude stop %s` did not end it: %s)\n",
				sess.ID, res.LastSignal, sess.JobID, res.AgentErr)
		}
		return nil
	}
	return &exitError{exitFailed, fmt.Errorf("%s is still alive after %s (pid %d; `claude stop %s`: %s; last signal %s); check `claude agents`",
		sess.ID, res.Elapsed.Round(100*time.Millisecond), target.PID, sess.JobID, res.AgentErr, res.LastSignal)}
}
