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
	confirm := &cli.StringFlag{Name: "confirm-timeout", Usage: "how long to wait for the session confirmation"}
	return internalCommand("__supervise", "supervise one launched agent (started by agentctl launch)", "agentctl launch starts it", []cli.Flag{confirm},
		func(c *cli.Context, id, state string) error {
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
			stopNotify := startSuperviseNotify(c.Context, s, state, id, deps.Config.Notify, logw)
			err := deps.Supervise(c.Context, id, ready, prompt, os.Environ(), timeout)
			stopNotify()
			return loggedFailure(logw, err)
		})
}

// finaliseCommand is the hidden `agentctl __finalise <launch-id>` that a command
// reading sessions starts detached (launch.Deps.Detached) when it finalised a
// launch lazily: the on-complete hook, the webhook and a gateway's answer take
// their time here, never in the command that noticed the end.
func finaliseCommand(s *host) *cli.Command {
	return internalCommand("__finalise", "the slow half of finalising one launch (started by the commands that read sessions)", "the commands that read sessions start it", nil,
		func(c *cli.Context, id, state string) error {
			deps, logw := internalDeps(state, s, "finaliser")
			return loggedFailure(logw, deps.FinishLaunch(c.Context, id))
		})
}

// internalCommand is a hidden command on one launch id, given the state dir
// (--state) by whom starts it: startedBy, for the refusal when it is run
// without one. run gets the id and the state dir.
func internalCommand(name, usage, startedBy string, flags []cli.Flag, run func(c *cli.Context, id, state string) error) *cli.Command {
	return &cli.Command{
		Name:      name,
		Hidden:    true,
		Usage:     "internal: " + usage,
		ArgsUsage: "LAUNCH-ID",
		Flags:     append([]cli.Flag{&cli.StringFlag{Name: "state", Usage: "agentctl's state dir"}}, flags...),
		Action: func(c *cli.Context) error {
			if err := needArgs(c.Command.Name, c.Args().Slice(), 1, "one launch id"); err != nil {
				return err
			}
			state := c.String("state")
			if state == "" {
				return usageErrorf("%s is internal: %s", name, startedBy)
			}
			return run(c, c.Args().First(), state)
		},
	}
}

// loggedFailure is an internal command's end: err goes to its log, not to a
// terminal it does not have, and the exit says it failed.
func loggedFailure(logw func(string, ...any), err error) error {
	if err != nil {
		logw("%v", err)
		return &exitError{exitFailed, nil}
	}
	return nil
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
