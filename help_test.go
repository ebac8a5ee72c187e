package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestHelpEveryCommand holds every visible command's --help to the rules of
// issue 37 item 5: no "value" placeholder, no "(default: false)", no
// "[ --flag value ]" repeat, defaults spelled "(default: X)", the global flags
// not among the command's own, and an Examples section of its own, last.
func TestHelpEveryCommand(t *testing.T) {
	var paths [][]string
	for _, c := range newApp(&host{IOStreams: &IOStreams{}}).Commands {
		if c.Hidden {
			continue
		}
		paths = append(paths, []string{c.Name})
		for _, sc := range c.Subcommands {
			if !sc.Hidden && sc.Name != "help" {
				paths = append(paths, []string{c.Name, sc.Name})
			}
		}
	}
	if len(paths) < 25 {
		t.Fatalf("only %d commands found", len(paths))
	}
	bad := map[string]*regexp.Regexp{
		"a value placeholder":         regexp.MustCompile(`(?m)^ +-.* value( |$)`),
		"a boolean's default":         regexp.MustCompile(`default: false`),
		"a repeated list flag":        regexp.MustCompile(`\[ --`),
		"a default spelled otherwise": regexp.MustCompile(`(?m)^ +-.*([;,] default [^:]|\(default [^:])`),
		"a global flag in full":       regexp.MustCompile(`(?m)^ +--home DIR +read`),
		"a prose placeholder":         regexp.MustCompile("(?m)^ +(-[a-z], )?--[a-z-]+ [a-z`<].*"),
		"examples in the description": regexp.MustCompile(`(?s)Examples:.*\nFlags:`),
	}
	for _, p := range paths {
		name := strings.Join(p, " ")
		t.Run(name, func(t *testing.T) {
			s, out, errOut := testHost(t)
			args := append(append([]string{"agentctl"}, p...), "--help")
			if code := run(context.Background(), args, s); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			help := out.String()
			if !strings.HasPrefix(help, "agentctl "+name+": ") {
				t.Errorf("help does not start with %q:\n%s", "agentctl "+name+": ", help)
			}
			for what, re := range bad {
				// --hosts takes one value, all, shown as typed.
				if m := re.FindString(help); m != "" && !strings.HasPrefix(strings.TrimSpace(m), "--hosts all ") {
					t.Errorf("%s: %q\n%s", what, m, help)
				}
			}
			ex := regexp.MustCompile(`\n\nExamples:\n(  .+\n)+$`).FindString(help)
			if ex == "" {
				t.Errorf("no Examples section at the end:\n%s", help)
			}
			if !strings.Contains(ex, "  agentctl "+p[0]) && !strings.Contains(ex, "agentctl "+p[0]) {
				t.Errorf("no example of agentctl %s:\n%s", p[0], ex)
			}
		})
	}
}

// TestFlagLeft pins the flag column: short names first, the placeholder once.
func TestFlagLeft(t *testing.T) {
	for _, tc := range []struct {
		f    cli.Flag
		want string
	}{
		{&cli.StringFlag{Name: "prompt", Aliases: []string{"p"}, Usage: "the task (`TEXT`)"}, "-p, --prompt TEXT"},
		{&cli.BoolFlag{Name: "background", Usage: "`claude attach <short>` opens it"}, "--background"},
		{&cli.StringSliceFlag{Name: "host", Usage: "run on `HOST` (repeatable; `local` is this machine)"}, "--host HOST"},
		{&cli.StringFlag{Name: "hosts", Usage: "`all`: run on every host"}, "--hosts all"},
		{&cli.IntFlag{Name: "n", Usage: "number of messages"}, "-n N"},
		{&cli.StringFlag{Name: "base-branch", Usage: "base of --branch"}, "--base-branch BRANCH"},
		{&cli.StringFlag{Name: "check-timeout", Value: "10m", Usage: "kill a check after `DUR`"}, "--check-timeout DUR"},
	} {
		if got := flagLeft(tc.f); got != tc.want {
			t.Errorf("flagLeft(%s) = %q, want %q", tc.f.Names()[0], got, tc.want)
		}
	}
	if got := flagRight(&cli.StringFlag{Name: "check-timeout", Value: "10m", Usage: "kill a check after `DUR`"}); got != "kill a check after DUR (default: 10m)" {
		t.Errorf("flagRight = %q", got)
	}
	if got := flagRight(&cli.BoolFlag{Name: "json", Usage: "print JSON"}); got != "print JSON" {
		t.Errorf("flagRight of a boolean = %q", got)
	}
}
