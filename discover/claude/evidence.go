package claude

import (
	"fmt"
	"sort"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// candidate is a session as the liveness rules see it.
type candidate struct {
	ID         string
	Cwd        string
	LastCwd    string
	LastMs     int64
	Mtime      time.Time
	Entrypoint string
	Agg        *aggregate // nil: registry-only, no transcript yet
	Job        *jobRecord // Claude's job record: a background session (nil: none)
}

// judge decides every session's status from the registry, the process table and
// the transcripts (docs/agents/claude-code.md §4.2, §4.3). Proof beats inference; a process proven to host
// one session never makes another one live.
// The result is parallel to cands.
func judge(cands []candidate, regs []regCheck, procs proc.Table, claudes []claudeProc, now time.Time) []discover.Verdict {
	out := map[string]discover.Verdict{} // sessions decided by live evidence, few
	byID := make(map[string]*candidate, len(cands))
	for i := range cands {
		byID[cands[i].ID] = &cands[i]
	}

	// Registry entries: proof, or a reason for failed/unknown.
	live := map[string]*regCheck{}
	livePID := map[int]string{}
	other := map[string]*regCheck{}
	for i := range regs {
		r := &regs[i]
		if r.Verdict == regLive {
			if _, dup := live[r.SessionID]; !dup {
				live[r.SessionID] = r
				livePID[r.PID] = r.SessionID
			}
			continue
		}
		if o, ok := other[r.SessionID]; !ok || r.StartedAt > o.StartedAt {
			other[r.SessionID] = r
		}
	}
	argvOf := map[int]args{}
	for _, p := range claudes {
		argvOf[p.PID] = p.Flags
	}
	for id, r := range live {
		a, ok := argvOf[r.PID]
		if !ok {
			if argv, err := procs.Argv(r.PID); err == nil && len(argv) > 0 {
				a = parseArgs(argv[1:])
			}
		}
		entry := r.Entrypoint
		var agg *aggregate
		if c := byID[id]; c != nil {
			agg = c.Agg
			if c.Entrypoint != "" && entry == "" {
				entry = c.Entrypoint
			}
		}
		in := liveInput{RegStatus: r.Status, WaitingFor: r.WaitingFor, Print: a.Print, Entrypoint: entry, Agg: agg, Now: now}
		d := r.Detail
		if c := byID[id]; c != nil && r.Kind == "bg" && c.Job != nil && c.Job.State == jobBlocked && r.Status != "waiting" {
			// Claude's daemon marks the job blocked as soon as a permission
			// prompt opens, before the registry says waiting (docs/agents/claude-code.md §4.5).
			in.RegStatus, in.WaitingFor = jobBlocked, "permission prompt"
			d += "; " + c.Job.File + ": state blocked"
		}
		st, detail, inf := subState(in)
		if detail != "" {
			d += "; " + detail
		}
		if st == discover.StatusIdle && r.Prompt > 0 && now.Sub(time.UnixMilli(r.Prompt)) < promptPendingAge {
			// Submitted, not registered yet (notePrompts): the turn has started.
			st, inf = discover.StatusRunning, true
			d += fmt.Sprintf("; history.jsonl has a prompt submitted %s after the entry's idle, not registered yet",
				time.UnixMilli(r.Prompt).Sub(time.UnixMilli(r.UpdatedAt)).Round(time.Millisecond))
		}
		if c := byID[id]; c != nil && r.Kind == "bg" && c.Job.endedSince(r.StartedAt) {
			out[id] = c.Job.exiting(r.PID)
			continue
		}
		out[id] = discover.Verdict{Status: st, Evidence: discover.EvidenceRegistry, Detail: d, Inferred: r.Inferred || inf, PID: r.PID,
			Blocked: liveBlocked(st, agg)}
	}

	// argv: a live claude naming a session with --resume/--session-id.
	superseded := map[string]string{}
	tied := tiedPIDs(regs, claudes)
	for _, p := range claudes {
		if p.Flags.Names == "" {
			continue
		}
		if host, ok := livePID[p.PID]; ok {
			if p.Flags.Names != host {
				superseded[p.Flags.Names] = host // /clear: the process moved on
			}
			continue
		}
		if _, done := out[p.Flags.Names]; done {
			continue
		}
		c := byID[p.Flags.Names]
		if c == nil {
			continue
		}
		if p.HasStart && c.Job.endedSince(p.StartMs) {
			// Claude removes the registry entry just before the process exits.
			out[p.Flags.Names] = c.Job.exiting(p.PID)
			continue
		}
		st, detail, inf := subState(liveInput{Print: p.Flags.Print, Entrypoint: c.Entrypoint, Agg: c.Agg, Now: now})
		d := fmt.Sprintf("pid %d argv names the session", p.PID)
		if detail != "" {
			d += "; " + detail
		}
		out[p.Flags.Names] = discover.Verdict{Status: st, Evidence: discover.EvidenceArgv, Detail: d, Inferred: inf, PID: p.PID,
			Blocked: liveBlocked(st, c.Agg)}
	}

	// Process scan: weak inference from cwd and timing, for processes not tied to
	// a session by proof or argv.
	for _, p := range claudes {
		if tied[p.PID] || !p.HasStart || p.Cwd == "" {
			continue
		}
		var hits []*candidate
		for i := range cands {
			c := &cands[i]
			if _, done := out[c.ID]; done || superseded[c.ID] != "" || c.Agg == nil {
				continue
			}
			if (c.Cwd == p.Cwd || c.LastCwd == p.Cwd) && c.LastMs >= p.StartMs-2000 {
				hits = append(hits, c)
			}
		}
		if len(hits) == 0 {
			continue
		}
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].LastMs > hits[j].LastMs })
		c := hits[0]
		st, detail, _ := subState(liveInput{Print: p.Flags.Print, Entrypoint: c.Entrypoint, Agg: c.Agg, Now: now})
		d := fmt.Sprintf("pid %d, cwd %s", p.PID, p.Cwd)
		if len(hits) > 1 {
			d += fmt.Sprintf(" (ambiguous: %d sessions there)", len(hits))
		}
		if detail != "" {
			d += "; " + detail
		}
		out[c.ID] = discover.Verdict{Status: st, Evidence: discover.EvidenceProcess, Detail: d, Inferred: true, PID: p.PID}
		for _, o := range hits[1:] {
			out[o.ID] = discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceProcess, Inferred: true,
				Detail: fmt.Sprintf("ambiguous: pid %d in %s may host this session or %s", p.PID, p.Cwd, c.ID)}
		}
	}

	// A live TUI registry process in the session's cwd, active after it started,
	// that now hosts another session: /clear moved it on (only the TUI has /clear).
	liveRegs := make([]*regCheck, 0, len(live))
	for _, r := range live {
		liveRegs = append(liveRegs, r)
	}
	sort.Slice(liveRegs, func(i, j int) bool { return liveRegs[i].StartedAt < liveRegs[j].StartedAt })
	for i := range cands {
		c := &cands[i]
		if _, done := out[c.ID]; done || superseded[c.ID] != "" || c.Agg == nil {
			continue
		}
		for _, r := range liveRegs {
			tui := r.Entrypoint == "cli" && (c.Entrypoint == "cli" || c.Entrypoint == "")
			if tui && r.SessionID != c.ID && r.StartedAt != 0 && (c.Cwd == r.Cwd || c.LastCwd == r.Cwd) && c.LastMs >= r.StartedAt-2000 {
				superseded[c.ID] = r.SessionID
				break
			}
		}
	}

	res := make([]discover.Verdict, len(cands))
	for i := range cands {
		c := &cands[i]
		if v, done := out[c.ID]; done {
			res[i] = v
			continue
		}
		res[i] = notLive(c, other[c.ID], superseded[c.ID], procs.Available(), now)
	}
	return res
}

