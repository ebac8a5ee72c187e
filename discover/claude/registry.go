package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/proc"
)

// regEntry is <root>/sessions/<pid>.json: Claude's own record of a live process
// and the session it hosts now.
type regEntry struct {
	PID        int             `json:"pid"`
	SessionID  string          `json:"sessionId"`
	Cwd        string          `json:"cwd"`
	StartedAt  int64           `json:"startedAt"` // ms
	ProcStart  json.RawMessage `json:"procStart"` // decimal string (field 22)
	Version    string          `json:"version"`
	Kind       string          `json:"kind"`
	Entrypoint string          `json:"entrypoint"`
	Name       string          `json:"name"`
	Status     string          `json:"status"`
	WaitingFor string          `json:"waitingFor"`
	UpdatedAt  int64           `json:"updatedAt"` // ms
	PidDomain  string          `json:"pidDomain"`
	JobID      string          `json:"jobId"` // background sessions (kind "bg", docs/agents/claude-code.md §4.5)
}

// Registry verdicts.
const (
	regLive     = iota // the process runs and is the one that wrote the entry
	regStale           // no such process: killed or crashed (Claude removes the file on a clean exit)
	regRecycled        // the PID runs, but it is another process
	regForeign         // written in another PID namespace: the PID means nothing here
	regUnknown         // cannot tell (no process table, no usable start time)
)

// regCheck is one verified registry entry.
type regCheck struct {
	regEntry
	File     string // sessions/<pid>.json, relative to the root, for messages
	Verdict  int
	Inferred bool   // live through the startedAt fallback, not procStart
	Detail   string // evidence_detail
	// Prompt is the time (ms) of a prompt history.jsonl has for this idle TUI
	// session after the entry's updatedAt: submitted, not registered yet
	// (0: none; see notePrompts).
	Prompt int64
}

var regName = regexp.MustCompile(`^[0-9]+\.json$`)

// hostIdentity is what a 2.1.329+ pidDomain must match: this machine and this PID
// namespace. Injectable so tests do not depend on the host.
type hostIdentity struct {
	MachineID func() string // trimmed /etc/machine-id
	PidNS     func() string // readlink /proc/self/ns/pid, e.g. "pid:[4026531836]"
}

func defaultHost() hostIdentity {
	return hostIdentity{
		MachineID: func() string {
			b, err := os.ReadFile("/etc/machine-id")
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(b))
		},
		PidNS: func() string {
			s, err := os.Readlink("/proc/self/ns/pid")
			if err != nil {
				return ""
			}
			return s
		},
	}
}

// registry is what readRegistry found: the verified entries, and when an entry
// was last created or removed (the sessions/ folder's mtime; zero without one).
type registry struct {
	Entries []regCheck
	Changed time.Time
}

// changedWithin reports whether a Claude process created or removed its entry
// (started or exited) less than d before now; a folder mtime in the future
// counts as recent. Claude rewrites an entry in place, which leaves the folder
// alone (docs/agents/claude-code.md §4.3).
func (r registry) changedWithin(d time.Duration, now time.Time) bool {
	return !r.Changed.IsZero() && now.Sub(r.Changed) < d
}

// readRegistry reads and verifies every registry entry (docs/agents/claude-code.md §4.2). It never writes or
// removes anything, stale entries included.
func readRegistry(ctx context.Context, root string, procs proc.Table, host hostIdentity, startMs startMillis) registry {
	dir := filepath.Join(root, "sessions")
	// The folder's stamp before its names: an entry created or removed meanwhile
	// makes the next run see a change, never this one miss it.
	st, err := os.Stat(dir)
	if err != nil {
		return registry{}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return registry{Changed: st.ModTime()}
	}
	var domain string
	var out []regCheck
	for _, e := range ents {
		if e.IsDir() || !regName.MatchString(e.Name()) {
			continue // <pid>.<sha>.key and others are not entries
		}
		pid, _ := strconv.Atoi(strings.TrimSuffix(e.Name(), ".json"))
		entry, ok := readEntry(ctx, filepath.Join(dir, e.Name()))
		if !ok || entry.PID != pid || entry.SessionID == "" {
			continue
		}
		c := regCheck{regEntry: entry, File: "sessions/" + e.Name()}
		if entry.PidDomain != "" && domain == "" {
			domain = "linux:" + host.MachineID() + ":" + host.PidNS()
		}
		verify(&c, procs, domain, startMs)
		out = append(out, c)
	}
	notePrompts(root, out)
	return registry{Entries: out, Changed: st.ModTime()}
}

