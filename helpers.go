// Helpers that several commands share. A helper a second command needs moves
// here rather than being called in another command's file
// (TestCommandFilesStandAlone).
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/launch/worktree"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

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
	// untrusted is why the state dir fails the trust rule (meta.Store.Trusted),
	// said once by setup: its config is ignored, reading commands do no upkeep,
	// and commands that act refuse (mustTrust).
	untrusted error
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
	fromEnv := stateDir != ""
	if fromEnv && !filepath.IsAbs(stateDir) {
		// Resolved against the directory agentctl starts in, once: the
		// supervisor, fuse firer and agents it starts run elsewhere (and cron
		// runs from another cwd than the shell that set it).
		abs, err := filepath.Abs(stateDir)
		if err != nil {
			return nil, usageErrorf("AGENTCTL_HOME %q is relative and the current directory cannot be told (%v); set it to an absolute path", stateDir, err)
		}
		stateDir = abs
	}
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
	cfg, warns, err := loadTrustedConfig(e.store)
	if why := stateDirProblem(stateDir); why != "" {
		// Reading commands go on without agentctl's state (one warning);
		// writing ones fail with this error (mustTrust, Store.EnsureDir).
		name := "AGENTCTL_HOME " + stateDir
		if !fromEnv {
			name = "state dir " + stateDir + " (AGENTCTL_HOME unset)"
		}
		e.untrusted = fmt.Errorf("%s %s; point AGENTCTL_HOME at a directory you can write", name, why)
		e.store.Unusable = e.untrusted
		cfg, warns, err = &meta.Config{}, []string{fmt.Sprintf("%v; going on without agentctl's state (no launch records, locks, fuses or caches)", e.untrusted)}, nil
	} else if e.untrusted = trustErr(err); e.untrusted != nil {
		cfg, warns, err = &meta.Config{}, []string{untrustedWarning(e.untrusted)}, nil
	}
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

// stateDirProblem is why agentctl cannot use dir as its state dir at all, ""
// when it can (or might: a dir that is readable but not writable is left to
// the trust rule and to the write that fails): dir is a file, cannot be read,
// or does not exist and cannot be created.
func stateDirProblem(dir string) string {
	const rx, wx = 5, 3 // access(2) R_OK|X_OK, W_OK|X_OK
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return "is not a directory"
	case err == nil:
		if syscall.Access(dir, rx) != nil {
			return "cannot be read (permission denied)"
		}
		return ""
	case errors.Is(err, syscall.ENOTDIR):
		return "cannot be created (a path component is not a directory)"
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("cannot be used (%v)", errors.Unwrap(err))
	}
	// Missing: the nearest existing parent must be a directory agentctl can
	// create it in.
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && filepath.Dir(p) != p {
			continue
		}
		switch {
		case err != nil:
			return fmt.Sprintf("cannot be created (%v)", err)
		case !st.IsDir():
			return fmt.Sprintf("cannot be created (%s is not a directory)", p)
		case syscall.Access(p, wx) != nil:
			return fmt.Sprintf("cannot be created (%s is not writable)", p)
		}
		return ""
	}
}

// loadTrustedConfig loads the state dir's config when the dir passes the
// trust rule; otherwise the error is a *meta.UntrustedError and the config
// (which names binaries, hosts, notify targets, a webhook) is not read.
func loadTrustedConfig(store *meta.Store) (*meta.Config, []string, error) {
	if err := store.Trusted(); err != nil {
		return nil, nil, err
	}
	return store.LoadConfig()
}

// trustErr is err when it is the trust rule's refusal, else nil.
func trustErr(err error) error {
	var ue *meta.UntrustedError
	if errors.As(err, &ue) {
		return err
	}
	return nil
}

// untrustedWarning is the one warning a command over an untrusted state dir gives.
func untrustedWarning(err error) string {
	return fmt.Sprintf("%v; reading it only (its config is ignored, no upkeep is done)", err)
}

