package opencode

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// startSlack: a session (or its latest prompt) created by a process is at most this
// much older than the process's start as the table reports it (docs/agents/opencode.md §4.1 (3)).
const startSlack = 2 * time.Second

// Process kinds, by subcommand (docs/agents/opencode.md §4.1 (3)).
const (
	kindRun   = "run"   // one turn of one session, then exit
	kindTUI   = "tui"   // `opencode [project]`: many sessions of one directory
	kindHost  = "serve" // serve / web / acp: sessions of any directory
	kindOther = ""      // db, session, export, stats, …: never hosts a turn
)

// ocProc is one live opencode process of the snapshot.
type ocProc struct {
	PID  int
	Kind string
	// Dir is where it works ("" when neither its argv, PWD nor cwd is readable).
	Dir string
	// Session is the id of `run -s <id>` (without --fork): the session it serves.
	Session string
	Start   time.Time
	StartOK bool
}

func (p ocProc) String() string {
	s := fmt.Sprintf("pid %d (opencode %s", p.PID, p.Kind)
	if p.Kind == kindTUI {
		s = fmt.Sprintf("pid %d (opencode TUI", p.PID)
	}
	if p.Dir != "" && p.Kind != kindHost {
		s += " in " + p.Dir
	}
	return s + ")"
}

// ignoredCommands never run a model turn.
var ignoredCommands = map[string]bool{
	"attach": true, "auth": true, "agent": true, "upgrade": true, "uninstall": true,
	"models": true, "stats": true, "export": true, "import": true, "github": true,
	"session": true, "db": true, "mcp": true, "debug": true, "generate": true,
	"completion": true, "help": true, "plugin": true, "providers": true, "x": true,
}

// tuiValueFlags are the flags before a subcommand (global and TUI ones) that take
// a separate value.
var tuiValueFlags = map[string]bool{
	"--log-level": true, "-m": true, "--model": true, "-s": true, "--session": true,
	"--prompt": true, "--agent": true, "--port": true, "--hostname": true,
}

// procNames are the executable names an opencode process runs under (the npm bin
// is a hard link to the native binary, so exe and argv[0] both say opencode).
func procNames(env *discover.Env) map[string]bool {
	names := map[string]bool{"opencode": true, "opencode.exe": true}
	if env.Config != nil {
		if b := env.Config.Adapters[Name].Binary; b != "" {
			names[filepath.Base(b)] = true
		}
	}
	return names
}

// scanProcs finds the live opencode processes that could be writing a turn, minus
// skip (processes agentctl launched for a known session: the core reports those
// from their launch records). ok is false without a process table.
func scanProcs(env *discover.Env, startTime func(proc.Process) (time.Time, bool), skip map[int]bool) (out []ocProc, ok bool) {
	t := env.Procs
	if t == nil || !t.Available() {
		return nil, false
	}
	names := procNames(env)
	isOC := func(p proc.Process) bool {
		if names[p.Comm] {
			return true
		}
		// comm is cut to 15 bytes and a process may rename itself: ask exe, and argv
		// when exe is unreadable (another user's process).
		if exe, err := t.Exe(p.PID); err == nil {
			return names[filepath.Base(strings.TrimSuffix(exe, " (deleted)"))]
		}
		if argv, err := t.Argv(p.PID); err == nil && len(argv) > 0 {
			return names[filepath.Base(argv[0])]
		}
		return false
	}
	data := dataDir(env)
	byPID := map[int]int{}
	for _, p := range t.All() {
		if skip[p.PID] || p.PID == 2 || p.PPID == 2 || !isOC(p) { // 2: kthreadd and its kernel threads
			continue
		}
		argv, err := t.Argv(p.PID)
		if err != nil {
			continue // gone since the snapshot
		}
		op := classify(argv)
		if op.Kind == kindOther {
			continue
		}
		op.PID = p.PID
		if d := procData(t, p.PID); d != "" && !sameDir(d, data) {
			continue // it keeps its sessions in another store
		}
		op.Start, op.StartOK = startTime(p)
		op.Dir = procDir(t, p.PID, op.Dir)
		byPID[p.PID] = len(out)
		out = append(out, op)
	}
	// A wrapper and the process it runs (same command) are one opencode.
	var kept []ocProc
	for _, op := range out {
		p, _ := t.Get(op.PID)
		if i, ok := byPID[p.PPID]; ok && out[i].Kind == op.Kind && p.PPID != op.PID {
			continue
		}
		kept = append(kept, op)
	}
	return kept, true
}

