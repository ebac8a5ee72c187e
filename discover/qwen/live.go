package qwen

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// regCheck is a registry record and what the process table says of it.
type regCheck struct {
	regEntry
	Live   bool // its process is alive with the recorded start, on this boot
	Known  bool // false: no process table, or no start token to verify with
	Detail string
}

// verifyRegistry checks each record the way Qwen's own isSameProcess does: the
// pid alive with exactly the recorded start token (boot id + start ticks),
// through agentctl's one liveness rule (proc.Check). A record without a start
// token cannot be verified: unknown, never alive.
func verifyRegistry(env *discover.Env, regs []regEntry) []regCheck {
	out := make([]regCheck, 0, len(regs))
	for _, r := range regs {
		c := regCheck{regEntry: r}
		name := filepath.Base(r.File)
		boot, ticks, ok := r.procStart()
		switch {
		case env.Procs == nil || !env.Procs.Available():
			c.Detail = fmt.Sprintf("sessions/%s: no process table to verify pid %d", name, r.PID)
		case !ok:
			c.Detail = fmt.Sprintf("sessions/%s: no procStart to verify pid %d", name, r.PID)
		default:
			v := proc.Check(env.Procs, proc.ID{PID: r.PID, StartTicks: ticks, BootID: boot})
			c.Known, c.Live = v.Known, v.Alive && v.Verified
			if c.Live {
				c.Detail = fmt.Sprintf("sessions/%s: %s", name, v.Detail)
			} else {
				c.Detail = fmt.Sprintf("sessions/%s left behind: %s; killed or crashed", name, v.Detail)
			}
			if v.Alive && !v.Verified { // exists, may not be inspected
				c.Known, c.Detail = false, fmt.Sprintf("sessions/%s: %s", name, v.Detail)
			}
		}
		out = append(out, c)
	}
	return out
}

// Attribution windows for a headless qwen (no registry): its first record is
// written within seconds of the process start (node's cold start can take
// longer on a loaded machine), and a resumed run appends at once.
const (
	newSessionWindow = 60 * time.Second
	resumeSlack      = 1 * time.Second
	// approvalGrace: a tool call this old with no process started since to
	// run it is at the approval dialog (an approved shell command starts its
	// process at once; in-process tools complete within it).
	approvalGrace = time.Second
)

// candidate is a live qwen process that no registry record accounts for.
type candidate struct {
	PID   int
	Start time.Time
	Cwd   string
	Named string // the session id its argv names (--resume, --session-id)
}

// cliMarker ends the script argument of the process that does the work: the
// bin wrapper (cli-entry.js) re-runs node --expose-gc …/qwen-code/cli.js and
// waits; the child is the one to tie (its pid is the one Qwen registers).
const cliMarker = "qwen-code/cli.js"

// candidates finds qwen CLI processes in the snapshot, leaving out skip (the
// pids of live registry records). A cli.js process may relaunch itself once
// more (QWEN_CODE_NO_RELAUNCH in the child's environment; seen with a headless
// run): the innermost one does the work, so a cli.js process whose child is
// one too stands aside.
func candidates(env *discover.Env, startTime func(proc.Process) (time.Time, bool), skip map[int]bool) []candidate {
	t := env.Procs
	if t == nil || !t.Available() {
		return nil
	}
	type cli struct {
		p    proc.Process
		args []string
	}
	var clis []cli
	hasCLIChild := map[int]bool{}
	for _, p := range t.All() {
		argv, err := t.Argv(p.PID)
		if err != nil {
			continue
		}
		i := slices.IndexFunc(argv, func(a string) bool { return strings.HasSuffix(filepath.ToSlash(a), cliMarker) })
		if i < 0 {
			continue
		}
		clis = append(clis, cli{p, argv[i+1:]})
		hasCLIChild[p.PPID] = true
	}
	var out []candidate
	for _, c := range clis {
		p, args := c.p, c.args
		if skip[p.PID] || hasCLIChild[p.PID] {
			continue
		}
		if len(args) > 0 && (args[0] == "mcp" || args[0] == "serve") {
			continue // not a chat of its own
		}
		cwd, err := t.Cwd(p.PID)
		if err != nil || cwd == "" {
			continue
		}
		start, ok := startTime(p)
		if !ok {
			continue
		}
		out = append(out, candidate{PID: p.PID, Start: start, Cwd: filepath.Clean(cwd), Named: namedSession(args)})
	}
	return out
}

