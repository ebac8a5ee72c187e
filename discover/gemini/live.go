package gemini

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// Gemini CLI keeps no pid, lock or registry file (docs/agents/gemini.md
// "Liveness"): a live session is inferred from a gemini node process whose cwd
// is the session's project root and which wrote the session since it started.
const (
	// resumeSlack: a process owns a session written no earlier than this
	// before its start (the wall-clock start time is up to 1 s early).
	resumeSlack = 2 * time.Second
)

// candidate is a live process that looks like Gemini CLI.
type candidate struct {
	PID   int
	PPID  int
	Start time.Time
	Cwd   string
}

// notSessions are first arguments that make gemini something other than a
// session (subcommands and one-off flags).
var notSessions = map[string]bool{
	"mcp": true, "extensions": true, "extension": true, "skills": true, "hooks": true,
	"--version": true, "-v": true, "--help": true, "-h": true,
	"--list-sessions": true, "--delete-session": true, "--list-extensions": true, "-l": true,
}

// geminiArgs returns the arguments after the gemini script when argv runs
// Gemini CLI: `node …/bin/gemini …`, the relaunched `node
// --max-old-space-size=N …/bin/gemini …`, or a `gemini` binary.
func geminiArgs(argv []string) ([]string, bool) {
	for i, a := range argv {
		a = filepath.ToSlash(a)
		base := filepath.Base(a)
		if base == "gemini" || base == "gemini.js" || strings.Contains(a, "@google/gemini-cli/") {
			if i == 0 && (base == "node" || base == "nodejs") {
				continue
			}
			return argv[i+1:], true
		}
		if i > 0 && !strings.HasPrefix(a, "-") {
			return nil, false // node running some other script
		}
	}
	return nil, false
}

// candidates finds Gemini CLI processes writing into dirs, skipping the PIDs
// skip names (agentctl's own launches: the core reports them). Of a parent and
// its relaunched child, the child, which does the work, is kept.
func candidates(env *discover.Env, dirs []string, skip map[int]bool) []candidate {
	t := env.Procs
	if t == nil || !t.Available() {
		return nil
	}
	var found []candidate
	for _, p := range t.All() {
		if skip[p.PID] {
			continue
		}
		switch p.Comm {
		case "node", "nodejs", "gemini", "bun":
		default:
			continue
		}
		argv, err := t.Argv(p.PID)
		if err != nil {
			continue
		}
		rest, ok := geminiArgs(argv)
		if !ok || (len(rest) > 0 && notSessions[rest[0]]) {
			continue
		}
		if environ, err := t.Environ(p.PID); err == nil && len(environ) > 0 {
			if d := procDir(environ); d != "" && !slices.Contains(dirs, d) {
				continue // writes into another home
			}
		}
		cwd, err := t.Cwd(p.PID)
		if err != nil || cwd == "" {
			continue
		}
		start, ok := t.StartTime(p.PID)
		if !ok {
			continue
		}
		found = append(found, candidate{PID: p.PID, PPID: p.PPID, Start: start, Cwd: filepath.Clean(cwd)})
	}
	parents := map[int]bool{}
	for _, c := range found {
		parents[c.PPID] = true
	}
	out := found[:0]
	for _, c := range found {
		if !parents[c.PID] {
			out = append(out, c)
		}
	}
	return out
}

// procDir is the data dir a process's environment gives it ("" when it does
// not say).
func procDir(environ []string) string {
	vars := discover.EnvVars(environ)
	home := vars[EnvHome]
	if home == "" {
		home = vars["HOME"]
	}
	if home == "" || !filepath.IsAbs(home) {
		return ""
	}
	if vars["SANDBOX"] == "sandbox-exec" {
		return filepath.Join(home, ".cache", ".gemini")
	}
	return filepath.Join(home, ".gemini")
}

// owner is what attribution found for one session.
type owner struct {
	PID       int
	Ambiguous bool
	Detail    string
	// Asking: the model asked for a tool call (asked) that has not completed,
	// at least approvalGrace ago, and no process of the owner's has started
	// since to run it: the TUI is at its approval dialog (inferred).
	Asking string
}

// approvalGrace: a tool call asked for this long ago, with no process started
// to run it, is taken to await approval (an approved shell command starts its
// process at once; an in-process tool completes within it).
const approvalGrace = time.Second

// asking says why the owner of a session that asked for a tool call at asked
// is at an approval dialog, or "" when it may be running the tool: the call is
// younger than approvalGrace, or a descendant of pid started since (Gemini
// runs a shell command as a child; the MCP servers it starts with are older).
func asking(t proc.Table, pid int, asked, now time.Time) string {
	if asked.IsZero() || now.Sub(asked) < approvalGrace {
		return ""
	}
	for _, d := range proc.Descendants(t, pid) {
		if st, ok := t.StartTime(d.PID); !ok || !st.Before(asked.Add(-time.Second)) {
			return ""
		}
	}
	return fmt.Sprintf("the model asked for a tool call at %s and no process has started to run it: an approval dialog (inferred)",
		asked.UTC().Format(time.RFC3339))
}

// attribute ties each candidate to the session of its cwd it wrote last since
// it started (created or resumed). A session two processes claim is ambiguous.
func attribute(cands []candidate, sess []*merged) map[*merged]owner {
	out := map[*merged]owner{}
	claims := map[*merged][]candidate{}
	for _, c := range cands {
		var best *merged
		for _, m := range sess {
			if m.Root == "" || filepath.Clean(m.Root) != c.Cwd || m.Last.Before(c.Start.Add(-resumeSlack)) {
				continue
			}
			if best == nil || newer(m, best, c.Start) {
				best = m
			}
		}
		if best != nil {
			claims[best] = append(claims[best], c)
		}
	}
	for m, cs := range claims {
		if len(cs) > 1 {
			pids := make([]int, len(cs))
			for i, c := range cs {
				pids[i] = c.PID
			}
			slices.Sort(pids)
			out[m] = owner{Ambiguous: true, Detail: fmt.Sprintf("%d gemini processes in %s could own this session (pids %s)", len(cs), m.Root, discover.JoinInts(pids))}
			continue
		}
		c := cs[0]
		how := "resumed: written since it started"
		if !m.Start.Before(c.Start.Add(-resumeSlack)) {
			how = "new: started after it"
		}
		out[m] = owner{PID: c.PID, Detail: fmt.Sprintf("gemini process %d in %s started %s (%s; inferred: Gemini CLI keeps no registry)",
			c.PID, c.Cwd, c.Start.UTC().Format(time.RFC3339), how)}
	}
	return out
}

// newer reports whether a is a better match than b for a process started at
// start: the latest activity (a TUI that /resumes another session writes that
// one, not its own fresh file); on a tie, the session it created.
func newer(a, b *merged, start time.Time) bool {
	if !a.Last.Equal(b.Last) {
		return a.Last.After(b.Last)
	}
	return !a.Start.Before(start.Add(-resumeSlack)) && a.Start.After(b.Start)
}
