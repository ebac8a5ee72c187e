package discover

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// The adapter contract. Every agent's read side is one Adapter (Name, Discover,
// Peek) in its own package under discover/; everything else it may offer is one
// of the optional interfaces below, which the fan-out, the lookup door and the
// commands test for with a type assertion. An adapter:
//   - reads only: it never writes anywhere (not under the home, not under
//     agentctl's state dir except through its parse index);
//   - takes everything from Env (home, env overrides, process table, launch
//     records, clock), never from globals;
//   - answers promptly when ctx is cancelled, and reports non-fatal problems
//     through Env.Warnf;
//   - returns sessions with Adapter set to an agents.Names() name, a non-empty
//     ID and a valid status (status.go).
// discover/discovertest's contract test holds every adapter to these rules.

// Adapter is the one shape every agent's read side has.
type Adapter interface {
	// Name is the adapter name used in output and --adapter (e.g. "claude-code").
	Name() string
	// Discover returns every session the agent's own ground truth knows of, now.
	// Non-fatal problems go to env.Warnf; an error means the adapter failed as a
	// whole (a warning for the command, never a status change). The sessions
	// belong to the caller: the fan-out updates them in place.
	Discover(ctx context.Context, env *Env) ([]Session, error)
	// Peek returns the last n items of a session's conversation (n<=0: all).
	Peek(ctx context.Context, env *Env, s Session, n int) ([]Message, error)
}

// Finder is implemented by adapters that can look sessions up by id without
// reading everything: commands that name one session (status, peek, logs, stop,
// wait) resolve through it. Find MUST return exactly the sessions Discover would
// return that q matches, with the same fields, status and evidence; warnings may
// cover only those sessions.
type Finder interface {
	Find(ctx context.Context, env *Env, q Query) ([]Session, error)
}

// Detailer is implemented by adapters that can add costly fields (e.g. lifetime
// tokens summed over a gateway's history) for one session; `status` calls it,
// `list` does not.
type Detailer interface {
	Detail(ctx context.Context, env *Env, s Session) (Session, error)
}

// FileParser is implemented by adapters whose full listing is work on this
// machine's files (walking and parsing transcripts, loading a parse index),
// not waiting on a server. A full listing runs at most as many of them at once
// as the process has cores (gatherFor): more only contend for them, and each
// holds its parse index and half-built sessions while it runs.
type FileParser interface {
	ParsesFiles()
}

// IDShaper is implemented by adapters whose session ids have a fixed shape
// (docs/agents/*.md): MayHold reports whether one of its sessions can have the
// id exactly. It must never say false for an id the adapter can list.
type IDShaper interface {
	MayHold(id string) bool
}

// Explainer is implemented by adapters that can list the agent-specific signals
// behind one session's status (registry entries, argv, lock holders), found or
// not. It is read-only and costs about one Find.
type Explainer interface {
	Explain(ctx context.Context, env *Env, s Session) []Signal
}

// DataDirer is implemented by adapters that read an agent's files: DataDir is the
// directory the agent keeps them in, as this Env defines it (the agent's own env
// overrides included). `doctor` uses it to tell "not installed" (no such
// directory) from "cannot be read".
type DataDirer interface {
	DataDir(env *Env) string
}

// Env is everything an adapter needs and nothing global.
type Env struct {
	Home     string              // the user's home (--home or $HOME)
	Getenv   func(string) string // the agents' env overrides (CLAUDE_CONFIG_DIR, CODEX_HOME, …)
	Procs    proc.Table          // one snapshot per command
	Launches []meta.Launch       // agentctl's launch records (read-only)
	Now      func() time.Time
	StateDir string       // agentctl's state dir; cache/ lives here
	Config   *meta.Config // may be nil
	// NoCache disables the parse index (tests prove output does not depend on it).
	NoCache bool
	// OnlyAlive tells Discover that the command shows alive sessions only (`list`
	// without -a): an adapter MAY then leave out sessions that are certainly not
	// alive, even after agentctl's launch records are applied (so it keeps every
	// session a launch record names). Callers still filter; adapters may ignore it.
	OnlyAlive bool
	// Slots asks for Session.Slots from adapters that pay extra for them
	// (OpenCode's database: one more query over the assistant messages); the
	// others fill them always (`usage --by day`).
	Slots bool
	// Large says the command found this full listing large (LargeListing,
	// read once per command: the command also paces its collector by it);
	// List then packs it and gives file parsers one turn per two cores.
	Large bool

	warn func(string)
}

