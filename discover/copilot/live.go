package copilot

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/proc"
)

// lockSlack is how much later than its inuse lock a process may seem to have
// started and still be the one that wrote it: process start times are rounded
// to clock ticks and file mtimes to the file system's granularity.
const lockSlack = 2 * time.Second

// lock is one inuse.<pid>.lock in a session directory: Copilot's own record
// of a process holding the session, removed on a clean exit and left behind
// by SIGKILL (docs/agents/copilot.md "Liveness").
type lock struct {
	PID   int
	Name  string // file name, for details
	MTime time.Time
}

// lockState is what the locks of one session directory say.
type lockState struct {
	Live     *lock  // the verified holder (nil: none)
	Detail   string // why Live is live, or why the locks are stale
	Stale    bool   // locks exist and every holder is gone
	Unknown  bool   // locks exist and there is no process table to check them
	HasLocks bool
	// Headless: the holder runs a prompt given on its command line or stdin
	// (its argv or its loader's names -p, --prompt or --output-format): it
	// takes no other prompt and exits when done, so it is never idle.
	Headless bool
}

// readLocks lists the inuse.<pid>.lock files of dir (given its entries).
func readLocks(dir string, ents []os.DirEntry) []lock {
	var out []lock
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, "inuse.") || !strings.HasSuffix(name, ".lock") {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "inuse."), ".lock"))
		if err != nil || pid <= 0 {
			continue
		}
		// The content is the pid again; a lock whose content names another pid
		// is not one Copilot wrote.
		if b, err := readSmall(filepath.Join(dir, name), 64); err == nil {
			if s := strings.TrimSpace(string(b)); s != "" && s != strconv.Itoa(pid) {
				continue
			}
		}
		l := lock{PID: pid, Name: name}
		if fi, err := e.Info(); err == nil {
			l.MTime = fi.ModTime()
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b lock) int { return b.MTime.Compare(a.MTime) }) // newest first
	return out
}

// checkLocks verifies the holders against the process table: the pid runs, it
// is a copilot binary, and it did not start after it wrote the lock (a
// recycled pid). proc.Table has no open-file view, so the open inuse.<pid>.hold
// that Copilot keeps is not checked (docs/agents/copilot.md "Liveness").
func checkLocks(env *discover.Env, locks []lock) lockState {
	if len(locks) == 0 {
		return lockState{}
	}
	st := lockState{HasLocks: true}
	t := env.Procs
	if t == nil || !t.Available() {
		st.Unknown = true
		st.Detail = fmt.Sprintf("%s exists but there is no process table to check pid %d", locks[0].Name, locks[0].PID)
		return st
	}
	var why []string
	for i := range locks {
		l := &locks[i]
		p, ok := t.Get(l.PID)
		if !ok {
			why = append(why, fmt.Sprintf("%s: pid %d is gone (no clean exit removed it)", l.Name, l.PID))
			continue
		}
		if !isCopilot(env, t, p) {
			why = append(why, fmt.Sprintf("%s: pid %d is now %q, not copilot", l.Name, l.PID, p.Comm))
			continue
		}
		start, haveStart := t.StartTime(l.PID)
		if haveStart && !l.MTime.IsZero() && start.After(l.MTime.Add(lockSlack)) {
			why = append(why, fmt.Sprintf("%s: pid %d started %s, after the lock was written: recycled",
				l.Name, l.PID, start.UTC().Format(time.RFC3339)))
			continue
		}
		st.Live = l
		st.Detail = fmt.Sprintf("%s held by copilot pid %d", l.Name, l.PID)
		st.Headless = headless(t, l.PID) || headless(t, p.PPID)
		if haveStart {
			st.Detail += " started " + start.UTC().Format(time.RFC3339)
		}
		return st
	}
	st.Stale = true
	st.Detail = "stale " + strings.Join(why, "; ")
	return st
}

// copilotNames are the names the copilot process runs under: the native binary
// (…/copilot-linux-x64/copilot) holds the lock; its parent is the node loader.
func copilotNames(env *discover.Env) []string {
	names := []string{"copilot"}
	if env.Config != nil {
		if b := env.Config.Adapters[Name].Binary; b != "" {
			n := filepath.Base(b)
			names = append(names, n)
			if len(n) > 15 {
				names = append(names, n[:15]) // comm is cut to 15 bytes
			}
		}
	}
	return names
}

// isCopilot reports whether p is a copilot process by its comm, executable or
// argv[0]. Unreadable details do not rule it out when comm says copilot.
func isCopilot(env *discover.Env, t proc.Table, p proc.Process) bool {
	names := copilotNames(env)
	if slices.Contains(names, p.Comm) {
		return true
	}
	if exe, err := t.Exe(p.PID); err == nil && slices.Contains(names, filepath.Base(strings.TrimSuffix(exe, " (deleted)"))) {
		return true
	}
	if argv, err := t.Argv(p.PID); err == nil && len(argv) > 0 && slices.Contains(names, filepath.Base(argv[0])) {
		return true
	}
	return false
}

// anyCopilot reports whether a process of t is copilot (isCopilot): without
// one, no inuse lock can have a live holder.
func anyCopilot(env *discover.Env, t proc.Table) bool {
	for _, p := range t.All() {
		if isCopilot(env, t, p) {
			return true
		}
	}
	return false
}

// openState is ~/.copilot/open-sessions-state.json (interactive sessions only):
// working is true while a turn is in flight.
type openState map[string]struct {
	Working *bool `json:"working"`
}

func readOpenState(root string) openState {
	b, err := readSmall(filepath.Join(root, "open-sessions-state.json"), 4<<20)
	if err != nil {
		return nil
	}
	var m openState
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// working reports whether the TUI says the session's turn is in flight.
func (o openState) working(id string) bool {
	e, ok := o[id]
	return ok && e.Working != nil && *e.Working
}

// readSmall reads at most max bytes of a file.
func readSmall(path string, max int64) ([]byte, error) {
	f, err := agentfs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}

// headless reports whether pid's argv asks copilot for a non-interactive run.
func headless(t proc.Table, pid int) bool {
	if pid <= 1 {
		return false
	}
	argv, err := t.Argv(pid)
	if err != nil {
		return false
	}
	for _, a := range argv {
		if a == "-p" || a == "--prompt" || a == "--output-format" || strings.HasPrefix(a, "--prompt=") || strings.HasPrefix(a, "--output-format=") {
			return true
		}
	}
	return false
}