// classify reads an opencode argv: the subcommand is the first non-flag argument.
// Dir is the --dir / project argument as given (maybe relative).
func classify(argv []string) ocProc {
	if len(argv) == 0 {
		return ocProc{}
	}
	args := argv[1:]
	sub, rest := "", []string(nil)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if tuiValueFlags[a] {
			i++ // its value is not the subcommand
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		sub, rest = a, args[i+1:]
		break
	}
	switch {
	case sub == "run":
		op := ocProc{Kind: kindRun}
		fork := false
		for i := 0; i < len(rest); i++ {
			a := rest[i]
			if a == "--" {
				break
			}
			name, val, hasVal := strings.Cut(a, "=")
			next := func() string {
				if hasVal {
					return val
				}
				if i+1 < len(rest) {
					i++
					return rest[i]
				}
				return ""
			}
			switch name {
			case "--dir":
				op.Dir = next()
			case "-s", "--session":
				op.Session = next()
			case "--fork":
				fork = !hasVal || val == "true"
			}
		}
		if fork {
			op.Session = "" // --fork writes to a new session
		}
		return op
	case sub == "serve" || sub == "web" || sub == "acp":
		return ocProc{Kind: kindHost}
	case sub == "pr": // checks the PR out, then runs the TUI where it was started
		return ocProc{Kind: kindTUI}
	case ignoredCommands[sub]:
		return ocProc{Kind: kindOther}
	}
	// No subcommand, or a project path: the TUI.
	return ocProc{Kind: kindTUI, Dir: sub}
}

// procData is the data directory an opencode process keeps its store in, read
// from its environment as dataDir reads ours (docs/agents/opencode.md §1); ""
// when its environment is unreadable, names neither XDG_DATA_HOME nor HOME, or
// points the store elsewhere with OPENCODE_DB: then it may be ours.
func procData(t proc.Table, pid int) string {
	env, err := t.Environ(pid)
	if err != nil {
		return ""
	}
	vars := discover.EnvVars(env)
	if _, ok := vars["OPENCODE_DB"]; ok {
		return ""
	}
	xdg, home := vars["XDG_DATA_HOME"], vars["HOME"]
	switch {
	case xdg != "" && filepath.IsAbs(xdg):
		return filepath.Join(xdg, "opencode")
	case home != "":
		return filepath.Join(home, ".local", "share", "opencode")
	}
	return ""
}

// procDir is where a process works: its --dir/project argument (relative to its
// working directory), else PWD from its environment (OpenCode prefers PWD over
// the real cwd, docs/agents/opencode.md §6), else its cwd.
func procDir(t proc.Table, pid int, arg string) string {
	base := ""
	if env, err := t.Environ(pid); err == nil {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "PWD="); ok && filepath.IsAbs(v) {
				base = v
			}
		}
	}
	if base == "" {
		if c, err := t.Cwd(pid); err == nil {
			base = c
		}
	}
	switch {
	case arg != "" && filepath.IsAbs(arg):
		return filepath.Clean(arg)
	case arg != "" && base != "":
		return filepath.Join(base, arg)
	case base != "":
		return filepath.Clean(base)
	}
	return ""
}

// judge derives every record's status (docs/agents/opencode.md §4.3), in place order. Status
// never depends on wall time or on how recently a session was updated.
func judge(recs []record, procs []ocProc, procsOK bool) []discover.Verdict {
	out := make([]discover.Verdict, len(recs))
	turns := make([]discover.Outcome, len(recs))
	details := make([]string, len(recs))
	// candidates per open session, and how many open sessions each process could be
	// serving: a process is tied to a session only when both are unique.
	cands := make([][]ocProc, len(recs))
	perProc := map[int]int{}
	for i, r := range recs {
		turns[i], details[i] = turnOf(r.Last)
		if !procsOK || (turns[i] != discover.OutcomeOpen && turns[i] != discover.OutcomeUnknown) {
			continue
		}
		cands[i] = candidatesFor(r, procs)
		for _, p := range cands[i] {
			perProc[p.PID]++
		}
	}
	for i, r := range recs {
		out[i] = decide(r, turns[i], details[i], procs, procsOK, cands[i], perProc)
	}
	return out
}

