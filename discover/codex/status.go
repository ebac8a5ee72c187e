package codex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/proc"
)

// liveness is the exact per-thread evidence of a live writer, read once per
// command (docs/agents/codex.md §4.1).
type liveness struct {
	checkable bool   // false: neither locks nor open files could be inspected
	why       string // why not checkable
	method    string // "thread-writer lock" or "open rollout fd"
	holders   map[string]int
	lockFiles map[string]bool // a lock file exists (held or stale)
	daemon    map[int]bool    // holder PIDs that are the TUI's app-server daemon
}

// checkLiveness reads who writes which thread. rollouts returns each thread's
// rollout path; it is called only when open files must be checked (no locks).
// q, when set, names the threads whose holders are needed (a lookup): the
// others' lock files are not checked, and from a kept listing of the lock
// folder (discover/dirnames) not even listed, so a lookup does not read every
// stale lock a long history left. Whether locks can be checked at all is asked
// all the same, so every thread's evidence is what a full listing says.
func (a *Adapter) checkLiveness(ctx context.Context, env *discover.Env, home string, rollouts func() map[string]string, q *discover.Query) *liveness {
	lv := &liveness{holders: map[string]int{}, lockFiles: map[string]bool{}, daemon: map[int]bool{}}
	lockDir := filepath.Join(home, "thread-writer-locks")
	var files []string
	byFile := map[string]string{}
	anyLock := false // a lock file of some thread exists, named or not
	each := func(name string) {
		key := lockKey([]byte(name))
		if key == nil {
			return // .coordination.lock is Codex-internal
		}
		id := string(key)
		anyLock = true
		if q != nil && !q.Match(id) {
			return
		}
		lv.lockFiles[id] = true
		p := filepath.Join(lockDir, name)
		files = append(files, p)
		byFile[p] = id
	}
	var err error
	if q != nil {
		names := openLockNames(env)
		var more bool
		more, err = names.EachMatch(lockDir, queryPrefixes(q), func(b []byte, _ index.EntryKind) { each(string(b)) })
		anyLock = anyLock || more
		if serr := names.Save(); serr != nil {
			env.Warnf("%v", serr)
		}
	} else {
		var ents []os.DirEntry
		ents, err = os.ReadDir(lockDir)
		for _, e := range ents {
			each(e.Name())
		}
	}
	switch {
	case err == nil:
		lv.method = "thread-writer lock"
		if !anyLock {
			lv.checkable = true // clean exits delete their lock: nothing is being written
			break
		}
		if a.Holders == nil {
			lv.why = ErrLocksUnavailable.Error()
			break
		}
		held, err := a.Holders(ctx, files)
		if err != nil {
			lv.why = err.Error()
			break
		}
		lv.checkable = true
		for f, pid := range held {
			if id, ok := byFile[f]; ok {
				lv.holders[id] = pid
			}
		}
	case os.IsNotExist(err):
		// Codex before thread-writer locks: the writer keeps its rollout open.
		lv.method = "open rollout fd"
		if a.OpenFiles == nil || env.Procs == nil || !env.Procs.Available() {
			lv.why = "no thread-writer-locks directory and open files cannot be inspected"
			break
		}
		lv.checkable = true
		lv.holders = fdHolders(env, a.OpenFiles, home, rollouts)
	default:
		lv.why = err.Error()
	}
	if len(lv.holders) > 0 {
		dpid := daemonPID(home)
		for _, pid := range lv.holders {
			if pid <= 0 {
				continue
			}
			if pid == dpid {
				lv.daemon[pid] = true
				continue
			}
			if env.Procs != nil {
				if argv, err := env.Procs.Argv(pid); err == nil && strings.Contains(strings.Join(argv, " "), "app-server") {
					lv.daemon[pid] = true
				}
			}
		}
	}
	return lv
}

// fdHolders finds the threads codex processes hold a rollout of open (Codex
// before thread-writer locks). Only codex processes' open files are read, and a
// rollout is known by its name (the thread id in it, docs/agents/codex.md §1.1)
// under CODEX_HOME: with no codex process alive nothing of the history is read,
// so an alive-only listing costs the same at any size. rollouts (each thread's
// rollout path) is asked for only for an open rollout whose name has no id.
func fdHolders(env *discover.Env, openFiles OpenFiles, home string, rollouts func() map[string]string) map[string]int {
	holders := map[string]int{}
	var roots []string // CODEX_HOME's rollout folders, as /proc shows paths (resolved)
	var byPath map[string]string
	for _, p := range env.Procs.All() {
		if p.Comm != "codex" {
			if exe, err := env.Procs.Exe(p.PID); err != nil || filepath.Base(exe) != "codex" {
				continue
			}
		}
		fds, err := openFiles(p.PID)
		if err != nil {
			continue
		}
		for _, f := range fds {
			name := filepath.Base(f)
			if !strings.HasPrefix(name, "rollout-") || !strings.HasSuffix(name, ".jsonl") {
				continue
			}
			if roots == nil {
				roots = rolloutRoots(home)
			}
			if !under(f, roots) {
				continue // another CODEX_HOME's
			}
			if id := idFromStem(strings.TrimSuffix(name, ".jsonl")); id != "" {
				holders[id] = p.PID
				continue
			}
			if byPath == nil {
				byPath = map[string]string{}
				for id, rp := range rollouts() {
					byPath[rp] = id
					if r, err := filepath.EvalSymlinks(rp); err == nil {
						byPath[r] = id
					}
				}
			}
			if id, ok := byPath[f]; ok {
				holders[id] = p.PID
			}
		}
	}
	return holders
}

