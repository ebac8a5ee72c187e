package claude

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// Job states Claude writes to jobs/<short>/state.json (docs/agents/claude-code.md §4.5).
const (
	jobWorking = "working"
	jobBlocked = "blocked" // a permission prompt is open
	jobDone    = "done"    // the process ended on its own (or was signalled)
	jobStopped = "stopped" // `claude stop <short>`: still attachable
)

// jobRecord is Claude's own record of one background session. It outlives the
// process, so it is the evidence for a background session that has ended.
type jobRecord struct {
	State     string `json:"state"`
	Detail    string `json:"detail"`
	SessionID string `json:"sessionId"`
	Short     string `json:"daemonShort"`
	Cwd       string `json:"cwd"`
	UpdatedAt string `json:"updatedAt"` // RFC 3339
	File      string `json:"-"`         // jobs/<short>/state.json, for messages
}

func (j *jobRecord) updated() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, j.UpdatedAt)
	return t
}

// jobIndex finds a session's job record. It lists <root>/jobs once (a name per
// background session ever run) and reads a state.json only for a session that
// asks: the cost stays proportional to the sessions shown.
type jobIndex struct {
	root   string
	shorts map[string]bool
	read   map[string]*jobRecord
}

// jobShortLen is the length of Claude's short id: the session id's first 8
// characters (docs/agents/claude-code.md §4.5).
const jobShortLen = 8

func loadJobIndex(root string) *jobIndex {
	ix := &jobIndex{root: root}
	ents, err := os.ReadDir(filepath.Join(root, "jobs"))
	if err != nil {
		return ix
	}
	for _, e := range ents {
		if e.IsDir() && len(e.Name()) == jobShortLen {
			if ix.shorts == nil {
				ix.shorts = map[string]bool{}
			}
			ix.shorts[e.Name()] = true
		}
	}
	return ix
}

// of returns the job record of session id, or nil when it never ran in the
// background (or the record names another session).
func (ix *jobIndex) of(id string) *jobRecord {
	if ix == nil || len(id) < jobShortLen || !ix.shorts[id[:jobShortLen]] {
		return nil
	}
	short := id[:jobShortLen]
	if j, ok := ix.read[short]; ok {
		if j == nil || j.SessionID != id {
			return nil
		}
		return j
	}
	if ix.read == nil {
		ix.read = map[string]*jobRecord{}
	}
	var j *jobRecord
	rel := filepath.Join("jobs", short, "state.json")
	if b, err := os.ReadFile(filepath.Join(ix.root, rel)); err == nil {
		var r jobRecord
		if json.Unmarshal(b, &r) == nil && r.SessionID != "" {
			r.File = filepath.ToSlash(rel)
			j = &r
		}
	}
	ix.read[short] = j
	if j == nil || j.SessionID != id {
		return nil
	}
	return j
}

// jobVerdictAge bounds how much older than the transcript a job record may be
// and still speak for the session: Claude writes both while stopping, but a
// session resumed later outside the daemon leaves an old record behind.
const jobVerdictAge = 60 * time.Second

// ended reports whether j says the job is over and is recent enough, relative
// to the transcript's last write, to describe the session's end.
func (j *jobRecord) ended(mtime time.Time) bool {
	if j == nil || (j.State != jobStopped && j.State != jobDone) {
		return false
	}
	u := j.updated()
	return !u.IsZero() && (mtime.IsZero() || !u.Before(mtime.Add(-jobVerdictAge)))
}

func (j *jobRecord) detail() string {
	d := fmt.Sprintf("%s: state %s", j.File, j.State)
	if j.UpdatedAt != "" {
		d += " at " + j.UpdatedAt
	}
	return d
}

// backgroundOf maps the sessions live registry entries of kind "bg" host to
// their short id.
func backgroundOf(regs []regCheck) map[string]string {
	var out map[string]string
	for i := range regs {
		r := &regs[i]
		if r.Verdict == regLive && r.Kind == "bg" {
			if out == nil {
				out = map[string]string{}
			}
			short := r.JobID
			if short == "" && len(r.SessionID) >= jobShortLen {
				short = r.SessionID[:jobShortLen]
			}
			out[r.SessionID] = short
		}
	}
	return out
}

// markBackground sets kind and job_id on a session Claude's daemon hosts or
// hosted: a live "bg" registry entry, or a job record.
func markBackground(s *discover.Session, live map[string]string, j *jobRecord) {
	if short, ok := live[s.ID]; ok {
		s.Kind, s.JobID = KindBackground, short
		return
	}
	if j != nil {
		s.Kind, s.JobID = KindBackground, j.Short
		if s.JobID == "" {
			s.JobID = s.ID[:jobShortLen]
		}
	}
}

// KindBackground is discover.Session.Kind for a session Claude's daemon hosts.
const KindBackground = "background"

// DaemonStatus reads <root>/daemon.status.json and checks its supervisor
// (Claude's daemon, docs/agents/claude-code.md §4.5) against the process table by PID and
// start ticks. alive is false with a reason when there is no daemon to ask.
func DaemonStatus(root string, procs proc.Table) (alive bool, why string) {
	b, err := os.ReadFile(filepath.Join(root, "daemon.status.json"))
	if err != nil {
		return false, "Claude's daemon has no daemon.status.json"
	}
	var st struct {
		PID   int             `json:"supervisorPid"`
		Start json.RawMessage `json:"supervisorProcStart"`
	}
	if json.Unmarshal(b, &st) != nil || st.PID <= 0 {
		return false, "daemon.status.json names no daemon"
	}
	if procs == nil || !procs.Available() {
		return true, "" // cannot tell: let Claude answer
	}
	p, ok := procs.Get(st.PID)
	if !ok {
		return false, fmt.Sprintf("Claude's daemon (pid %d) is not running", st.PID)
	}
	if want, ok := procStartOf(st.Start); ok && want != p.StartTicks {
		return false, fmt.Sprintf("Claude's daemon (pid %d) is not running (the pid was reused)", st.PID)
	}
	return true, ""
}

// endedSince reports whether the job record says the job ended (stopped or
// done) after a process that started at startMs (epoch ms) began: that process
// is the job's own, on its way out. `claude stop` writes the record about
// 0.5 s before the process exits (docs/agents/claude-code.md §4.5).
func (j *jobRecord) endedSince(startMs int64) bool {
	if j == nil || startMs == 0 || (j.State != jobStopped && j.State != jobDone) {
		return false
	}
	u := j.updated()
	return !u.IsZero() && u.UnixMilli() >= startMs
}

// exiting is the verdict for a job's process that Claude has already recorded
// as ended: the job is over, the process is on its way out.
func (j *jobRecord) exiting(pid int) discover.Verdict {
	return discover.Verdict{Status: discover.StatusStopped, Evidence: discover.EvidenceJobRecord,
		Detail: fmt.Sprintf("%s; pid %d is exiting", j.detail(), pid)}
}
