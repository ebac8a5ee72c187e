package main

import (
	"os"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/meta"
)

// superviseCommand is the hidden `agentctl __supervise <launch-id>` that `launch`
// starts detached (setsid, stdio on the launch log). fd 3 is the report pipe to
// the launcher, fd 4 the prompt file that becomes the agent's stdin.
func superviseCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "__supervise",
		Hidden:    true,
		Usage:     "internal: supervise one launched agent (started by agentctl launch)",
		ArgsUsage: "LAUNCH-ID",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "state", Usage: "agentctl's state dir"},
			&cli.StringFlag{Name: "confirm-timeout", Usage: "how long to wait for the session confirmation"},
		},
		Action: func(c *cli.Context) error {
			if err := needArgs(c.Command.Name, c.Args().Slice(), 1, "one launch id"); err != nil {
				return err
			}
			state := c.String("state")
			if state == "" {
				return usageErrorf("__supervise is internal: agentctl launch starts it")
			}
			var timeout time.Duration
			if v := c.String("confirm-timeout"); v != "" {
				d, err := meta.ParseDuration(v)
				if err != nil {
					return usageErrorf("--confirm-timeout %q: %v", v, err)
				}
				timeout = d
			}
			ready, prompt := inheritedFile(3, "report"), inheritedFile(4, "prompt")
			if ready == nil || prompt == nil {
				return usageErrorf("__supervise is internal: agentctl launch starts it with its report pipe and prompt")
			}
			deps, logw := internalDeps(state, s, "supervisor")
			stopNotify := startSuperviseNotify(c.Context, s, state, c.Args().First(), deps.Config.Notify, logw)
			err := deps.Supervise(c.Context, c.Args().First(), ready, prompt, os.Environ(), timeout)
			stopNotify()
			if err != nil {
				logw("%v", err)
				return &exitError{exitFailed, nil}
			}
			return nil
		},
	}
}

// finaliseCommand is the hidden `agentctl __finalise <launch-id>` that a command
// reading sessions starts detached (launch.Deps.Detached) when it finalised a
// launch lazily: the on-complete hook, the webhook and a gateway's answer take
// their time here, never in the command that noticed the end.
func finaliseCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "__finalise",
		Hidden:    true,
		Usage:     "internal: the slow half of finalising one launch (started by the commands that read sessions)",
		ArgsUsage: "LAUNCH-ID",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "state", Usage: "agentctl's state dir"},
		},
		Action: func(c *cli.Context) error {
			if err := needArgs(c.Command.Name, c.Args().Slice(), 1, "one launch id"); err != nil {
				return err
			}
			state := c.String("state")
			if state == "" {
				return usageErrorf("__finalise is internal: the commands that read sessions start it")
			}
			deps, logw := internalDeps(state, s, "finaliser")
			if err := deps.FinishLaunch(c.Context, c.Args().First()); err != nil {
				logw("%v", err)
				return &exitError{exitFailed, nil}
			}
			return nil
		},
	}
}

// inheritedFile adopts an inherited descriptor and marks it close-on-exec, so the
// agent does not inherit the report pipe (the launcher must see EOF when the
// supervisor dies) or a second copy of its prompt.
func inheritedFile(fd int, name string) *os.File {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), name)
}
