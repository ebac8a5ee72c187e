package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/remote"
	"github.com/agentctl/agentctl/remote/fleet"
)

// Several machines (README "Several machines"): remote/fleet runs a command on
// the hosts named and merges the answers; this file is its glue with the
// command line. Each command declares how it runs across hosts where it is
// registered (newApp): hosts.on(cmd, spec); the others refuse --host.

// hostFlags are global: accepted before and after the command.
func hostFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "host", Usage: "also run on ssh destination `HOST` (repeatable; local is this machine; see README \"Several machines\")"},
		&cli.StringFlag{Name: "hosts", Usage: "`all`: run on every host of config hosts"},
		&cli.IntFlag{Name: "parallel", Value: fleet.DefaultParallel, Usage: "across hosts: at most `N` ssh calls at once"},
		&cli.BoolFlag{Name: remote.VersionLineFlag, Hidden: true, Usage: "print the line of version --json first (what the agentctl that called over ssh reads)"},
	}
}

// versionFirst prints the version line first when the agentctl that called
// this one over ssh asked for it (remote/ssh.go): the same process answers
// both, instead of a `version --json` of its own before each call.
func versionFirst(c *cli.Context, s *host) error {
	if !flagBool(c, remote.VersionLineFlag) {
		return nil
	}
	return printVersion(s, true)
}

// remoteSpec is how a command runs across hosts, from its command line (list
// --watch is refused there, events --follow streams).
type remoteSpec func(c *cli.Context) fleet.Spec

// same is a remoteSpec that does not depend on the command line.
func same(sp fleet.Spec) remoteSpec { return func(*cli.Context) fleet.Spec { return sp } }

// acrossHosts remembers which commands declared how they run across hosts,
// so that the others refuse --host instead of ignoring it.
type acrossHosts struct {
	s        *host
	declared map[*cli.Command]bool
}

func newAcrossHosts(s *host) *acrossHosts {
	return &acrossHosts{s: s, declared: map[*cli.Command]bool{}}
}

// on makes cmd run across hosts as spec says when hosts are named (or an
// argument is host:id); without, it runs as before.
func (a *acrossHosts) on(cmd *cli.Command, spec remoteSpec) *cli.Command {
	a.declared[cmd] = true
	local, s := cmd.Action, a.s
	cmd.Action = func(c *cli.Context) error {
		if err := versionFirst(c, s); err != nil {
			return err
		}
		sp := spec(c)
		l := hostLine(c, s, cmd.Name)
		if !sp.Wanted(l) {
			return local(c)
		}
		o, ok, err := remoteOptionsFrom(c, s, sp, l)
		if err != nil {
			return fromFleet(err)
		}
		if !ok {
			return local(c)
		}
		return fromFleet(fleet.Run(c.Context, fleetStreams(s), o))
	}
	return cmd
}

// refuseOthers makes every command that did not declare how it runs across
// hosts refuse --host rather than ignore it and act on this machine.
func (a *acrossHosts) refuseOthers(app *cli.App) {
	for _, c := range app.Commands {
		if !a.declared[c] {
			refuseHosts(a.s, c, "")
		}
	}
}

func refuseHosts(s *host, c *cli.Command, parent string) {
	name := strings.TrimSpace(parent + " " + c.Name)
	for _, sc := range c.Subcommands {
		refuseHosts(s, sc, name)
	}
	local := c.Action
	if local == nil {
		return
	}
	c.Action = func(cc *cli.Context) error {
		if err := versionFirst(cc, s); err != nil {
			return err
		}
		if len(flagStrings(cc, "host")) > 0 || flagString(cc, "hosts") != "" {
			return usageErrorf("%s runs on this machine only; on another, run it there: ssh HOST agentctl %s …", name, name)
		}
		return local(cc)
	}
}

