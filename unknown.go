package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/internal/suggest"
)

// unknownCommand is the Action of the app and of every command that only groups
// subcommands: a name that matches no command is a usage error (exit 2), so a
// script that calls a command this agentctl does not have fails instead of
// silently succeeding. Without arguments it shows the help.
func unknownCommand(c *cli.Context, cmds []*cli.Command, see string) error {
	if !c.Args().Present() {
		return cli.ShowSubcommandHelp(c)
	}
	return unknownNamed(cmds, c.Args().First(), see)
}

// unknownNamed is the usage error for a command name that is none of cmds.
func unknownNamed(cmds []*cli.Command, name, see string) error {
	if near := closestCommand(cmds, name); near != "" {
		return usageErrorf("unknown command %q; did you mean %q? (see %s --help)", name, near, see)
	}
	return usageErrorf("unknown command %q (see %s --help)", name, see)
}

// closestCommand returns the visible command name nearest to name, when it is
// near enough to be a plausible typo (suggest.Closest).
func closestCommand(cmds []*cli.Command, name string) string {
	var names [][]string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names())
		}
	}
	return suggest.Closest(name, names)
}

// flagTypo rewrites the flag package's "flag provided but not defined: -jsn"
// as the user typed the flag (--jsn), with the nearest flag of the command
// that refused it and that command's own help; any other usage error is
// returned as it is. argv is the command line, to find the flag as typed.
func flagTypo(c *cli.Context, err error, argv []string) error {
	const notDefined = "flag provided but not defined: -"
	name, ok := strings.CutPrefix(err.Error(), notDefined)
	if !ok {
		return err
	}
	typed := "--" + name
	if len(name) == 1 {
		typed = "-" + name
	}
	for _, a := range argv {
		a, _, _ = strings.Cut(a, "=")
		if strings.HasPrefix(a, "-") && strings.TrimLeft(a, "-") == name {
			typed = a
			break
		}
	}
	see := "agentctl"
	flags := c.App.Flags
	if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
		see = c.Command.HelpName
		flags = c.Command.Flags
	}
	msg := "flag provided but not defined: " + typed
	if near := closestFlag(flags, name); near != "" {
		msg += "; did you mean " + near + "?"
	}
	return fmt.Errorf("%s (see %s --help)", msg, see)
}

// closestFlag is the visible flag nearest to name, spelt with its dashes, or
// "". One-letter names are left out: every other one-letter flag is one edit
// away from any of them.
func closestFlag(flags []cli.Flag, name string) string {
	if len([]rune(name)) < 2 {
		return ""
	}
	var names [][]string
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		var long []string
		for _, n := range f.Names() {
			if len([]rune(n)) > 1 {
				long = append(long, n)
			}
		}
		if len(long) > 0 {
			names = append(names, long)
		}
	}
	if near := suggest.Closest(name, names); near != "" {
		return "--" + near
	}
	return ""
}

// helpTopic is a Before that makes `help NAME` for a command that does not
// exist the usage error the command itself would be (urfave/cli prints a
// message and exits 0). cmds is read when it runs: the command list is
// complete only then.
func helpTopic(cmds func() []*cli.Command, see string, next cli.BeforeFunc) cli.BeforeFunc {
	return func(c *cli.Context) error {
		if args := c.Args(); args.Len() >= 2 && (args.First() == "help" || args.First() == "h") {
			name := args.Get(1)
			found := false
			for _, cmd := range cmds() {
				if cmd.HasName(name) {
					found = true
				}
			}
			if !found {
				return unknownNamed(cmds(), name, see)
			}
		}
		if next != nil {
			return next(c)
		}
		return nil
	}
}

// groupAction is the Action of a command that only groups subcommands.
func groupAction(see string) cli.ActionFunc {
	return func(c *cli.Context) error {
		return unknownCommand(c, c.Command.Subcommands, see)
	}
}
