// Package fleet runs one agentctl command on several hosts (README "Several
// machines"): with --host H (repeatable) or --hosts all (config hosts), the
// command runs as `ssh -o BatchMode=yes H agentctl <the same command> --json`
// on each host in parallel (package remote runs one such call), and the
// answers are merged here with their host. `local` is this machine. A host
// that cannot answer is a warning, like a failed adapter.
//
// Each command declares how it runs across hosts (a Spec) where it is
// registered; this package knows no command by name.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/remote"
)

// Exit codes of agentctl (README "Exit codes"): a remote agentctl answers
// with them, and a command across hosts returns them.
const (
	ExitOK        = 0
	ExitFailed    = 1
	ExitUsage     = 2
	ExitNotFound  = 3
	ExitAmbiguous = 4
	ExitTimeout   = 124
)

// Error carries an exit code up to the caller, which prints the message once.
// Err is nil when the message was printed already (a remote's own exit code).
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &Error{ExitUsage, fmt.Errorf(format, args...)}
}

// Mode is how a command runs across hosts.
type Mode int

const (
	// LocalOnly: the command acts on this machine only and refuses --host.
	LocalOnly Mode = iota
	// Merged: on every host named, the answers merged (list, locks, events,
	// metrics, doctor).
	Merged
	// OneHost: on one host, the one its host:id names or the one whose
	// agentctl resolves the bare id (status, peek, stop, resume); with no id
	// argument, the one host --host names (launch).
	OneHost
	// PerHost: one long-lived call per host, with that host's ids (wait).
	PerHost
)

// IDs says which positional arguments of a command are session ids, and so
// may be host:id.
type IDs int

const (
	NoIDs   IDs = iota
	FirstID     // the first argument (a resume's message is not one, whatever it holds)
	AllIDs      // every argument (wait)
	// FirstName: the first argument may be host:NAME (compare's group);
	// without a host, the one host --host names runs it, no lookup.
	FirstName
)

// Stdin says which text of the command line goes over ssh's stdin instead of
// the remote command line.
type Stdin int

const (
	NoStdin    Stdin = iota
	PromptFlag       // -p/--prompt TEXT (launch)
	SecondArg        // the second argument (the message of resume and send), or send's -f -
)

// Printer prints the answers of the hosts that answered, in host order, of a
// Merged command; failed reports an answer it could not read.
type Printer func(st *Streams, outs []Answer) (failed bool, err error)

// Spec is how one command runs across hosts.
type Spec struct {
	Mode  Mode
	IDs   IDs
	Stdin Stdin
	// AskJSON: each host answers with --json (Merged); metrics and events
	// answer in their own formats.
	AskJSON bool
	// Print merges the answers (Merged).
	Print Printer
	// Follow: with --follow, one stream per host, each NDJSON line printed as
	// it arrives, with its host (events).
	Follow bool
	// Verdict: the answer is a verdict (doctor): a host's non-zero exit is its
	// report, not a failure; any failure exits 1, --strict or not; without
	// --json each host's text is printed under its name.
	Verdict bool
	// Drop are arguments taken off the remote command line, because Print
	// applies them here (list -q, --count).
	Drop []string
	// Refuse, when set, is the usage error of this command line across hosts
	// (list --watch).
	Refuse string
	// Missed, when set, is told which hosts gave no answer, and why, before
	// Print (usage names them under its totals).
	Missed func([]Missing)
	// Rewrite, when set, changes the flags each host gets (usage drops the
	// key host from --by: it is this side's).
	Rewrite func(flags []string) []string
	// Watch: redraw the merged answer every WatchEvery until the context
	// ends (list --watch), with Clear before each when set.
	Watch      bool
	WatchEvery time.Duration
	Clear      func(st *Streams)
}

// Missing is a host that gave no usable answer, and why in a few words
// ("connection refused").
type Missing struct {
	Host  string
	Cause string
}

// DefaultParallel bounds the calls in flight at once (--parallel).
const DefaultParallel = 16

// Line is the command line as the caller read it.
type Line struct {
	Name   string   // the command's name, for messages
	Host   []string // --host values (repeatable, comma lists)
	Hosts  string   // --hosts value
	Args   []string // positional arguments
	Argv   []string // the whole command line, reordered: program, flags, then arguments
	JSON   bool
	Strict bool // a host or adapter warning exits 1
	Follow bool
	// Parallel bounds the calls in flight at once (0: DefaultParallel).
	Parallel int
}

// Wanted reports whether the line asks for hosts at all: --host, --hosts or
// a host:id argument. When not, the command runs locally, as if this package
// did not exist.
func (sp Spec) Wanted(l Line) bool {
	return len(l.Host) > 0 || l.Hosts != "" || slices.ContainsFunc(sp.idArgs(l.Args), func(a string) bool { return strings.Contains(a, ":") })
}

// Options are a command line across hosts, its hosts chosen.
type Options struct {
	Spec
	name                 string
	hosts                []remote.Host // named by --host / --hosts all, in order
	known                []remote.Host // hosts a host:id argument may name: those and config hosts
	flags                []string      // the command line without the program, host flags and positional arguments
	pos                  []string      // positional arguments
	json, strict, follow bool
	// Timeout is the adapter timeout: each connection gets it, and one call
	// that returns at once gets twice it.
	Timeout time.Duration
	Runner  *remote.Runner
	// parallel bounds the calls in flight at once.
	parallel int
}

