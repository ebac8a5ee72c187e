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
	"path/filepath"
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
	"github.com/agentctl/agentctl/meta"
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
	return &host{IOStreams: &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, outTTY: isTerminal(os.Stdout)},
		getenv: os.Getenv, now: time.Now, executable: os.Executable}
}

func main() {
	s := realHost()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, s)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, s *host) int {
	app := newApp(s)
	s.argv = reorderArgs(app, args)
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
		&cli.StringSliceFlag{Name: "adapter", Usage: "only these adapters (repeatable): " + strings.Join(agents.Names(), ", ")},
		&cli.StringFlag{Name: "timeout", Usage: "per-adapter discovery timeout (`DUR`, default 5s; env AGENTCTL_ADAPTER_TIMEOUT)"},
		&cli.BoolFlag{Name: "no-color", Usage: "no colour (also NO_COLOR); colour is only used on a terminal"},
	}, hostFlags()...)
}

func newApp(s *host) *cli.App {
	hosts := newAcrossHosts(s)
	app := &cli.App{
		Name:                 "agentctl",
		Usage:                "see, inspect and control every AI coding-agent session on this machine",
		Version:              version,
		Reader:               s.In,
		Writer:               s.Out,
		ErrWriter:            s.ErrOut,
		Flags:                globalFlags(),
		HideVersion:          true,
		EnableBashCompletion: true,
		Description: `agentctl has no daemon: every command reads the agents' own files, registries and
gateways and the live process table at the moment it runs.

Examples:
  agentctl list                 sessions that are alive now
  agentctl list -a --json       every session of the last 7 days, as JSON
  agentctl status 75098152      all fields of one session (unique id prefix is enough)
  agentctl peek -n 5 75098152   its last 5 messages

Exit codes: 0 ok, 1 failed, 2 usage, 3 not found, 4 ambiguous id, 5 locked, 124 wait timeout.`,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErrorf("%v (see agentctl --help)", err)
		},
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(s.ErrOut, "agentctl: unknown command %q (see agentctl --help)\n", name)
		},
		Action:         func(c *cli.Context) error { return unknownCommand(c, c.App.Commands, "agentctl") },
		ExitErrHandler: func(*cli.Context, error) {}, // errors are printed once, in run
		Commands: []*cli.Command{
			hosts.on(listCommand(s), listAcross(s)),
			hosts.on(statusCommand(s), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID})),
			hosts.on(peekCommand(s, "peek", 20), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID})),
			hosts.on(peekCommand(s, "logs", 50), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID})),
			versionCommand(s),
			hosts.on(launchCommand(s), same(fleet.Spec{Mode: fleet.OneHost, Stdin: fleet.PromptFlag})),
			compareCommand(s),
			acceptCommand(s),
			worktreeCommand(s),
			hosts.on(stopCommand(s), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID})),
			hosts.on(resumeCommand(s), same(fleet.Spec{Mode: fleet.OneHost, IDs: fleet.FirstID, Stdin: fleet.SecondArg})),
			hosts.on(waitCommand(s), same(fleet.Spec{Mode: fleet.PerHost, IDs: fleet.AllIDs})),
			notifyCommand(s),
			lockCommand(s),
			unlockCommand(s),
			hosts.on(locksCommand(s), locksAcross(s)),
			sweepCommand(s),
			hosts.on(metricsCommand(s), metricsAcross(s)),
			usageCommand(s),
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
	for _, c := range app.Commands {
		c.Flags = appendMissing(c.Flags, globalFlags())
		c.OnUsageError = app.OnUsageError
		for _, sc := range c.Subcommands {
			sc.Flags = append(sc.Flags, globalFlags()...)
			sc.OnUsageError = app.OnUsageError
		}
	}
	hosts.refuseOthers(app)
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
		Usage: "print agentctl's version",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print {version, protocol} (what another agentctl checks over ssh)"}},
		Action: func(c *cli.Context) error {
			if c.Bool("json") {
				b, err := json.Marshal(struct {
					Version  string `json:"version"`
					Protocol int    `json:"protocol"`
				}{version, remote.Protocol})
				if err != nil {
					return err
				}
				fmt.Fprintf(s.Out, "%s\n", b)
				return nil
			}
			fmt.Fprintf(s.Out, "agentctl %s\n", version)
			return nil
		},
	}
}

// lookup returns a flag's value from the innermost context that set it, so global
// flags work before or after the command name.
func lookup(c *cli.Context, name string) (*cli.Context, bool) {
	for _, cc := range c.Lineage() {
		for _, n := range cc.LocalFlagNames() {
			if n == name {
				return cc, true
			}
		}
	}
	return c, false
}