// historyTail is how much of history.jsonl's end is read for prompts newer than
// an idle registry entry: the last few prompts of every project.
const historyTail = 32 << 10

// notePrompts sets Prompt on the live TUI entries that say idle when
// history.jsonl has a prompt (not a slash, bash or memory command) for their
// session written after the entry's updatedAt. Under load Claude 2.1.329 sends
// the model request before it writes `busy`, by up to 1.5 s at a session's
// first prompt, and history.jsonl can have the prompt 0.9 s before the
// registry (docs/agents/claude-code.md §4.3). The file is read only when such
// an entry exists.
func notePrompts(root string, regs []regCheck) {
	idle := map[string]int{}
	for i, r := range regs {
		if r.Verdict == regLive && r.Status == "idle" && r.Entrypoint == "cli" && r.UpdatedAt > 0 {
			idle[r.SessionID] = i
		}
	}
	if len(idle) == 0 {
		return
	}
	path := filepath.Join(root, "history.jsonl")
	f, err := agentfs.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	off := max(fi.Size()-historyTail, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := agentfs.ReadAt(f, path, b, off); err != nil && !errors.Is(err, io.EOF) {
		return
	}
	if off > 0 { // the first line may be cut
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"sessionId"`)) {
			continue
		}
		var h struct {
			Display   string `json:"display"`
			Timestamp int64  `json:"timestamp"`
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(line, &h) != nil {
			continue
		}
		i, ok := idle[h.SessionID]
		if !ok || h.Timestamp <= regs[i].UpdatedAt || strings.HasPrefix(h.Display, "/") ||
			strings.HasPrefix(h.Display, "!") || strings.HasPrefix(h.Display, "#") {
			continue
		}
		regs[i].Prompt = max(regs[i].Prompt, h.Timestamp)
	}
}

// readEntry parses one entry; Claude rewrites these files in place, so a parse
// error is retried once after 50 ms before the entry is skipped.
func readEntry(ctx context.Context, path string) (regEntry, bool) {
	for try := 0; try < 2; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return regEntry{}, false
			case <-time.After(50 * time.Millisecond):
			}
		}
		b, err := agentfs.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return regEntry{}, false
		}
		var e regEntry
		if err == nil && json.Unmarshal(b, &e) == nil {
			return e, true
		}
	}
	return regEntry{}, false
}

// startMillis converts a process's start to epoch milliseconds (false: unknown).
type startMillis func(p proc.Process) (int64, bool)

func verify(c *regCheck, procs proc.Table, domain string, startMs startMillis) {
	if c.PidDomain != "" && c.PidDomain != domain {
		c.Verdict = regForeign
		c.Detail = fmt.Sprintf("%s: foreign PID namespace (pidDomain %s, here %s)", c.File, c.PidDomain, domain)
		return
	}
	if !procs.Available() {
		c.Verdict = regUnknown
		c.Detail = fmt.Sprintf("%s: no process table to verify pid %d", c.File, c.PID)
		return
	}
	p, alive := procs.Get(c.PID)
	if !alive {
		c.Verdict = regStale
		c.Detail = fmt.Sprintf("%s: pid %d is gone; killed or crashed", c.File, c.PID)
		return
	}
	if ps, ok := procStartOf(c.ProcStart); ok {
		if ps == p.StartTicks {
			c.Verdict = regLive
			c.Detail = fmt.Sprintf("%s procStart=%d matches", c.File, ps)
			return
		}
		c.Verdict = regRecycled
		c.Detail = fmt.Sprintf("%s: pid %d was recycled (procStart %d, running process started at %d); killed or crashed", c.File, c.PID, ps, p.StartTicks)
		return
	}
	// No procStart (older versions): the process must have started by the time
	// the entry says the session did.
	ms, ok := startMs(p)
	switch {
	case !ok || c.StartedAt == 0:
		c.Verdict = regUnknown
		c.Detail = fmt.Sprintf("%s: no procStart and no start time to compare for pid %d", c.File, c.PID)
	case ms <= c.StartedAt+2000:
		c.Verdict, c.Inferred = regLive, true
		c.Detail = fmt.Sprintf("%s: no procStart; pid %d started before the session (inferred)", c.File, c.PID)
	default:
		c.Verdict = regRecycled
		c.Detail = fmt.Sprintf("%s: pid %d was recycled (started after the session); killed or crashed", c.File, c.PID)
	}
}

// procStartOf reads procStart, a decimal string (a number is accepted too).
func procStartOf(raw json.RawMessage) (uint64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	s := strings.Trim(string(raw), `"`)
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}
