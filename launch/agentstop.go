package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// AgentStopResult is Stop's result when the agent was asked first.
type AgentStopResult struct {
	StopResult
	// Via is how the process ended: "agent" (its own stop command ended it) or
	// "signals" (the signal ladder ran after the agent's stop failed or timed out).
	Via string
	// AgentErr says why the agent's own stop did not end the process.
	AgentErr string
}

// Default waits of StopViaAgent.
const (
	AgentStopTimeout = 10 * time.Second // for the agent's stop command to return
	AgentStopExit    = 5 * time.Second  // for the process to exit once it has
)

// StopViaAgent ends a verified process the agent's own way: ask runs the
// agent's stop command (Claude Code background sessions: `claude stop <short>`,
// docs/agents/claude-code.md §4.5), then the exit is judged exactly as Stop judges it, by
// the PID with its start time, never by the agent's files. If ask fails, times
// out, or the process outlives exitWait, Stop's signal ladder runs on the same
// verified target; the result says which path ended it.
func (d *Deps) StopViaAgent(ctx context.Context, t StopTarget, ask func(context.Context) error, askTimeout, exitWait time.Duration, o StopOptions) (AgentStopResult, error) {
	var res AgentStopResult
	if _, ok := d.verify(t.PID, t.Start, t.BootID); !ok {
		res.AlreadyGone = true
		return res, nil
	}
	poll := o.poll()
	begin := time.Now()
	d.markStopRequested(t.LaunchID)
	actx, cancel := context.WithTimeout(ctx, askTimeout)
	err := ask(actx)
	cancel()
	if err == nil {
		deadline := time.Now().Add(exitWait)
		for {
			if _, ok := d.verify(t.PID, t.Start, t.BootID); !ok {
				res.ExitObserved, res.Via = true, "agent"
				res.Elapsed = time.Since(begin)
				if t.LaunchID != "" {
					d.setField(t.LaunchID, func(r *meta.Launch) {
						if r.Stop == nil {
							r.Stop = &meta.StopInfo{RequestedAt: d.now()}
						}
						r.Stop.Signals = []string{"agent stop"}
						r.Stop.ExitObserved = true
					})
				}
				return res, nil
			}
			if !time.Now().Before(deadline) {
				err = fmt.Errorf("the process was still alive %s after the agent's stop returned", exitWait)
				break
			}
			if serr := d.Sleep(ctx, poll); serr != nil {
				return res, serr
			}
		}
	}
	res.AgentErr = err.Error()
	sr, serr := d.Stop(ctx, t, o)
	res.StopResult, res.Via = sr, "signals"
	res.Elapsed = time.Since(begin)
	if sr.AlreadyGone {
		// It went between the last check and the first signal: the agent's
		// stop ended it after all.
		res.AlreadyGone, res.ExitObserved, res.Via, res.AgentErr = false, true, "agent", ""
	}
	return res, serr
}

// ClaudeClientEnv is the environment for one of Claude's own client commands
// (`claude stop`, `claude attach`) that must reach the daemon of the config
// root a session lives under: agentctl's env without the variables a parent
// Claude sets, with HOME and, when it is not the default, CLAUDE_CONFIG_DIR.
func ClaudeClientEnv(env []string, home, configDir string) []string {
	e := ClaudeEnv(env, nil, home, nil)
	if configDir != "" && configDir != filepath.Join(home, ".claude") {
		e.set("CLAUDE_CONFIG_DIR", configDir)
	}
	return e.vars
}

// ClaudeStopCommand runs `<bin> stop <short>` against the config root the
// session lives under (docs/agents/claude-code.md §4.5): Claude's own stop, which records the job
// as stopped and keeps the conversation attachable with `claude attach`. env is
// agentctl's environment; the variables a parent Claude sets are removed.
func ClaudeStopCommand(bin, short, home, configDir string, env []string) func(context.Context) error {
	return func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, bin, "stop", short)
		cmd.Env = ClaudeClientEnv(env, home, configDir)
		cmd.WaitDelay = time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ctx.Err() != nil {
			return fmt.Errorf("`claude stop %s` did not return in time", short)
		}
		if err != nil {
			msg := oneLine(out.String(), 200)
			var ee *exec.ExitError
			if errors.As(err, &ee) && msg != "" {
				return fmt.Errorf("`claude stop %s` exited %d: %s", short, ee.ExitCode(), msg)
			}
			return fmt.Errorf("`claude stop %s`: %v %s", short, err, strings.TrimSpace(msg))
		}
		return nil
	}
}