func flagString(c *cli.Context, name string) string {
	cc, _ := lookup(c, name)
	return cc.String(name)
}

func flagBool(c *cli.Context, name string) bool {
	cc, _ := lookup(c, name)
	return cc.Bool(name)
}

func flagStrings(c *cli.Context, name string) []string {
	cc, _ := lookup(c, name)
	return cc.StringSlice(name)
}

// cmdEnv is what every data command sets up: where things are and the adapters.
type cmdEnv struct {
	s        *host
	home     string
	homeFlag bool // --home was given
	store    *meta.Store
	config   *meta.Config
	timeout  time.Duration
	adapters []discover.Adapter
	only     map[string]bool // --adapter filter on session.adapter ("" = all)
	color    bool
	// onlyAlive: this command shows alive sessions only (discover.Env.OnlyAlive).
	onlyAlive bool
	// slots: this command needs Session.Slots (discover.Env.Slots).
	slots bool
}

// globalOptions are the flags every command takes (globalFlags).
type globalOptions struct {
	Home     string   // --home
	Adapters []string // --adapter, repeatable, comma lists allowed
	Timeout  string   // --timeout
	NoColor  bool     // --no-color
	// BadConfigOK: a config.json that does not load is passed over and the
	// defaults are used (doctor, which reports it among the state files).
	BadConfigOK bool
}

// globalsFrom reads the global flags, wherever on the line they were given.
func globalsFrom(c *cli.Context) globalOptions {
	return globalOptions{Home: flagString(c, "home"), Adapters: flagStrings(c, "adapter"),
		Timeout: flagString(c, "timeout"), NoColor: flagBool(c, "no-color")}
}

func setup(s *host, g globalOptions) (*cmdEnv, error) {
	e := &cmdEnv{s: s}
	e.home = g.Home
	if e.home == "" {
		e.home = s.getenv("HOME")
		if e.home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return nil, usageErrorf("cannot tell your home directory; set HOME or pass --home DIR")
			}
			e.home = h
		}
	} else {
		e.homeFlag = true
		abs, err := filepath.Abs(e.home)
		if err != nil {
			return nil, usageErrorf("--home %s: %v", e.home, err)
		}
		st, err := os.Stat(abs)
		if err != nil || !st.IsDir() {
			return nil, usageErrorf("--home %s: not a directory", e.home)
		}
		e.home = abs
	}
	// agentctl's own state is the caller's, never under --home: --home only
	// points at the agents' files, and a command run over someone else's home
	// (root over /home/alice, a read-only fixture) must not write there.
	stateDir := s.getenv("AGENTCTL_HOME")
	if stateDir == "" {
		own := s.getenv("HOME")
		if own == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return nil, usageErrorf("cannot tell where agentctl keeps its state; set AGENTCTL_HOME or HOME")
			}
			own = h
		}
		stateDir = filepath.Join(own, ".agentctl")
	}
	e.store = meta.NewStore(stateDir)
	e.store.Now = s.now
	e.store.Warn = func(f string, a ...any) { warn(s, fmt.Sprintf(f, a...)) }
	cfg, warns, err := e.store.LoadConfig()
	if err != nil && g.BadConfigOK {
		cfg, warns = &meta.Config{}, nil
	} else if err != nil {
		return nil, &exitError{exitFailed, err}
	}
	for _, w := range warns {
		warn(s, w)
	}
	e.config = cfg

	tv := g.Timeout
	src := "--timeout"
	if tv == "" {
		tv, src = s.getenv("AGENTCTL_ADAPTER_TIMEOUT"), "AGENTCTL_ADAPTER_TIMEOUT"
	}
	if tv == "" {
		tv, src = cfg.Timeout, "config timeout"
	}
	e.timeout = discover.DefaultTimeout
	if tv != "" {
		d, err := meta.ParseDuration(tv)
		if err != nil || d <= 0 {
			return nil, usageErrorf("%s %q: want a positive duration such as 5s or 500ms", src, tv)
		}
		e.timeout = d
	}

	names := g.Adapters
	all := allAdapters()
	if len(names) == 0 {
		e.adapters = all
	} else {
		e.only = map[string]bool{}
		for _, n := range names {
			for _, n := range strings.Split(n, ",") {
				n = strings.TrimSpace(n)
				if !agents.Known(n) {
					return nil, &exitError{exitUsage, agents.UnknownError(n)}
				}
				e.only[n] = true
			}
		}
		for _, a := range all {
			for n := range e.only {
				if agents.ReaderOf(n) == a.Name() {
					e.adapters = append(e.adapters, a)
					break
				}
			}
		}
	}
	e.color = s.IsTTY() && !g.NoColor && s.getenv("NO_COLOR") == ""
	return e, nil
}

