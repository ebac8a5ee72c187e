package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/locks"
)

func resumeCommand(s *streams) *cli.Command {
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
			if err := needArgs(c, 2, "a session ID and a MESSAGE"); err != nil {
				return err
			}
			if c.Bool("fork") {
				return usageErrorf("resume --fork is not supported yet")
			}
			msg := c.Args().Get(1)
			if msg == "-" {
				b, err := io.ReadAll(s.in)
				if err != nil {
					return &exitError{exitFailed, fmt.Errorf("read the message from stdin: %w", err)}
				}
				msg = string(b)
			}
			if strings.TrimSpace(msg) == "" {
				return usageErrorf("resume: the MESSAGE is empty; say what the agent should do next")
			}
			e, err := setup(c, s)
			if err != nil {
				return err
			}
			sess, _, err := e.resolve(c.Context, c.Args().First())
			if err != nil {
				return err
			}
			if _, err := launch.DriverFor(sess.Adapter); err != nil {
				return &exitError{exitFailed, fmt.Errorf("resuming %s sessions is not supported yet", sess.Adapter)}
			}
			if discover.Alive(sess.Status) {
				inferred := sess.Evidence == discover.EvidenceProcess || sess.Status == discover.StatusUnknown
				if !inferred || !c.Bool("force") {
					pid := ""
					if sess.PID > 0 {
						pid = fmt.Sprintf("pid %d, ", sess.PID)
					}
					return &exitError{exitLocked, fmt.Errorf("%s is still %s (%sevidence %s); wait for it or stop it first — two writers would interleave one transcript", sess.ID, sess.Status, pid, sess.Evidence)}
				}
			}
			// An OpenClaw session lives in its gateway's workspace: no directory.
			gateway := sess.Adapter == "openclaw"
			if sess.Cwd == "" && !gateway {
				return &exitError{exitFailed, fmt.Errorf("%s has no recorded start directory; cannot resume it", sess.ID)}
			}
			cwd := ""
			if !gateway {
				if st, err := os.Stat(sess.Cwd); err != nil || !st.IsDir() {
					return &exitError{exitFailed, fmt.Errorf("start directory %s no longer exists; %s only resumes a session from its own directory", sess.Cwd, sess.Adapter)}
				}
				if cwd, err = locks.Canonical(sess.Cwd); err != nil {
					return &exitError{exitFailed, err}
				}
			}
			sp, err := e.agentSpec(c, sess.Adapter)
			if err != nil {
				return err
			}
			sp.Kind, sp.SessionID, sp.Cwd = launch.KindResume, sess.ID, cwd
			sp.SessionPath, sp.SessionModel = sess.Path, sess.Model
			sp.Prompt, sp.Summary = msg, truncateBytes(msg, 4096)
			sp.Group, sp.Meta = sess.Group, mergeMeta(sess.Meta, sp.Meta)
			res, err := e.launcher().Start(c.Context, *sp)
			return e.reportStart(c, res, err, sess.Adapter)
		},
	}
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
