// Command agentctl supervises AI coding-agent sessions — Claude Code, Codex CLI,
// OpenCode, Pi/pi-rust and OpenClaw — without a daemon: every command asks the
// agents' own files, registries, gateways and the live process table, now.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/claude"
	"github.com/agentctl/agentctl/discover/codex"
	"github.com/agentctl/agentctl/discover/copilot"
	"github.com/agentctl/agentctl/discover/gemini"
	"github.com/agentctl/agentctl/discover/openclaw"
	"github.com/agentctl/agentctl/discover/opencode"
	"github.com/agentctl/agentctl/discover/pi"
	"github.com/agentctl/agentctl/discover/qwen"
	"github.com/agentctl/agentctl/remote"
	"github.com/agentctl/agentctl/remote/fleet"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Exit codes (README "Exit codes").
const (
	exitOK        = 0
	exitFailed    = 1
	exitUsage     = 2
	exitNotFound  = 3
	exitAmbiguous = 4
	exitLocked    = 5
	exitTimeout   = 124
)

// exitError carries an exit code up to main; its message is printed once, there.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

// allAdapters builds the read-side adapters, one per agents.Readers() name (a
// test pins the two). It is a function, not a package variable: no global
// mutable state.
func allAdapters() []discover.Adapter {
	return []discover.Adapter{claude.New(), codex.New(), opencode.New(), pi.New(), openclaw.New(),
		gemini.New(), qwen.New(), copilot.New()}
}

// IOStreams is a command's I/O (the gh shape): tests inject buffers and run
// commands in-process.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	outTTY bool // Out is a terminal: colour, redraws
	// outWidth is the terminal's width in columns when Out is one (tables
	// fit it), 0 otherwise: a pipe gets every column in full.
	outWidth int

	warnMu sync.Mutex
	warned map[string]bool // each warning once per command, however often it recurs
}

// IsTTY reports whether Out is a terminal.
func (s *IOStreams) IsTTY() bool { return s.outTTY }

// host is everything a command takes from the machine besides its arguments:
// its streams, environment, clock, and the agentctl executable that detached
// helpers (supervisor, finaliser) run as. Tests replace any of it.
type host struct {
	*IOStreams
	getenv     func(string) string
	now        func() time.Time
	executable func() (string, error)
	argv       []string // the command line, reordered (commands across hosts send it on)
}

// realHost is the machine itself.
func realHost() *host {
	tty := isTerminal(os.Stdout)
	return &host{IOStreams: &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, outTTY: tty, outWidth: termWidth(tty, os.Stdout, os.Getenv)},
		getenv: os.Getenv, now: time.Now, executable: os.Executable}
}

func main() { os.Exit(runSignalled(realHost(), os.Args)) }

// runSignalled is run with the signals that end a command cancelling its
// context (the test binary's agentctl runs it too). A closed terminal (SIGHUP)
// ends a command as ^C does: a launch still waiting for its agent's
// confirmation stops the agent and removes the prompt file instead of dying
// with both left behind.
func runSignalled(s *host, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return run(ctx, args, s)
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, s *host) int {
	app := newApp(s)
	s.argv = reorderArgs(app, args)
	setHelp(app, s.argv)
	err := app.RunContext(ctx, s.argv)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintf(s.ErrOut, "agentctl: %s\n", termSafeText(ee.err.Error()))
		}
		return ee.code
	}
	var ce cli.ExitCoder
	if errors.As(err, &ce) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(s.ErrOut, "agentctl: %s\n", termSafeText(msg))
		}
		return ce.ExitCode()
	}
	fmt.Fprintf(s.ErrOut, "agentctl: %s\n", termSafeText(err.Error()))
	return exitFailed
}

// globalFlags are accepted before and after the command name.
func globalFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "home", Usage: "read agents' files under `DIR` instead of $HOME (and launch agents with HOME=DIR); never writes there: agentctl's state stays in $AGENTCTL_HOME or your ~/.agentctl"},
		&cli.StringSliceFlag{Name: "adapter", Usage: "only the sessions of adapter `NAME` (repeatable, or a comma list): " + strings.Join(agents.Names(), ", ")},
		&cli.StringFlag{Name: "timeout", Usage: "how long each adapter may take to answer, a `DUR` (env AGENTCTL_ADAPTER_TIMEOUT) (default: 5s)"},
		&cli.BoolFlag{Name: "no-color", Usage: "no colour (also NO_COLOR); colour is only used on a terminal"},
	}, hostFlags()...)
}

