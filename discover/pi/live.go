package pi

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// Attribution windows (docs/agents/pi.md §4.1): a new session's header is written 0.1–4 s after
// the process starts on an idle machine, but more than 10 s later on a loaded one (node's
// cold start; seen in the status accuracy benchmark), so the window is wide; the cwd must
// match as well. A resumed pi appends the user message at once.
const (
	newSessionWindow = 60 * time.Second
	resumeSlack      = 1 * time.Second
)

// candidate is a live process that may be a pi writing into the scanned store.
type candidate struct {
	PID   int
	Start time.Time
	Cwd   string
	// Dirs are the session dirs its environment says it writes to; nil when its
	// environment is unreadable (then it may write anywhere we scan).
	Dirs []string
}

// piNames are process names (comm / argv[0] basename) a pi may run under.
func piNames(env *discover.Env) []string {
	names := []string{"pi", "pi-rust"}
	if env.Config != nil {
		for _, a := range []string{Name, NameRust} {
			if b := env.Config.Adapters[a].Binary; b != "" {
				names = append(names, trimComm(filepath.Base(b)))
			}
		}
	}
	return names
}

// trimComm cuts a name the way the kernel cuts comm (15 bytes).
func trimComm(s string) string {
	if len(s) > 15 {
		return s[:15]
	}
	return s
}

// runtimes are the executables a pi process may show in /proc/<pid>/exe: pi is a
// Node program whose argv is overwritten with its title; pi-rust is its own binary.
var runtimes = []string{"node", "nodejs", "bun", "pi", "pi-rust"}

// candidates finds pi processes in the snapshot (docs/agents/pi.md §4.1 "Foreign process"),
// skipping the ones agentctl launched (skip) and the ones whose environment points
// at a store we did not scan.
func candidates(env *discover.Env, startTime func(proc.Process) (time.Time, bool), skip map[int]bool) []candidate {
	t := env.Procs
	if t == nil || !t.Available() {
		return nil
	}
	names := piNames(env)
	var out []candidate
	for _, p := range t.All() {
		if skip[p.PID] {
			continue
		}
		comm := p.Comm
		maybe := slices.Contains(names, comm) || comm == "node" || comm == "nodejs" || comm == "bun"
		if !maybe {
			continue
		}
		argv, _ := t.Argv(p.PID)
		if !isPi(t, p, argv, names) {
			continue
		}
		cwd, err := t.Cwd(p.PID)
		if err != nil || cwd == "" {
			continue // not readable: cannot be matched to a header cwd
		}
		start, ok := startTime(p)
		if !ok {
			continue
		}
		c := candidate{PID: p.PID, Start: start, Cwd: filepath.Clean(cwd)}
		if environ, err := t.Environ(p.PID); err == nil && len(environ) > 0 {
			c.Dirs = procDirs(env, environ, argv, c.Cwd)
		}
		out = append(out, c)
	}
	return out
}

// isPi applies docs/agents/pi.md §4.1: comm or argv[0] is a pi name and the executable is a
// runtime pi runs on (or unreadable), or argv still shows pi's cli.js (the moment
// before pi sets its process title).
func isPi(t proc.Table, p proc.Process, argv []string, names []string) bool {
	for _, a := range argv {
		// 0.73.1 runs dist/cli.js; 1.6 (@earendil-works) dist/bundle/cli.js.
		if a = filepath.ToSlash(a); strings.Contains(a, "pi-coding-agent/dist/cli.js") || strings.Contains(a, "pi-coding-agent/dist/bundle/cli.js") {
			return true
		}
	}
	named := slices.Contains(names, p.Comm)
	if len(argv) > 0 {
		named = named || slices.Contains(names, filepath.Base(argv[0]))
	}
	if !named {
		return false
	}
	exe, err := t.Exe(p.PID)
	if err != nil || exe == "" {
		return true
	}
	exe = filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	return slices.Contains(runtimes, exe) || slices.Contains(names, trimComm(exe)) || slices.Contains(names, exe)
}