// Warnf records a non-fatal warning for the current command.
func (e *Env) Warnf(format string, args ...any) {
	if e.warn != nil {
		e.warn(fmt.Sprintf(format, args...))
	}
}

// WithWarn returns a copy of e whose warnings go to fn.
func (e *Env) WithWarn(fn func(string)) *Env {
	c := *e
	c.warn = fn
	return &c
}

// LookupEnv returns the variable's value, or "" (Getenv may be nil in tests).
func (e *Env) LookupEnv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// ExpandHome turns a leading ~/ into the env's home.
func (e *Env) ExpandHome(p string) string {
	if p == "~" {
		return e.Home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(e.Home, p[2:])
	}
	return p
}

// LargeFrom is the size of the parse indexes together from which a full listing
// is large (LargeListing): about 30,000 sessions.
const LargeFrom = 16 << 20

// LargeListing reports whether a full listing of env is large (Env.Large): not
// alive-only, and its parse indexes (one entry per session the last listing
// read, ~550 bytes each) hold about LargeFrom bytes or more. List then keeps each
// adapter's sessions packed and runs one file-parsing adapter per two cores,
// so that what it holds is about one adapter's work in flight, not every
// session as a Session plus two adapters' work (list -a at 10,000 sessions per
// agent: ~66 MiB instead of ~104 MiB). Below that, memory is no concern and
// both cost time (1,000 per agent: 0.06 s against 0.09 s). A cold index (a
// first run) reads as small.
func LargeListing(env *Env) bool {
	dir := env.CacheDir()
	if env.OnlyAlive || dir == "" {
		return false
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	var n int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".index") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n >= LargeFrom
}

// CacheDir is the parse index directory (may not exist yet).
func (e *Env) CacheDir() string {
	if e.StateDir == "" || e.NoCache {
		return ""
	}
	return filepath.Join(e.StateDir, "cache")
}

// LaunchesFor returns the launch records of one adapter.
func (e *Env) LaunchesFor(adapter string) []meta.Launch {
	var out []meta.Launch
	for _, l := range e.Launches {
		if l.Adapter == adapter {
			out = append(out, l)
		}
	}
	return out
}

// DefaultEnv builds the Env for a real command.
func DefaultEnv(home, stateDir string) *Env {
	return &Env{
		Home:     home,
		Getenv:   os.Getenv,
		Procs:    proc.Snapshot(),
		Now:      time.Now,
		StateDir: stateDir,
	}
}

// Query names sessions by id: those whose id starts with Prefix, plus those whose
// id is one of IDs (the sessions of launch records whose launch id is the
// argument). The zero Query matches nothing.
type Query struct {
	Prefix string
	IDs    []string
}

// Match reports whether a session id is named by q.
func (q Query) Match(id string) bool {
	if q.Prefix != "" && strings.HasPrefix(id, q.Prefix) {
		return true
	}
	for _, x := range q.IDs {
		if x == id {
			return true
		}
	}
	return false
}

// SQLWhere is Match as a SQL WHERE clause over column col, with its arguments
// ("" for a nil q: every row). The prefix is compared byte for byte, as Match
// does (LIKE would fold case and treat _ and % as wildcards, and ids hold '_').
func (q *Query) SQLWhere(col string) (string, []any) {
	if q == nil {
		return "", nil
	}
	var conds []string
	var args []any
	if q.Prefix != "" {
		conds = append(conds, "substr(CAST("+col+" AS BLOB), 1, ?) = CAST(? AS BLOB)")
		args = append(args, len(q.Prefix), q.Prefix)
	}
	if len(q.IDs) > 0 {
		conds = append(conds, col+" IN (?"+strings.Repeat(", ?", len(q.IDs)-1)+")")
		for _, id := range q.IDs {
			args = append(args, id)
		}
	}
	if len(conds) == 0 {
		return " WHERE 0", nil
	}
	return " WHERE " + strings.Join(conds, " OR "), args
}