// discoverAll runs the one fan-out for this command and prints its warnings.
func (e *cmdEnv) discoverAll(ctx context.Context) (discover.Result, *discover.Env) {
	return e.fanOut(ctx, "")
}

// fanOut is discoverAll, or with arg != "" the same restricted to the sessions
// resolving arg could involve (discover.FindAll).
func (e *cmdEnv) fanOut(ctx context.Context, arg string) (discover.Result, *discover.Env) {
	env := e.readEnv(ctx)
	var res discover.Result
	if arg != "" {
		res = discover.FindAll(ctx, env, e.adapters, e.timeout, discover.QueryFor(arg, env.Launches))
	} else {
		res = discover.All(ctx, env, e.adapters, e.timeout)
	}
	if keep := e.keep(); keep != nil {
		kept := res.Sessions[:0]
		for i := range res.Sessions {
			if keep(&res.Sessions[i]) {
				kept = append(kept, res.Sessions[i])
			}
		}
		res.Sessions = kept
	}
	for _, w := range res.Warnings {
		warn(e.s, w)
	}
	return res, env
}

// keep is the --adapter filter on a session's agent name (nil: keep all).
func (e *cmdEnv) keep() func(*discover.Session) bool {
	if e.only == nil {
		return nil
	}
	return func(s *discover.Session) bool { return e.only[s.Adapter] }
}

func (e *cmdEnv) newEnv() *discover.Env {
	env := discover.DefaultEnv(e.home, e.store.Dir)
	env.Getenv = e.s.getenv
	if e.homeFlag {
		// --home replaces $HOME, and the XDG dirs that default from it.
		env = env.AtHome(e.home)
	}
	env.Now = e.s.now
	env.Config = e.config
	if e.s.getenv("AGENTCTL_NO_CACHE") != "" {
		env.NoCache = true
	}
	return env
}

// adapterFor returns the adapter that produced a session.
func (e *cmdEnv) adapterFor(s discover.Session) discover.Adapter {
	for _, a := range allAdapters() {
		if a.Name() == agents.ReaderOf(s.Adapter) {
			return a
		}
	}
	return nil
}

// resolve finds one session by id or prefix through discover's lookup door.
// The id is checked before any I/O (the upkeep readEnv does).
func (e *cmdEnv) resolve(ctx context.Context, arg string) (discover.Session, *discover.Env, error) {
	if err := discover.CheckID(arg); err != nil {
		return discover.Session{}, nil, resolveErr(err)
	}
	env := e.readEnv(ctx)
	sess, err := e.lookup(ctx, env, arg)
	if err != nil {
		return sess, env, err
	}
	// The Env of the session's own files: a `launch --home DIR` run's are
	// under DIR, whatever home this command reads.
	return sess, env.For(sess), nil
}

// lookup is discover.Lookup over this command's adapters, with its warnings
// printed and its errors mapped to exit codes.
func (e *cmdEnv) lookup(ctx context.Context, env *discover.Env, arg string) (discover.Session, error) {
	sess, res, err := discover.Lookup(ctx, env, e.adapters, e.timeout, arg, e.keep())
	for _, w := range res.Warnings {
		warn(e.s, w)
	}
	return sess, resolveErr(err)
}

// setupSession is setup plus resolving the command's one ID argument, for the
// commands that act on a single session.
func setupSession(ctx context.Context, s *host, g globalOptions, id string) (*cmdEnv, discover.Session, *discover.Env, error) {
	e, err := setup(s, g)
	if err != nil {
		return nil, discover.Session{}, nil, err
	}
	sess, env, err := e.resolve(ctx, id)
	return e, sess, env, err
}

// resolveErr maps the lookup door's errors to exit codes.
func resolveErr(err error) error {
	var nf *discover.NotFoundError
	var am *discover.AmbiguousError
	var bad *discover.BadIDError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return &exitError{exitNotFound, err}
	case errors.As(err, &am):
		return &exitError{exitAmbiguous, err}
	case errors.As(err, &bad):
		return &exitError{exitUsage, err}
	}
	return err
}

func warn(s *host, msg string) {
	s.warnMu.Lock()
	defer s.warnMu.Unlock()
	if s.warned[msg] {
		return
	}
	if s.warned == nil {
		s.warned = map[string]bool{}
	}
	s.warned[msg] = true
	fmt.Fprintf(s.ErrOut, "agentctl: warning: %s\n", termSafe(msg))
}

// needArgs checks the positional argument count of command cmd.
func needArgs(cmd string, args []string, n int, what string) error {
	if len(args) != n {
		return usageErrorf("%s: want %s (see agentctl %s --help)", cmd, what, cmd)
	}
	return nil
}
