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

Examples:
  agentctl resume 75098152 "now add tests for it"
  agentctl resume --wait 75098152 "run the linter and fix what it finds"`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "fork", Usage: "continue in a new session (not supported yet)"},
		}, agentFlags()...),
		Action: func(c *cli.Context) error {
			return runResume(c.Context, s, resumeOptions{globalOptions: globalsFrom(c), agentOptions: agentOptionsFrom(c),
				Args: c.Args().Slice(), Fork: c.Bool("fork")})
		},
	}
}

// resumeOptions are resume's flags and arguments.
type resumeOptions struct {
	globalOptions
	agentOptions
	Args []string // ID MESSAGE
	Fork bool
}

func runResume(ctx context.Context, s *host, o resumeOptions) error {
	if err := needArgs("resume", o.Args, 2, "a session ID and a MESSAGE"); err != nil {
		return err
	}
	if o.Fork {
		return usageErrorf("resume --fork is not supported yet")
	}
	msg := o.Args[1]
	if msg == "-" {
		b, err := io.ReadAll(s.In)
		if err != nil {
			return &exitError{exitFailed, fmt.Errorf("read the message from stdin: %w", err)}
		}
		msg = string(b)
	}
	if strings.TrimSpace(msg) == "" {
		return usageErrorf("resume: the MESSAGE is empty; say what the agent should do next")
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	sess, env, err := e.resolve(ctx, o.Args[0])
	if err != nil {
		return err
	}
	drv, err := launch.DriverFor(sess.Adapter)
	if err != nil {
		return &exitError{exitFailed, fmt.Errorf("resuming %s sessions is not supported yet", sess.Adapter)}
	}
	cwd, err := drv.Resumable(seenOf(sess, env), o.Force)
	if err != nil {
		var busy *launch.BusyError
		if errors.As(err, &busy) {
			return &exitError{exitLocked, err}
		}
		return &exitError{exitFailed, err}
	}
	sp, err := e.agentSpec(o.agentOptions, o.globalOptions, sess.Adapter)
	if err != nil {
		return err
	}
	sp.Kind, sp.SessionID, sp.Cwd = launch.KindResume, sess.ID, cwd
	sp.SessionPath, sp.SessionModel = sess.Path, sess.Model
	sp.Prompt, sp.Summary = msg, truncateBytes(msg, 4096)
	sp.Group, sp.Meta = sess.Group, mergeMeta(sess.Meta, sp.Meta)
	res, err := e.launcher().Start(ctx, *sp)
	return e.reportStart(ctx, o.agentOptions, res, err, sess.Adapter)
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