// rolloutRoots are CODEX_HOME's sessions and archived_sessions folders, as
// given and resolved.
func rolloutRoots(home string) []string {
	var out []string
	for _, d := range []string{"sessions", "archived_sessions"} {
		p := filepath.Join(home, d)
		out = append(out, p)
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			out = append(out, r)
		}
	}
	return out
}

func under(p string, roots []string) bool {
	for _, r := range roots {
		if strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// turnView is the latest turn as status derivation sees it.
type turnView struct {
	state   turnState
	known   bool
	pending string // open turn blocked on an approval / user-input request
	cmd     string // the escalated call's command, when pending is one
	failed  string // the turn ended in an error (message), "" otherwise
	reason  string // turn_aborted reason
	source  string // where the turn state came from
}

// latestTurnView picks the turn state: thread_history when its projection has
// consumed the whole rollout (docs/agents/codex.md §2.3), else the rollout tail.
func (st *state) latestTurnView(id string, haveTail bool, tail tailInfo, size int64) turnView {
	if st.hist != nil {
		// Current projection, or no rollout to check it against (then the DB is
		// all there is).
		if off, ok := st.hist.Projected[id]; (ok && off == size && haveTail) || !haveTail {
			if lt, ok := st.hist.Turns[id]; ok {
				v := turnView{known: true, source: "thread_turns"}
				switch lt.Status {
				case "completed":
					v.state = turnDone
				case "interrupted":
					v.state = turnInterrupted
					v.reason = "interrupted"
				case "inProgress":
					v.state = turnOpen
				default:
					v.state = turnDone
					v.failed = "turn status " + lt.Status
				}
				if ej := strings.TrimSpace(lt.ErrorJSON); ej != "" && ej != "null" {
					v.failed = "error: " + discover.OneLine(ej, 200)
				}
				if haveTail && v.state == turnOpen {
					v.pending, v.cmd = tail.Pending, tail.PendingCmd
				}
				return v
			}
		}
	}
	if !haveTail {
		return turnView{}
	}
	v := turnView{state: tail.Turn, known: tail.TurnKnown, pending: tail.Pending, cmd: tail.PendingCmd, reason: tail.Reason, source: "rollout"}
	if tail.ErrMsg != "" {
		v.failed = "error: " + discover.OneLine(tail.ErrMsg, 200)
	}
	return v
}

// applyStatus sets Status, Evidence, PID and EndedAt (docs/agents/codex.md §4.3, first
// matching row wins). Launch records are folded in later by the core.
func (st *state) applyStatus(env *discover.Env, s *discover.Session, rf *rolloutFile, row *threadRow, haveTail bool, tail tailInfo, size int64) {
	// thread_history keys its turns by rollout: a thread spanning several is
	// projected per file, its latest turn is its newest rollout's.
	key := s.ID
	if rf != nil && rf.Rollout != "" {
		key = rf.Rollout
	}
	tv := st.latestTurnView(key, haveTail, tail, size)
	lv := st.live
	pid, live := lv.holders[s.ID]
	if tv.known {
		s.Extra["last_turn"] = tv.state.String()
	}
	if live {
		by := "a process in another PID namespace"
		if pid > 0 {
			by = fmt.Sprintf("pid %d", pid)
			if env.Procs != nil {
				if _, ok := env.Procs.Get(pid); ok {
					s.PID = pid
				}
			}
		}
		if lv.daemon[pid] {
			// It keeps the thread after the TUI quits, until it stops
			// (docs/agents/codex.md §4.3): the detail says so.
			s.Extra["hosted_by"] = "app-server daemon"
			by += " (the TUI's app-server daemon, which keeps the thread after the TUI quits)"
		}
		s.Evidence = discover.EvidenceRegistry
		detail := fmt.Sprintf("%s held by %s", lv.method, by)
		run := ""
		if tv.state == turnOpen && tv.cmd != "" {
			run = approvedRun(env, pid, tv.cmd)
		}
		switch {
		case run != "":
			s.Status = discover.StatusRunning
			s.EvidenceDetail = detail + "; " + run
		case tv.state == turnOpen && tv.pending != "":
			s.Status = discover.StatusWaiting
			s.Inferred = true // request names are from the protocol, unverified as persisted
			s.EvidenceDetail = detail + "; open turn waits on " + tv.pending
		case tv.state == turnOpen:
			s.Status = discover.StatusRunning
			s.EvidenceDetail = detail + "; turn in progress"
		default:
			s.Status = discover.StatusIdle
			s.EvidenceDetail = detail + "; no turn in progress"
			if s.BlockedReason = discover.BlockedBy(tv.failed); s.BlockedReason != "" {
				s.EvidenceDetail += "; last turn " + tv.failed
			}
		}
		return
	}

	if !lv.checkable && tv.state == turnOpen {
		s.Status, s.Evidence = discover.StatusUnknown, discover.EvidenceNone
		s.EvidenceDetail = "the latest turn is open and liveness cannot be checked: " + lv.why
		return
	}
	s.Evidence = discover.EvidenceTranscript
	var not string
	switch {
	case !lv.checkable:
		not = "liveness not checkable (" + lv.why + ")"
	case lv.lockFiles[s.ID]:
		not = "stale " + lv.method + " (not held)"
	default:
		not = "no " + lv.method + " held"
	}
	if msg := st.launchFailure(s.ID, tail); msg != "" && tv.failed == "" {
		tv.failed = msg
	}
	ended := func() {
		if haveTail && !tail.TurnEnded.IsZero() {
			t := tail.TurnEnded
			s.EndedAt = &t
		}
	}
	switch {
	case tv.failed != "":
		s.Status = discover.StatusFailed
		s.Extra["reason"] = "error"
		s.EvidenceDetail = tv.failed + "; " + not
		s.BlockedReason = discover.BlockedBy(tv.failed)
		ended()
	case !tv.known || tv.state == turnNone:
		s.Status = discover.StatusStopped
		s.EvidenceDetail = "no turn recorded; " + not
		if rf == nil {
			s.EvidenceDetail = "rollout not found; " + not
		}
	case tv.state == turnDone:
		s.Status = discover.StatusStopped
		s.Extra["reason"] = "done"
		s.EvidenceDetail = "last turn completed (" + tv.source + "); " + not
		ended()
	case tv.state == turnInterrupted:
		s.Status = discover.StatusStopped
		s.Extra["reason"] = "interrupted"
		s.EvidenceDetail = "last turn " + nonEmpty(tv.reason, "aborted") + " (" + tv.source + "); " + not
		ended()
	default: // open, nobody writing: killed hard (SIGTERM/SIGKILL record nothing)
		s.Status = discover.StatusFailed
		s.Extra["reason"] = "crashed"
		s.EvidenceDetail = "last turn never finished (" + tv.source + "); " + not
	}
}

// approvedRun tells an escalated call the user approved from one still asking.
// Codex 0.169 writes nothing to the rollout between the approval and the
// command's output, so an approved `npm test` would look like a prompt for as
// long as it runs; but the writer (the TUI's app-server daemon) runs the command
// as its child, `/bin/bash -c <cmd>` (docs/agents/codex.md §4.2). A descendant of
// the lock holder whose argv carries the call's command is that run. It returns
// the evidence, "" when no such process exists.
func approvedRun(env *discover.Env, holder int, cmd string) string {
	if holder <= 0 || env.Procs == nil || !env.Procs.Available() || strings.TrimSpace(cmd) == "" {
		return ""
	}
	for _, p := range proc.Descendants(env.Procs, holder) {
		argv, err := env.Procs.Argv(p.PID)
		if err != nil || len(argv) == 0 {
			continue
		}
		if strings.Contains(strings.Join(argv, " "), cmd) {
			return fmt.Sprintf("approved call runs: pid %d (child of pid %d) runs %s", p.PID, holder, strconv.Quote(discover.OneLine(cmd, 80)))
		}
	}
	return ""
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// launchFailure reads the newest launch log of this thread (codex exec --json
// stdout) and returns the error its last turn ended with, if any. A log older than
// the rollout's latest turn says nothing about that turn.
func (st *state) launchFailure(id string, tail tailInfo) string {
	refs := st.launchs[id]
	if len(refs) == 0 {
		return ""
	}
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].launched.Before(refs[j].launched) })
	ref := refs[len(refs)-1]
	fi, err := os.Stat(ref.log)
	if err != nil {
		return ""
	}
	if !tail.TurnStarted.IsZero() && tail.TurnStarted.After(fi.ModTime().Add(time.Second)) {
		return ""
	}
	msgs := readExecLog(ref.log, 256<<10)
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		switch {
		case m.turnFailed:
			return "error: " + discover.OneLine(m.Text, 200)
		case m.turnEnd:
			return ""
		}
	}
	return ""
}