// Select chooses the hosts of l: --hosts all (the config hosts), then each
// --host (a config host keeps its agentctl path). configPath names the config
// file in the error for an empty one. ok is false when the command runs
// locally after all: only host:id arguments, none naming a known host.
func Select(sp Spec, l Line, config []remote.Host, configPath string) (o Options, ok bool, err error) {
	o = Options{Spec: sp, name: l.Name, json: l.JSON, strict: l.Strict, follow: l.Follow, parallel: l.Parallel}
	if l.Parallel < 0 {
		return o, false, usageErrorf("--parallel %d: want at least 1 (default %d)", l.Parallel, DefaultParallel)
	}
	if o.parallel == 0 {
		o.parallel = DefaultParallel
	}
	byName := func(n string) remote.Host {
		for _, h := range config {
			if h.Name == n {
				return h
			}
		}
		return remote.Host{Name: n}
	}
	add := func(h remote.Host) {
		if !slices.ContainsFunc(o.hosts, func(x remote.Host) bool { return x.Name == h.Name }) {
			o.hosts = append(o.hosts, h)
		}
	}
	switch l.Hosts {
	case "":
	case "all":
		if len(config) == 0 {
			return o, false, usageErrorf("--hosts all: config hosts is empty; add hosts to %s (see README \"Several machines\") or name them with --host", configPath)
		}
		for _, h := range config {
			add(h)
		}
	default:
		return o, false, usageErrorf("--hosts %q: the only value is all (config hosts); name single hosts with --host", l.Hosts)
	}
	for _, n := range l.Host {
		for _, n := range strings.Split(n, ",") {
			n = strings.TrimSpace(n)
			if err := remote.CheckHost(n); err != nil {
				return o, false, usageErrorf("--host: %v", err)
			}
			add(byName(n))
		}
	}
	o.known = append(append([]remote.Host{}, o.hosts...), config...)
	o.known = append(o.known, remote.Host{Name: remote.Local})
	if len(o.hosts) == 0 {
		// Only host:id arguments: run remotely when one names a known host.
		if !slices.ContainsFunc(sp.idArgs(l.Args), func(a string) bool { _, _, ok := o.splitHostID(a); return ok }) {
			return o, false, nil
		}
	}
	if sp.Refuse != "" {
		return o, false, usageErrorf("%s", sp.Refuse)
	}
	o.pos = l.Args
	o.flags = stripHostFlags(l.Argv, len(o.pos))
	if len(sp.Drop) > 0 {
		o.flags = slices.DeleteFunc(o.flags, func(a string) bool { return slices.Contains(sp.Drop, a) })
	}
	if sp.Watch {
		// Each round is one call that returns at once.
		o.flags = slices.DeleteFunc(o.flags, func(a string) bool {
			n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			return strings.HasPrefix(a, "-") && n == "watch"
		})
	}
	if sp.Rewrite != nil {
		o.flags = sp.Rewrite(o.flags)
	}
	return o, true, nil
}

// Streams are where a command across hosts prints.
type Streams struct {
	In  io.Reader
	Out io.Writer
	// Warn prints a warning ("agentctl: warning: msg"), each once.
	Warn func(msg string)
	// Relay prints one line of a host's stderr, made safe for a terminal, in
	// turn with Warn.
	Relay func(line string)
	// Text makes a host's text output (stdout without --json) safe for a
	// terminal, newlines and tabs kept: the caller's one sanitiser. Nil passes
	// it as it is (tests).
	Text func(s string) string
}

// text is Text, or the identity when it is not set.
func (st *Streams) text(s string) string {
	if st.Text == nil {
		return s
	}
	return st.Text(s)
}

// Run runs the command across the hosts of o.
func Run(ctx context.Context, st *Streams, o Options) error {
	switch o.Mode {
	case PerHost:
		return runWait(ctx, st, o)
	case OneHost:
		return runOne(ctx, st, o)
	}
	if len(o.hosts) == 0 {
		return usageErrorf("%s across hosts: name them with --host H or --hosts all", o.name)
	}
	switch {
	case o.Follow && o.follow:
		return runFollow(ctx, st, o)
	case o.Verdict && !o.json:
		return runSections(ctx, st, o)
	case o.Watch:
		return runWatch(ctx, st, o)
	}
	return o.once(ctx, st)
}

// once gathers and prints a Merged command's answers.
func (o Options) once(ctx context.Context, st *Streams) error {
	outs, missing, failed := o.gather(ctx, st, o.AskJSON)
	if o.Watch && ctx.Err() != nil {
		return nil // a round cut short by Ctrl-C is not printed
	}
	if o.Missed != nil {
		o.Missed(missing)
	}
	printFailed, err := o.Print(st, outs)
	if err != nil {
		return err
	}
	failed = failed || printFailed
	if failed && (o.strict || o.Verdict) {
		return &Error{ExitFailed, errors.New("some hosts or adapters failed (see the warnings above)")}
	}
	return nil
}