func newApp(s *host) *cli.App {
	hosts := newAcrossHosts(s)
	app := &cli.App{
		Name:      "agentctl",
		Usage:     "see, inspect and control every AI coding-agent session on this machine",
		Version:   version,
		Reader:    s.In,
		Writer:    s.Out,
		ErrWriter: s.ErrOut,
		Flags: append(globalFlags(), &cli.BoolFlag{Name: "version", Aliases: []string{"v"},
			Usage: "print agentctl's version (as the version command)"}),
		HideVersion:          true, // the flag above, printed by printVersion, not urfave's "agentctl version dev"
		EnableBashCompletion: true,
		Description: `agentctl has no daemon: every command reads the agents' own files, registries and
gateways and the live process table at the moment it runs.

Examples:
  agentctl list                 sessions that are alive now
  agentctl list -a --json       every session of the last 7 days, as JSON
  agentctl status 75098152      all fields of one session (unique id prefix is enough)
  agentctl peek -n 5 75098152   its last 5 messages
  agentctl launch codex -p "fix the flaky test" --wait
  agentctl launch --adapter claude-code --adapter codex -p "add a cache"   a comparison group
  agentctl compare g-3f2a9c --check 'go test ./...'
  agentctl accept 6b1e0c52 --clean   take one slot's work into the base branch

State: agentctl's own records live in $AGENTCTL_HOME (default: ~/.agentctl); a
relative AGENTCTL_HOME is resolved once against the directory agentctl starts in
(cron runs elsewhere: prefer an absolute path). If it is a file, unreadable or
cannot be created, reading commands go on without it (one warning) and writing
ones fail naming it.

Exit codes: 0 ok, 1 failed, 2 usage, 3 not found, 4 ambiguous id, 5 locked, 124 wait timeout.`,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			if typo := flagTypo(c, err, s.argv); typo != err {
				return &exitError{exitUsage, typo}
			}
			return usageErrorf("%v (see agentctl --help)", err)
		},
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(s.ErrOut, "agentctl: unknown command %q (see agentctl --help)\n", name)
		},
		Action: func(c *cli.Context) error {
			if c.Bool("version") && !c.Args().Present() {
				return printVersion(s, false)
			}
			return unknownCommand(c, c.App.Commands, "agentctl")
		},
		ExitErrHandler: func(*cli.Context, error) {}, // errors are printed once, in run
		Commands: []*cli.Command{
			hosts.on(listCommand(s), listAcross(s)),
			hosts.on(statusCommand(s), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID})),
			hosts.on(peekCommand(s, "peek", 20), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID})),
			hosts.on(peekCommand(s, "logs", 50), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID})),
			versionCommand(s),
			hosts.on(launchCommand(s), same(fleet.Spec{Mode: fleet.OneHost, Stdin: fleet.PromptFlag})),
			hosts.on(compareCommand(s), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstName})),
			hosts.on(acceptCommand(s), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID})),
			worktreeCommand(s),
			hosts.on(stopCommand(s), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID})),
			hosts.on(resumeCommand(s), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID, Stdin: fleet.SecondArg})),
			hosts.on(sendCommand(s), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID, Stdin: fleet.SecondArg})),
			hosts.on(waitCommand(s), same(fleet.Spec{Mode: fleet.PerHost, IDs: fleet.AllIDs})),
			notifyHostsCommand(s, hosts),
			lockCommand(s),
			unlockCommand(s),
			hosts.on(locksCommand(s), locksAcross(s)),
			sweepCommand(s),
			hosts.on(metricsCommand(s), metricsAcross(s)),
			usageHostsCommand(s, hosts),
			hosts.on(doctorCommand(s), same(fleet.Spec{Mode: fleet.Merged, AskJSON: true, Print: fleet.PrintArray, Verdict: true})),
			completionCommand(s),
			completeCommand(s),
			superviseCommand(s),
			fuseCommand(s),
			fusesCommand(s),
			hosts.on(eventsCommand(s), eventsAcross()),
			finaliseCommand(s),
			fireFusesCommand(s),
		},
	}
	app.Before = helpTopic(func() []*cli.Command { return app.Commands }, "agentctl", app.Before)
	for _, c := range app.Commands {
		c.Flags = appendMissing(c.Flags, globalFlags())
		c.OnUsageError = app.OnUsageError
		if len(c.Subcommands) > 0 {
			c.Before = helpTopic(func() []*cli.Command { return c.Subcommands }, "agentctl "+c.Name, c.Before)
		}
		for _, sc := range c.Subcommands {
			sc.Flags = append(sc.Flags, globalFlags()...)
			sc.OnUsageError = app.OnUsageError
		}
	}
	hosts.refuseOthers(app)
	jsonErrors(s, app.Commands) // output.go: a failing --json command still answers in JSON
	return app
}

