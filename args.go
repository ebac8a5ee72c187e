package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// reorderArgs moves flags that follow positional arguments in front of them, so
// `agentctl peek ID -n 5` works like `agentctl peek -n 5 ID` (urfave/cli stops
// parsing flags at the first positional argument). "--" ends flag parsing.
func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	i := 1
	// Global flags before the command.
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" {
		out = append(out, args[i])
		if takesValue(app.Flags, args[i]) && !strings.Contains(args[i], "=") && i+1 < len(args) {
			out = append(out, args[i+1])
			i++
		}
		i++
	}
	if i >= len(args) {
		return out
	}
	cmd := app.Command(args[i])
	if cmd == nil {
		return args
	}
	out = append(out, args[i])
	i++
	// Descend into subcommands, for a command that has them.
	for i < len(args) && len(cmd.Subcommands) > 0 {
		sub := cmd.Command(args[i])
		if sub == nil {
			break
		}
		cmd = sub
		out = append(out, args[i])
		i++
	}
	var flags, pos []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = append(flags, a)
			if takesValue(cmd.Flags, a) && !strings.Contains(a, "=") && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(append(out, flags...), pos...)
}

func takesValue(flags []cli.Flag, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if _, ok := f.(*cli.BoolFlag); ok {
				return false
			}
			return true
		}
	}
	return false
}