// liveBlocked is the blocked reason of a live session at rest whose last
// conversation record is the API error its latest turn ended with (a TUI after
// Claude gave up retrying: "API Error: 429 …"), classified by its text
// (docs/agents/claude-code.md §4.3); "" otherwise.
func liveBlocked(status string, a *aggregate) string {
	if status != discover.StatusIdle || a == nil || a.Last.Kind != tailAPIError {
		return ""
	}
	return discover.BlockedBy(a.Last.Text)
}

// tiedPIDs are the claude processes tied to a session by proof: the PID of each
// session's first live registry entry, and every process whose argv names a
// session. The process scan leaves them alone.
func tiedPIDs(regs []regCheck, claudes []claudeProc) map[int]bool {
	tied := map[int]bool{}
	seen := map[string]bool{}
	for i := range regs {
		r := &regs[i]
		if r.Verdict == regLive && !seen[r.SessionID] {
			seen[r.SessionID] = true
			tied[r.PID] = true
		}
	}
	for _, p := range claudes {
		if p.Flags.Names != "" {
			tied[p.PID] = true
		}
	}
	return tied
}

// notLive is the status of a session no process is proven or inferred to host:
// stopped, failed on a failure signal, or unknown when the evidence is missing.
func notLive(c *candidate, reg *regCheck, supersededBy string, haveProcs bool, now time.Time) discover.Verdict {
	switch {
	case reg != nil && (reg.Verdict == regForeign || reg.Verdict == regUnknown):
		return discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceRegistry, Detail: reg.Detail}
	case !haveProcs:
		return discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceNone, Detail: "no process table (/proc) to check liveness"}
	case c.Job.ended(c.Mtime) && c.Job.State == jobStopped:
		// `claude stop <short>` (docs/agents/claude-code.md §4.5): Claude writes the transcript
		// mid-turn while stopping, and its record says what happened.
		return discover.Verdict{Status: discover.StatusStopped, Evidence: discover.EvidenceJobRecord, Detail: c.Job.detail()}
	case supersededBy != "":
		return discover.Verdict{Status: discover.StatusStopped, Evidence: discover.EvidenceRegistry, Detail: "superseded by " + supersededBy}
	case reg != nil:
		return discover.Verdict{Status: discover.StatusFailed, Evidence: discover.EvidenceStaleRegistry, Detail: reg.Detail}
	}
	a := c.Agg
	if a == nil {
		if c.Job.ended(c.Mtime) {
			return discover.Verdict{Status: discover.StatusStopped, Evidence: discover.EvidenceJobRecord, Detail: c.Job.detail()}
		}
		return discover.Verdict{Status: discover.StatusStopped, Evidence: discover.EvidenceNone}
	}
	jobDone := c.Job.ended(c.Mtime) // state done: the process is gone, nobody else writes
	if a.midTurn() && !jobDone {
		if age := now.Sub(c.Mtime); age < midTurnRecent {
			return discover.Verdict{Status: discover.StatusUnknown, Evidence: discover.EvidenceTranscript,
				Detail: fmt.Sprintf("transcript ends mid-turn and was written %s ago, but no live claude process was found", age.Round(time.Second))}
		}
	}
	if a.Last.Kind == tailAPIError && (a.LastTurnEnd == 0 || a.LastTurnEnd < a.Last.TS) {
		d := a.Last.Text
		if d == "" {
			d = "API error"
		}
		return discover.TranscriptVerdict(discover.OutcomeError, d)
	}
	if jobDone {
		return discover.Verdict{Status: discover.StatusStopped, Evidence: discover.EvidenceJobRecord, Detail: c.Job.detail()}
	}
	// No live process and no failure recorded (a recent mid-turn end was judged
	// unknown above): stopped, as the transcript tells.
	return discover.TranscriptVerdict(discover.OutcomeDone, "")
}