// appendMissing appends the flags whose names fs does not define yet (launch
// defines its own ordered --adapter).
func appendMissing(fs, more []cli.Flag) []cli.Flag {
	have := map[string]bool{}
	for _, f := range fs {
		for _, n := range f.Names() {
			have[n] = true
		}
	}
	for _, f := range more {
		if !have[f.Names()[0]] {
			fs = append(fs, f)
		}
	}
	return fs
}

func versionCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print agentctl's version (also --version, -v)",
		Description: `Prints the version and what the binary was built from: the module version (or
dev), the commit, its day, and "modified" for a tree with uncommitted changes.

Examples:
  agentctl version
  agentctl --version
  agentctl version --json | jq -r .revision`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print {version, protocol, revision, time, modified} (what another agentctl checks over ssh)"}},
		Action: func(c *cli.Context) error {
			return printVersion(s, c.Bool("json"))
		},
	}
}

// printVersion is `version` and `--version`: one line for people, or the JSON
// line a remote agentctl's caller reads first (remote/ssh.go's versionLine: its
// version and protocol fields must stay; more fields are ignored there).
func printVersion(s *host, asJSON bool) error {
	bi, _ := debug.ReadBuildInfo()
	b := stampOf(version, bi)
	if asJSON {
		j, err := json.Marshal(struct {
			Version  string `json:"version"`
			Protocol int    `json:"protocol"`
			Revision string `json:"revision,omitempty"`
			Time     string `json:"time,omitempty"`
			Modified bool   `json:"modified,omitempty"`
		}{b.version, remote.Protocol, b.revision, b.time, b.modified})
		if err != nil {
			return err
		}
		fmt.Fprintf(s.Out, "%s\n", j)
		return nil
	}
	fmt.Fprintf(s.Out, "agentctl %s\n", b)
	return nil
}

// stamp is what a binary knows about the source it was built from.
type stamp struct {
	version  string // -ldflags main.version, else the module version (go install m@v1.2.3), else "dev"
	revision string // VCS commit, as go build stamps it in a checkout
	time     string // the commit's time, RFC 3339
	modified bool   // built from a tree with uncommitted changes
}

// stampOf reads the stamp from the linker flag and the build info: a release
// build sets main.version; `go install …@v1.2.3` records the module version;
// `go build` in a git checkout records the commit (not the version: a
// pseudo-version there would only repeat the commit).
func stampOf(ldVersion string, bi *debug.BuildInfo) stamp {
	b := stamp{version: ldVersion}
	if bi == nil {
		return b
	}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			b.revision = kv.Value
		case "vcs.time":
			b.time = kv.Value
		case "vcs.modified":
			b.modified = kv.Value == "true"
		}
	}
	// A pseudo-version (v0.0.0-20261202015500-475f718abcde) embeds the
	// commit's first 12 hex digits; "+dirty" repeats vcs.modified.
	v := strings.TrimSuffix(bi.Main.Version, "+dirty")
	pseudo := b.revision != "" && strings.Contains(v, b.revision[:min(12, len(b.revision))])
	if b.version == "dev" && v != "" && v != "(devel)" && !pseudo {
		b.version = v
	}
	return b
}

// String is `dev (rev abc1234, 2026-12-02, modified)`: the short commit and
// the commit's day, as `git log --oneline` and a bug report want them.
func (b stamp) String() string {
	var parts []string
	if b.revision != "" {
		parts = append(parts, "rev "+b.revision[:min(7, len(b.revision))])
	}
	if t, err := time.Parse(time.RFC3339, b.time); err == nil {
		parts = append(parts, t.UTC().Format(time.DateOnly))
	}
	if b.modified {
		parts = append(parts, "modified")
	}
	if len(parts) == 0 {
		return b.version
	}
	return b.version + " (" + strings.Join(parts, ", ") + ")"
}