// namedSession is the session id an argv names: --resume/-r <id> or
// --session-id <id> (also in their --flag=value forms).
func namedSession(args []string) string {
	for i, a := range args {
		if a == "--" {
			return ""
		}
		for _, f := range []string{"--resume", "-r", "--session-id"} {
			if v, ok := strings.CutPrefix(a, f+"="); ok {
				return v
			}
			if a == f && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				return args[i+1]
			}
		}
	}
	return ""
}

// owns is the attribution rule for a headless run: its argv names the session,
// or the same cwd and either a new session (first record within
// newSessionWindow after the start) or a resumed one (older, with a record
// written since the start). Never cwd alone.
func (c candidate) owns(s *summary) bool {
	if c.Named != "" {
		return c.Named == s.ID
	}
	if filepath.Clean(s.Cwd) != c.Cwd || s.Started.IsZero() {
		return false
	}
	if !s.Started.Before(c.Start.Add(-resumeSlack)) {
		return !s.Started.After(c.Start.Add(newSessionWindow))
	}
	return !s.Activity.Before(c.Start.Add(-resumeSlack))
}

func (c candidate) pid() int { return c.PID }

// owner is the outcome of attribution for one session.
type owner struct {
	PID       int
	ByArgv    bool
	Ambiguous bool
	Detail    string
}

// attribute ties candidates to sessions. A pair counts only when the process
// matches exactly one session and the session exactly one process (or the
// argv names it); anything else is ambiguous, never guessed.
func attribute(cands []candidate, sums []*summary) map[*summary]owner {
	bySum, perPID := discover.Claims(cands, sums, candidate.pid, candidate.owns)
	out := map[*summary]owner{}
	for s, cs := range bySum {
		c := cs[0]
		switch {
		case len(cs) == 1 && c.Named != "":
			out[s] = owner{PID: c.PID, ByArgv: true, Detail: fmt.Sprintf("qwen process %d names this session in its argv", c.PID)}
		case len(cs) == 1 && perPID[c.PID] == 1:
			how := "resumed: a record was written after it started"
			if !s.Started.Before(c.Start.Add(-resumeSlack)) {
				how = "new: first record written after it started"
			}
			out[s] = owner{PID: c.PID, Detail: fmt.Sprintf("qwen process %d in %s started %s (%s)", c.PID, c.Cwd, c.Start.UTC().Format(time.RFC3339), how)}
		case len(cs) > 1:
			out[s] = owner{Ambiguous: true, Detail: fmt.Sprintf("%d qwen processes could own this session", len(cs))}
		default:
			out[s] = owner{Ambiguous: true, Detail: fmt.Sprintf("qwen process %d could own %d sessions in %s", c.PID, perPID[c.PID], c.Cwd)}
		}
	}
	return out
}

// fastFail reports whether Qwen gives up at once on this error instead of
// retrying: auth failures, and a 429 whose message says the quota is
// exhausted (its own rule: quota + exhausted|exceeded + will reset|reset at).
func fastFail(status int64, msg string) bool {
	if status == 401 || status == 403 {
		return true
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "quota") &&
		(strings.Contains(m, "exhausted") || strings.Contains(m, "exceeded")) &&
		(strings.Contains(m, "will reset") || strings.Contains(m, "reset at"))
}

// mustRead is which sessions a listing short of time never leaves out, and
// reads first and whole (docs/reading-limits.md): those a registry record
// names that is alive or cannot be checked, those an argv or a launch record
// names, and every transcript written since the earliest start of a qwen
// process tied by cwd and timing (attribute must see every session such a
// process could be).
func mustRead(env *discover.Env, regs []regCheck, cands []candidate) func(id string, mtime time.Time) bool {
	named := map[string]bool{}
	for _, r := range regs {
		if r.Live || !r.Known {
			named[r.SessionID] = true
		}
	}
	for _, l := range env.LaunchesFor(Name) {
		named[l.SessionID], named[l.CurrentSessionID()] = true, true
	}
	var since discover.WrittenSince
	for _, c := range cands {
		if c.Named != "" {
			named[c.Named] = true
		}
		since.Open(c.Start, resumeSlack)
	}
	return func(id string, mtime time.Time) bool { return named[id] || since.Holds(mtime) }
}
