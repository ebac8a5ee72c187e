package main

import (
	"github.com/urfave/cli/v2"
)

// unknownCommand is the Action of the app and of every command that only groups
// subcommands: a name that matches no command is a usage error (exit 2), so a
// script that calls a command this agentctl does not have fails instead of
// silently succeeding. Without arguments it shows the help.
func unknownCommand(c *cli.Context, cmds []*cli.Command, see string) error {
	if !c.Args().Present() {
		return cli.ShowSubcommandHelp(c)
	}
	name := c.Args().First()
	if near := closestCommand(cmds, name); near != "" {
		return usageErrorf("unknown command %q; did you mean %q? (see %s --help)", name, near, see)
	}
	return usageErrorf("unknown command %q (see %s --help)", name, see)
}

// closestCommand returns the visible command name nearest to name, when it is
// near enough to be a plausible typo: within one edit per three letters (at
// least one), or name is a prefix of exactly one command.
func closestCommand(cmds []*cli.Command, name string) string {
	best, bestDist := "", 0
	var prefixed []string
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		for _, n := range c.Names() {
			if len(name) >= 2 && len(n) > len(name) && n[:len(name)] == name {
				prefixed = append(prefixed, c.Name)
			}
			d := editDistance(name, n)
			if best == "" || d < bestDist {
				best, bestDist = c.Name, d
			}
		}
	}
	limit := max(1, len([]rune(name))/3)
	if best != "" && bestDist <= limit {
		return best
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, counted in runes,
// with a transposition of two neighbours counting as one edit ("sweep" for
// "swepe").
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// groupAction is the Action of a command that only groups subcommands.
func groupAction(see string) cli.ActionFunc {
	return func(c *cli.Context) error {
		return unknownCommand(c, c.Command.Subcommands, see)
	}
}
