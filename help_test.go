package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/meta"
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
		"a default spelled otherwise": regexp.MustCompile(`(?m)^ +-.*[;,] default [^:]|\(default [^:]`),
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

// TestHumanEventColumnsAligned: events on a terminal stream one per line in
// fixed columns, whatever each event has (issue 37 item 16); the time carries
// the date when it is not today.
func TestHumanEventColumnsAligned(t *testing.T) {
	now := time.Date(2026, 11, 20, 23, 0, 0, 0, time.Local)
	evs := []meta.Event{
		{Timestamp: now.Add(-time.Hour), Type: meta.EventStarted, Adapter: "codex", SessionID: "019a-abcdef-0123", Session: map[string]any{"cwd": "/w/a"}},
		{Timestamp: now.Add(-2 * time.Hour), Type: meta.EventBudgetExceeded, Adapter: "claude-code", SessionID: "75098152-d081", Session: map[string]any{"cwd": "/w/b"}},
		{Timestamp: now.Add(-3 * time.Hour), Type: meta.EventLockAcquired, Directory: "/w/c"},
	}
	var lines []string
	for _, ev := range evs {
		lines = append(lines, humanEvent(ev, "/home/x", now))
	}
	want := []string{
		// The type column is as wide as the longest type, session.message_delivered.
		"22:00:00  session.started            codex        019a-abcdef-  /w/a",
		"21:00:00  session.budget_exceeded    claude-code  75098152-d08  /w/b",
		"20:00:00  lock.acquired              -            -             /w/c",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("human events (-want +got):\n%s", diff)
	}
	old := humanEvent(meta.Event{Timestamp: now.AddDate(0, 0, -3), Type: meta.EventStopped, Adapter: "pi", SessionID: "x"}, "", now)
	if !strings.HasPrefix(old, "2026-11-17 23:00:00  session.stopped ") {
		t.Errorf("an event of another day: %q", old)
	}
}

// TestMoney pins the one cost rule: cents from a cent up, two significant
// digits below it, never $0.00 for a cost that is not zero.
func TestMoney(t *testing.T) {
	for in, want := range map[float64]string{
		0: "$0.00", 0.00056: "$0.00056", 0.0005600000000000001: "$0.00056", 0.00035: "$0.00035",
		0.0007: "$0.0007", 0.005: "$0.005", 0.0099999: "$0.01", 0.01: "$0.01", 0.41: "$0.41",
		12.3: "$12.30", 0.000000004: "$0.000000004", 1234.567: "$1234.57",
	} {
		if got := money(in); got != want {
			t.Errorf("money(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestShortenAndFit pins how a table gives way: shortening keeps a path's end,
// and columns drop in their order only when shortening is not enough.
func TestShortenAndFit(t *testing.T) {
	if got := shorten("/home/dev/api-server", 10, true); got != "…pi-server" {
		t.Errorf("shorten keepEnd = %q", got)
	}
	if got := shorten("TOOLTEST please run it", 10, false); got != "TOOLTEST …" {
		t.Errorf("shorten = %q", got)
	}
	var tb table
	tb.add("A", "LONGCOLUMN", "PROMPT")
	tb.add("1", "xxxxxxxxxx", "a fairly long prompt here")
	tb.fitTo(30, colFit{}, colFit{drop: 1}, colFit{min: 10})
	var b strings.Builder
	tb.write(&b, nil)
	want := "A  LONGCOLUMN  PROMPT\n1  xxxxxxxxxx  a fairly long …\n"
	if b.String() != want {
		t.Errorf("fit 30:\n%s\nwant:\n%s", b.String(), want)
	}
	var tb2 table
	tb2.add("A", "LONGCOLUMN", "PROMPT")
	tb2.add("1", "xxxxxxxxxx", "a fairly long prompt here")
	tb2.fitTo(20, colFit{}, colFit{drop: 1}, colFit{min: 10})
	b.Reset()
	tb2.write(&b, nil)
	want = "A  PROMPT\n1  a fairly long pr…\n"
	if b.String() != want {
		t.Errorf("fit 20:\n%s\nwant:\n%s", b.String(), want)
	}
}