// candidatesFor lists the processes that may be writing an open session's turn:
// in its directory (or able to host any directory) and started no later than its
// newest prompt + slack. A process whose start is unknown stays a candidate.
func candidatesFor(r record, procs []ocProc) []ocProc {
	t := r.Created
	if r.LastUserAt > t {
		t = r.LastUserAt
	}
	var out []ocProc
	for _, p := range procs {
		if p.Session != "" {
			continue // a `run -s` serves its own session only
		}
		if p.StartOK && t < p.Start.Add(-startSlack).UnixMilli() {
			continue // the prompt predates the process
		}
		if p.Kind == kindHost || p.Dir == "" || sameDir(p.Dir, r.Dir) {
			out = append(out, p)
		}
	}
	return out
}

func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	// A process cwd is the resolved path; the session may record a symlinked PWD.
	rb, err := filepath.EvalSymlinks(b)
	return err == nil && filepath.Clean(a) == rb
}

func decide(r record, turn discover.Outcome, tdetail string, procs []ocProc, procsOK bool, cands []ocProc, perProc map[int]int) discover.Verdict {
	// `opencode run -s <id>` names its session: exact, whatever the turn says.
	if procsOK {
		var own []ocProc
		for _, p := range procs {
			if p.Session == r.ID {
				own = append(own, p)
			}
		}
		switch {
		case len(own) == 1:
			return discover.Verdict{Status: discover.StatusRunning, Evidence: discover.EvidenceProcess, Inferred: true,
				PID: own[0].PID, Detail: fmt.Sprintf("%s runs --session %s; %s", own[0], r.ID, tdetail)}
		case len(own) > 1:
			return discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceProcess,
				Detail: fmt.Sprintf("%d opencode processes run --session %s: %s", len(own), r.ID, listProcs(own))}
		}
	}
	switch turn {
	case discover.OutcomeDone, discover.OutcomeAborted, discover.OutcomeError, discover.OutcomeNone:
		// OutcomeNone: created (e.g. through the server API) and never prompted:
		// nothing runs it that we could see; a serve process hosting it can only
		// be asked over HTTP.
		return discover.TranscriptVerdict(turn, tdetail)
	}
	if !procsOK {
		return discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceNone,
			Detail: tdetail + "; no process table to tell whether opencode still runs it"}
	}
	switch {
	case len(cands) == 1 && perProc[cands[0].PID] == 1 && cands[0].Kind != kindHost && cands[0].Dir != "" && cands[0].StartOK:
		return discover.Verdict{Status: discover.StatusRunning, Evidence: discover.EvidenceProcess, Inferred: true,
			PID: cands[0].PID, Detail: fmt.Sprintf("%s started before its latest prompt; %s", cands[0], tdetail)}
	case len(cands) > 0:
		return discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceProcess,
			Detail: fmt.Sprintf("%s; cannot tell which opencode process serves it: %s", tdetail, ambiguity(cands, perProc))}
	case turn == discover.OutcomeUnknown:
		return discover.TranscriptVerdict(turn, tdetail)
	}
	if r.Last.Role == "user" {
		return discover.TranscriptVerdict(turn, "crashed: the prompt got no reply and no opencode process runs it (a startup error such as an unknown model, or killed outside agentctl)")
	}
	return discover.TranscriptVerdict(turn, "crashed: "+tdetail+" and no opencode process runs it (killed outside agentctl?)")
}

func ambiguity(cands []ocProc, perProc map[int]int) string {
	var parts []string
	for _, p := range cands {
		s := p.String()
		switch {
		case p.Kind == kindHost:
			s += " may host any directory"
		case p.Dir == "":
			s += " has an unreadable directory"
		case !p.StartOK:
			s += " has an unknown start time"
		case perProc[p.PID] > 1:
			s += fmt.Sprintf(" matches %d open sessions", perProc[p.PID])
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

func listProcs(ps []ocProc) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, ", ")
}