// remoteOptionsFrom chooses the hosts (config hosts from agentctl's config)
// and the runner; ok is false when the command runs locally after all.
func remoteOptionsFrom(c *cli.Context, s *host, sp fleet.Spec, l fleet.Line) (fleet.Options, bool, error) {
	e, err := setup(s, globalsFrom(c))
	if err != nil {
		return fleet.Options{}, false, err
	}
	var cfg []remote.Host
	for _, h := range e.config.Hosts {
		cfg = append(cfg, remote.Host{Name: h.Host, Agentctl: h.Agentctl})
	}
	o, ok, err := fleet.Select(sp, l, cfg, e.store.Path("config.json"))
	if err != nil || !ok {
		return o, false, err
	}
	o.Timeout = e.timeout
	self, err := s.executable()
	if err != nil {
		return o, false, &exitError{exitFailed, fmt.Errorf("cannot find agentctl's own executable (for the host local): %w", err)}
	}
	o.Runner, err = remote.NewRunner(s.getenv("AGENTCTL_SSH"), self, version)
	if err != nil {
		return o, false, usageErrorf("%v", err)
	}
	// One ssh connection per host, shared by every call (remote/control.go);
	// without a directory for the sockets, each call connects on its own.
	if dir, err := remote.ControlDir(e.store.Dir); err == nil {
		o.Runner.ControlDir = dir
	} else {
		warn(s, fmt.Sprintf("ssh connections are not shared (one per call): %v", err))
	}
	return o, true, nil
}

// custom makes cmd run as run says when hosts are named (--host, --hosts):
// for commands whose work across hosts is more than merging answers (notify
// keeps its marks here). Without hosts it runs as before.
func (a *acrossHosts) custom(cmd *cli.Command, sp fleet.Spec, run func(c *cli.Context, o fleet.Options) error) *cli.Command {
	a.declared[cmd] = true
	local, s := cmd.Action, a.s
	cmd.Action = func(c *cli.Context) error {
		if err := versionFirst(c, s); err != nil {
			return err
		}
		l := hostLine(c, s, cmd.Name)
		if len(l.Host) == 0 && l.Hosts == "" {
			return local(c)
		}
		o, ok, err := remoteOptionsFrom(c, s, sp, l)
		if err != nil {
			return fromFleet(err)
		}
		if !ok {
			return local(c)
		}
		return fromFleet(run(c, o))
	}
	return cmd
}

// hostLine is the command line as remote/fleet reads it.
func hostLine(c *cli.Context, s *host, name string) fleet.Line {
	return fleet.Line{Name: name, Host: flagStrings(c, "host"), Hosts: flagString(c, "hosts"), Args: c.Args().Slice(),
		Argv: s.argv, JSON: c.Bool("json"), Strict: c.Bool("strict"), Follow: c.Bool("follow"), Parallel: flagInt(c, "parallel")}
}

// watchClear is what a --watch across hosts draws before each round: on a
// terminal, a clear screen and the time.
func watchClear(s *host, name string, asJSON bool) func(*fleet.Streams) {
	return func(st *fleet.Streams) {
		if s.IsTTY() && !asJSON {
			fmt.Fprint(st.Out, "\x1b[H\x1b[2J")
			fmt.Fprintf(st.Out, "agentctl %s — %s (Ctrl-C to stop)\n\n", name, s.now().Format("15:04:05"))
		}
	}
}

func flagInt(c *cli.Context, name string) int {
	cc, _ := lookup(c, name)
	return cc.Int(name)
}

// fleetStreams are the host's streams as remote/fleet prints to them: a
// host's relayed stderr lines in turn with the warnings, its text output
// through the same sanitiser (termSafeText).
func fleetStreams(s *host) *fleet.Streams {
	return &fleet.Streams{In: s.In, Out: s.Out,
		Warn: func(msg string) { warn(s, msg) },
		Relay: func(l string) {
			s.warnMu.Lock()
			fmt.Fprintln(s.ErrOut, termSafeText(l))
			s.warnMu.Unlock()
		},
		Text: termSafeText}
}

// fromFleet turns remote/fleet's exit codes into ours.
func fromFleet(err error) error {
	var fe *fleet.Error
	if errors.As(err, &fe) {
		return &exitError{fe.Code, fe.Err}
	}
	return err
}
