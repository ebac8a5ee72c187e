package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/launch"
)

func resumeCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "send a follow-up prompt to an ended session, supervised like a launch",
		ArgsUsage: "ID MESSAGE",
		Description: `Continues the session the agent's own way, from the session's start directory,
with MESSAGE on the agent's stdin (MESSAGE "-" reads stdin). A session that is
still running is refused: two writers would interleave turns in one transcript.
Prints "resumed ID", or "resumed OLD as NEW" if the agent answers under a new id.

--fork continues in a new session and leaves the old one as it was; the old one
may still be running. Only claude-code can fork (--fork-session); the other
agents continue a session in place, and --fork says so. --print-command prints
the exact command line resume would run (the message goes on stdin, so it is
not part of it) and starts nothing.

Examples:
  agentctl resume 75098152 "now add tests for it"
  agentctl resume --wait 75098152 "run the linter and fix what it finds"
  agentctl resume --fork 75098152 "try the other approach instead"
  agentctl resume --print-command 75098152 -
  agentctl resume --json 75098152 "summarise what you changed" | jq -r '.[0].id'`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "fork", Usage: "continue in a new session, leaving this one as it is (claude-code)"},
			&cli.BoolFlag{Name: "print-command", Usage: "print the command line that would run (without the message) and start nothing"},
		}, withUsage(agentFlags(), "json", "print a JSON array of one {id, adapter, model, cwd, pid, log, launch_id}; resumed_from is the old id when the agent answers under a new one")...),
		Action: func(c *cli.Context) error {
			o, err := resumeOptionsFrom(c)
			if err != nil {
				return err
			}
			return runResume(c.Context, s, o)
		},
	}
}

// resumeOptions are resume's flags and arguments.
type resumeOptions struct {
	globalOptions
	agentOptions
	Args               []string // ID MESSAGE
	Fork, PrintCommand bool
}

// resumeOptionsFrom reads resume's flags and makes every usage check.
func resumeOptionsFrom(c *cli.Context) (resumeOptions, error) {
	ao, err := agentOptionsFrom(c)
	if err != nil {
		return resumeOptions{}, err
	}
	o := resumeOptions{globalOptions: globalsFrom(c), agentOptions: ao,
		Args: c.Args().Slice(), Fork: c.Bool("fork"), PrintCommand: c.Bool("print-command")}
	return o, o.check()
}

// check is every usage check of resume; it reads nothing (a MESSAGE "-" is
// checked once read).
func (o resumeOptions) check() error {
	if err := needArgs("resume", o.Args, 2, "a session ID and a MESSAGE"); err != nil {
		return err
	}
	if strings.TrimSpace(o.Args[1]) == "" && !o.PrintCommand {
		return emptyMessage()
	}
	return o.agentOptions.check()
}

func emptyMessage() error {
	return usageErrorf("resume: the MESSAGE is empty; say what the agent should do next")
}

// runResume continues a session. o comes checked from resumeOptionsFrom, or
// built by hand (tests): it is checked again, before anything is read.
func runResume(ctx context.Context, s *host, o resumeOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	msg := o.Args[1]
	if msg == "-" && !o.PrintCommand {
		b, err := io.ReadAll(s.In)
		if err != nil {
			return &exitError{exitFailed, fmt.Errorf("read the message from stdin: %w", err)}
		}
		msg = string(b)
	}
	if strings.TrimSpace(msg) == "" && !o.PrintCommand {
		return emptyMessage()
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	if !o.PrintCommand {
		if err := e.mustTrust("resume"); err != nil {
			return err
		}
	}
	st := newStarter(e)
	if _, err := budgetOf(o.agentOptions, st.config); err != nil {
		return err // before looking for the session: a bad config budget is a usage error
	}
	sess, env, err := e.resolve(ctx, o.Args[0])
	if err != nil {
		return err
	}
	drv, err := launch.DriverFor(sess.Adapter)
	if err != nil {
		return &exitError{exitFailed, err}
	}
	if o.Fork {
		if err := launch.CanFork(sess.Adapter); err != nil {
			return usageErrorf("resume --fork: %v", err)
		}
	}
	seen := seenOf(sess, env)
	if o.Fork || o.PrintCommand {
		// A fork writes a new session: the old one may keep running.
		seen.Alive = false
	}
	cwd, err := drv.Resumable(seen, o.Force)
	if err != nil {
		var busy *launch.BusyError
		if errors.As(err, &busy) {
			return &exitError{exitLocked, err}
		}
		return &exitError{exitFailed, err}
	}
	sp, err := st.agentSpec(o.agentOptions, o.globalOptions)
	if err != nil {
		return err
	}
	if sp.Home == "" && env.Home != e.home {
		st.atHome(sp, env.Home) // a `launch --home DIR` run resumes under DIR
	}
	sp.Kind, sp.SessionID, sp.Cwd = launch.KindResume, sess.ID, cwd
	sp.SessionPath, sp.SessionModel = sess.Path, sess.Model
	sp.Group, sp.Meta = sess.Group, mergeMeta(sess.Meta, sp.Meta)
	sp.Fork = o.Fork
	l := st.launcher
	planned, err := l.PlanSlots(ctx, launch.Ask{Slots: []launch.Slot{{Adapter: sess.Adapter}}, ConfigAdapter: st.configAdapter(),
		ConfigModel: e.config.Model, Agent: *sp, Prompt: launch.PromptInput{Prompt: msg}, CommandOnly: o.PrintCommand})
	if err != nil {
		return inputErr(err)
	}
	if o.PrintCommand {
		plan := planned[0].Command
		fmt.Fprintf(s.Out, "cd %s && %s\n", shellQuote(cwd), shellJoin(append([]string{plan.Bin}, plan.Args...)))
		return nil
	}
	res, err := l.Start(ctx, planned[0].Spec)
	return st.reportStart(ctx, o.agentOptions, res, err, sess.Adapter)
}

func mergeMeta(a, b map[string]string) map[string]string {
	if len(a) == 0 {
		return b
	}
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