// mustTrust refuses a command that acts (runs, sends, starts) over a state dir
// that fails the trust rule.
func (e *cmdEnv) mustTrust(what string) error {
	if e.untrusted == nil {
		return nil
	}
	return &exitError{exitFailed, fmt.Errorf("%s refused: %w", what, e.untrusted)}
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
	state := e.store.Dir
	if e.store.Unusable != nil {
		state = "" // no caches, no OpenClaw device file (said once by setup)
	}
	env := discover.DefaultEnv(e.home, state)
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

// expand resolves a leading ~ against the home the command reads (--home or
// $HOME), as a shell would for a flag value it never saw.
func (e *cmdEnv) expand(p string) string {
	if p == "~" {
		return e.home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(e.home, p[2:])
	}
	return p
}

// listing is discoverAll for list, with the sessions left where the adapters put
// them (discover.List): a listing of tens of thousands is never copied into one
// array. It is fanOut (main.go) otherwise; keep the two in step.
func (e *cmdEnv) listing(ctx context.Context) (discover.Result, *discover.Listing) {
	env := e.readEnv(ctx)
	env.Large = discover.LargeListing(env)
	if env.Large && e.s.getenv("GOGC") == "" {
		// A large listing holds little but the work of the adapter in its
		// turn (the others' sessions are packed), so most of the heap is that
		// work's garbage: collected at half the usual growth, `list -a` at
		// 10,000 sessions per agent peaks at ~66 MiB instead of ~74 MiB, for
		// about 10% more CPU. A GOGC the user set is left alone.
		defer debug.SetGCPercent(debug.SetGCPercent(50))
	}
	res, ls := discover.List(ctx, env, e.adapters, e.timeout)
	if e.only != nil {
		ls.Keep(func(s *discover.Session) bool { return e.only[s.Adapter] })
	}
	for _, w := range res.Warnings {
		warn(e.s, w)
	}
	return res, ls
}

// parseStates reads a comma-separated flag value, each item one of allowed,
// into a set; flag names the flag in the error.
func parseStates(flag, v string, allowed []string) (map[string]bool, error) {
	set := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(allowed, f) {
			return nil, usageErrorf("%s %q: want one or more of %s, comma-separated", flag, f, strings.Join(allowed, ", "))
		}
		set[f] = true
	}
	return set, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// eventTypes are the journal's event types (product.md §7) that --type accepts;
// a family name ("session", "lock", "fuse") selects all of its types.
var eventTypes = []string{
	meta.EventLaunched, meta.EventStarted, meta.EventIdle, meta.EventWaiting, meta.EventBlocked, meta.EventStopped, meta.EventFailed,
	meta.EventBudgetExceeded, meta.EventMessageSent, meta.EventMessageDelivered,
	meta.EventLockAcquired, meta.EventLockReleased,
	meta.EventFuseSet, meta.EventFuseExtended, meta.EventFuseCancelled, meta.EventFuseExpired, meta.EventFuseEvent,
}

// usageKeys are what `usage --by` groups on, in the order the columns appear
// (completion offers them too).
var usageKeys = []string{"day", "week", "month", "adapter", "model", "cwd", "group"}

// notifyStates are the values --on takes.
var notifyStates = []string{discover.StatusRunning, discover.StatusIdle, discover.StatusWaiting,
	discover.StatusStopped, discover.StatusFailed, discover.StatusUnknown, "blocked"}

// inputErr maps launch errors to exit codes: bad input 2, a locked dir 5, else 1.
func inputErr(err error) error {
	var ie *launch.InputError
	var wie *worktree.InputError
	var ce *locks.ConflictError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie), errors.As(err, &wie):
		return &exitError{exitUsage, err}
	case errors.As(err, &ce):
		return &exitError{exitLocked, err}
	}
	return &exitError{exitFailed, err}
}

func userName(s *host) string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if v := s.getenv("USER"); v != "" {
		return v
	}
	return "unknown"
}

// whenFlag reads a --since or --until value with the one syntax of them all
// (meta.ParseWhen); a malformed one is a usage error naming the flag.
func whenFlag(flag, v string, now time.Time, end bool) (time.Time, error) {
	t, err := meta.ParseWhen(v, now, end)
	if err != nil {
		return t, usageErrorf("--%s %q: %v", flag, v, err)
	}
	return t, nil
}

// sinceWindow reads --since of the commands whose window ends now (list,
// metrics, events) as the window's length: a window that starts now or later
// would hold nothing, so it is refused.
func sinceWindow(v string, now time.Time) (time.Duration, error) {
	t, err := whenFlag("since", v, now, false)
	if err != nil {
		return 0, err
	}
	if !t.Before(now) {
		return 0, usageErrorf("--since %q: not before now (%s)", v, now.Format(time.RFC3339))
	}
	return now.Sub(t), nil
}

// untilFlag reads --until of list, metrics and events with --since's parser (a
// date alone includes that day, as in usage); the window must end after it
// starts (since: the window's start; zero when it has none).
func untilFlag(v string, since, now time.Time) (time.Time, error) {
	t, err := whenFlag("until", v, now, true)
	if err != nil {
		return t, err
	}
	if !since.IsZero() && !t.After(since) {
		return t, usageErrorf("--until %s is not after --since %s", t.Format(time.RFC3339), since.Format(time.RFC3339))
	}
	return t, nil
}