// procDirs are the session dirs a process writes to per its own environment and
// argv (pi: PI_CODING_AGENT_SESSION_DIR, else PI_CODING_AGENT_DIR/sessions, else
// $HOME/.pi/agent/sessions; pi-rust also PI_SESSIONS_DIR and --session-dir).
func procDirs(env *discover.Env, environ, argv []string, cwd string) []string {
	vars := discover.EnvVars(environ)
	expand := func(p string) string {
		home := vars["HOME"]
		switch {
		case p == "~" && home != "":
			p = home
		case strings.HasPrefix(p, "~/") && home != "":
			p = filepath.Join(home, p[2:])
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		return filepath.Clean(p)
	}
	if d := argValue(argv, "--session-dir"); d != "" {
		return []string{expand(d)}
	}
	var dirs []string
	if d := vars["PI_SESSIONS_DIR"]; d != "" {
		dirs = append(dirs, expand(d))
	}
	agent := ""
	switch {
	case vars["PI_CODING_AGENT_DIR"] != "":
		agent = expand(vars["PI_CODING_AGENT_DIR"])
	case vars["HOME"] != "":
		agent = filepath.Join(vars["HOME"], ".pi", "agent")
	default:
		return nil // nothing says where it writes: do not rule it out
	}
	if d := vars["PI_CODING_AGENT_SESSION_DIR"]; d != "" {
		return append(dirs, expand(d))
	}
	dirs = append(dirs, filepath.Join(agent, "sessions"))
	// A sessionDir in the global settings of the same agent dir applies too.
	if filepath.Clean(agent) == filepath.Clean(agentDir(env)) {
		if d := settingsSessionDir(env, agent); d != "" {
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	return dirs
}

// writesTo reports whether a file lies under one of the candidate's dirs.
func (c candidate) writesTo(path string) bool {
	if c.Dirs == nil {
		return true
	}
	dir := filepath.Dir(path)
	for _, d := range c.Dirs {
		if dir == d || filepath.Dir(dir) == d {
			return true
		}
	}
	return false
}

// owns is the attribution rule of docs/agents/pi.md §4.1: same cwd as the header, and either a
// new session (header within newSessionWindow after the process started) or a resumed one
// (older header, an entry written since the process started). Never cwd alone.
func (c candidate) owns(f *file) bool {
	if !c.writesTo(f.Path) || filepath.Clean(f.Sum.Header.Cwd) != c.Cwd {
		return false
	}
	started := f.Sum.started()
	if started.IsZero() {
		return false
	}
	if !started.Before(c.Start) {
		return !started.After(c.Start.Add(newSessionWindow))
	}
	newest := f.Sum.newestEntry()
	return !newest.IsZero() && !newest.Before(c.Start.Add(-resumeSlack))
}

// owner is the outcome of attribution for one file.
type owner struct {
	PID       int
	Ambiguous []int // several processes, or one process with several files
	Detail    string
}

// attribute matches candidates to files. A pair counts only when the process
// matches exactly one file and the file exactly one process; every other file a
// candidate matches is ambiguous (unknown), never guessed.
func attribute(cands []candidate, files []*file) map[*file]owner {
	byFile, perPID := discover.Claims(cands, files, candidate.pid, candidate.owns)
	out := map[*file]owner{}
	for f, cs := range byFile {
		if c := cs[0]; len(cs) == 1 && perPID[c.PID] == 1 {
			how := "resumed: an entry was written after it started"
			if !f.Sum.started().Before(c.Start) {
				how = "new: header written within 10 s of its start"
			}
			out[f] = owner{PID: c.PID, Detail: fmt.Sprintf("pi process %d in %s started %s (%s)",
				c.PID, c.Cwd, c.Start.UTC().Format(time.RFC3339), how)}
			continue
		}
		all := make([]int, len(cs))
		for i, c := range cs {
			all[i] = c.PID
		}
		slices.Sort(all)
		var detail string
		if len(all) > 1 {
			detail = fmt.Sprintf("%d pi processes could own this session (pids %s)", len(all), discover.JoinInts(all))
		} else {
			detail = fmt.Sprintf("pi process %d could own %d sessions in %s", all[0], perPID[all[0]], f.Sum.Header.Cwd)
		}
		out[f] = owner{Ambiguous: all, Detail: detail}
	}
	return out
}

func (c candidate) pid() int { return c.PID }

// mustRead is which session files a listing whose budget gave up reads all the
// same: those a live session may be. Leaving one out would change what the
// listing says about a live session (or let a pi process look tied to another
// file of its cwd), not just drop an old one: the files of sessions agentctl
// launched (launched: their ids, from the file names), and, while a pi process
// runs, every file written since the earliest of them started (a process owns
// only a file it wrote after its start, see owns).
func mustRead(launched map[string]string, cands []candidate) func(*file) bool {
	var since discover.WrittenSince
	for _, c := range cands {
		since.Open(c.Start, resumeSlack)
	}
	return func(f *file) bool {
		if k := nameKey(f.Path); k != "" {
			if _, ok := launched[k]; ok {
				return true
			}
		}
		return since.Holds(f.mtime)
	}
}
