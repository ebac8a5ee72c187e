package discover

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/proc"
)

// Signal is one thing `status --explain` looked at for a session and what it
// said, found or not: the answer to "why does it say that?" lists them all.
type Signal struct {
	// Source names the signal: launch-record, registry, argv, lock, process,
	// last-record, gateway.
	Source string `json:"source"`
	Found  bool   `json:"found"`
	Says   string `json:"says"`
	// Evidence is the evidence label this signal gives a status when it decides
	// one (Session.Evidence); "" when it never decides on its own.
	Evidence string `json:"evidence,omitempty"`
	// Decides marks the signals the verdict rests on.
	Decides bool `json:"decides,omitempty"`
}

// Explanation is `status --explain`: the verdict, why it won, and every signal
// considered.
type Explanation struct {
	Status        string   `json:"status"`
	Evidence      string   `json:"evidence"`
	Detail        string   `json:"evidence_detail,omitempty"`
	BlockedReason string   `json:"blocked_reason,omitempty"`
	Inferred      bool     `json:"inferred,omitempty"`
	Why           []string `json:"why"`
	Signals       []Signal `json:"signals"`
}

// evidenceRank is the order of strength README "How status is decided" gives.
var evidenceRank = []string{EvidenceLaunchRecord, EvidenceRegistry, EvidenceArgv, EvidenceServer, EvidenceProcess,
	EvidenceStaleRegistry, EvidenceJobRecord, EvidenceGateway, EvidenceTranscript, EvidenceNone}

// Explain gathers every signal behind s's status: agentctl's launch records, the
// adapter's own (when it is an Explainer), the process the session is tied to
// and the last conversation record; then says why the verdict won.
func Explain(ctx context.Context, env *Env, a Adapter, s Session) Explanation {
	v := VerdictOf(&s)
	x := Explanation{Status: v.Status, Evidence: v.Evidence, Detail: v.Detail, BlockedReason: v.Blocked, Inferred: v.Inferred}
	x.Signals = append(x.Signals, launchSignals(env, s)...)
	if ex, ok := a.(Explainer); ok && a != nil {
		x.Signals = append(x.Signals, ex.Explain(ctx, env, s)...)
	}
	x.Signals = append(x.Signals, processSignal(env, s))
	if a != nil {
		x.Signals = append(x.Signals, lastRecordSignal(ctx, env, a, s))
	}
	decided := false
	for i := range x.Signals {
		g := &x.Signals[i]
		g.Decides = g.Found && g.Evidence != "" && g.Evidence == v.Evidence
		decided = decided || g.Decides
	}
	if !decided && v.Evidence != "" && v.Evidence != EvidenceNone {
		// An adapter without its own signals (a gateway's or a server's answer, a
		// process inference): the verdict's evidence is the signal.
		x.Signals = append(x.Signals, Signal{Source: v.Evidence, Found: true, Says: v.Detail, Evidence: v.Evidence, Decides: true})
	}
	x.Why = why(v, x.Signals)
	return x
}

// launchSignals are agentctl's launch records naming the session, each checked
// by the one liveness rule, or one "not found" signal.
func launchSignals(env *Env, s Session) []Signal {
	var out []Signal
	for _, l := range env.Launches {
		if l.CurrentSessionID() != s.ID || l.Adapter != s.Adapter {
			continue
		}
		var says string
		if env.Procs == nil {
			says = fmt.Sprintf("launch %s: no process table to check pid %d", l.ID, l.PID)
		} else {
			v := proc.Check(env.Procs, l.Agent())
			state := "not alive"
			if v.Alive {
				state = "alive"
			} else if !v.Known {
				state = "unknown"
			}
			says = fmt.Sprintf("launch %s: agent %s (%s)", l.ID, state, v.Detail)
		}
		if l.ExitCode != nil {
			says += fmt.Sprintf("; exit code %d", *l.ExitCode)
		}
		if l.StopRequested != nil {
			says += "; stop requested by agentctl"
		}
		if l.Failure != "" {
			says += "; " + l.Failure
		}
		out = append(out, Signal{Source: "launch-record", Found: true, Says: says, Evidence: EvidenceLaunchRecord})
	}
	if len(out) == 0 {
		out = append(out, Signal{Source: "launch-record", Evidence: EvidenceLaunchRecord, Says: "agentctl did not launch this session (no launch record names it)"})
	}
	return out
}

// processSignal is the process the verdict ties the session to, looked up again
// in the table.
func processSignal(env *Env, s Session) Signal {
	g := Signal{Source: "process", Evidence: EvidenceProcess}
	switch {
	case env.Procs == nil || !env.Procs.Available():
		g.Says = "no process table (/proc): liveness cannot be checked"
	case s.PID <= 0:
		g.Says = "no live process is tied to the session"
	default:
		p, ok := env.Procs.Get(s.PID)
		if !ok {
			g.Says = fmt.Sprintf("pid %d is not in the process table", s.PID)
			break
		}
		g.Found = true
		g.Says = fmt.Sprintf("pid %d (%s)", p.PID, p.Comm)
		if argv, err := env.Procs.Argv(p.PID); err == nil && len(argv) > 0 {
			g.Says += ": " + OneLine(strings.Join(argv, " "), 120)
		}
		if st, ok := env.Procs.StartTime(p.PID); ok {
			g.Says += ", started " + st.UTC().Format(time.RFC3339)
		}
	}
	return g
}

// lastRecordSignal is the session's last conversation item, as peek shows it:
// the turn state the sub-state (running, idle, waiting) and blocked rest on.
func lastRecordSignal(ctx context.Context, env *Env, a Adapter, s Session) Signal {
	g := Signal{Source: "last-record", Evidence: EvidenceTranscript}
	msgs, err := a.Peek(ctx, env, s, 1)
	switch {
	case err != nil:
		g.Says = "cannot read the conversation: " + err.Error()
		return g
	case len(msgs) == 0:
		g.Says = "no conversation record yet"
		return g
	}
	m := msgs[len(msgs)-1]
	g.Found = true
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %s", m.Kind, m.TS.UTC().Format(time.RFC3339))
	if m.IsError {
		b.WriteString(" (error)")
	}
	if t := OneLine(m.Text, 100); t != "" {
		fmt.Fprintf(&b, ": %q", t)
	}
	for _, t := range m.Tools {
		switch {
		case !t.HasResult && !t.Interrupted:
			fmt.Fprintf(&b, "; tool %s has no result yet", t.Name)
		case t.IsError:
			fmt.Fprintf(&b, "; tool %s failed", t.Name)
		default:
			fmt.Fprintf(&b, "; tool %s answered", t.Name)
		}
	}
	g.Says = b.String()
	return g
}

// evidenceWhy is what each kind of evidence proves, by what the verdict says
// of the session: alive (running, idle, waiting), ended (stopped, failed) or
// unknown. A kind with no words for a class gets verdictWhy's plain ones (a
// launch record's depend on more than that: why says them).
var evidenceWhy = map[string]map[string]string{
	EvidenceRegistry: {
		classAlive:   "the agent's own record names a live writer of this session (registry entry or lock holder) whose identity is verified: proof, outranked only by a live launch record",
		classEnded:   "the agent's own record says this session has ended (e.g. its process moved on to a newer session)",
		classUnknown: "the agent's own record names a writer of this session, but its identity cannot be verified from here (another PID namespace, or nothing to check it against): unknown, neither alive nor ended is proven",
	},
	EvidenceArgv: {
		classAlive: "a live agent process names this session in its arguments (--resume / --session-id): proof, though no registry entry was found",
	},
	EvidenceServer: {
		classAlive: "the agent's own server (opencode serve or TUI), asked over loopback HTTP, reports the session busy or waiting on the user: exact",
	},
	EvidenceProcess: {
		classAlive:   "no record proves a live writer; a live agent process matched by working directory and start time is taken to host it (inferred)",
		classUnknown: "live agent processes may host this session, but none can be tied to it alone (several candidates): unknown, never a guess",
	},
	EvidenceStaleRegistry: {
		classEnded: "the agent's registry entry names a process that is gone without the clean exit that removes it: the agent died (failed)",
	},
	EvidenceJobRecord: {
		classEnded: "the agent's own record of the background job says it has ended",
	},
	EvidenceGateway: {
		classAlive:   "the OpenClaw gateway, which runs the session, reports its state itself",
		classEnded:   "the OpenClaw gateway, which runs the session, reports its state itself",
		classUnknown: "the OpenClaw gateway runs the session, but its answer does not say which state it is in: unknown",
	},
	EvidenceTranscript: {
		classEnded:   "no live process hosts the session: the last turn recorded decides stopped or failed",
		classUnknown: "no live process was found, yet the transcript does not settle it (it ends mid-turn and was written moments ago, or its last record is of a kind not known here): unknown, never a guess",
	},
	EvidenceNone: {
		classEnded:   "no live process hosts the session and it recorded nothing that says otherwise",
		classUnknown: "no evidence either way (no process table, or nothing recorded): the status says so instead of guessing",
	},
}

// The classes of status evidenceWhy words differ by.
const (
	classAlive   = "alive"
	classEnded   = "ended"
	classUnknown = "unknown"
)

func statusClass(status string) string {
	switch {
	case status == StatusUnknown:
		return classUnknown
	case Alive(status):
		return classAlive
	}
	return classEnded
}

// verdictWhy is the plain words for a verdict evidenceWhy has none for.
func verdictWhy(v Verdict) string {
	return fmt.Sprintf("the status (%s) rests on %s", v.Status, v.Evidence)
}

// statusWhy is where a live sub-state comes from.
var statusWhy = map[string]string{
	StatusWaiting: "waiting: the agent asks the user (permission prompt, approval or question) — from the record named in the evidence detail",
	StatusIdle:    "idle: the process lives and its latest turn is finished",
	StatusRunning: "running: the process lives and a turn is in progress (or a one-shot run has not exited)",
}

// why says in words why the verdict won: what its evidence proves, which
// stronger signals were looked for and not found (those of signals, the ones
// actually looked at), and where the sub-state and the blocked reason come from.
func why(v Verdict, signals []Signal) []string {
	var out []string
	switch v.Evidence {
	case EvidenceLaunchRecord:
		switch statusClass(v.Status) {
		case classAlive:
			out = append(out, "agentctl launched it and the launch record's PID, start time and boot id match a live process: the strongest proof, it outranks every agent file")
		case classUnknown:
			out = append(out, "agentctl launched it but there is no process table to check the launch record's PID: unknown, never a guess")
		default:
			out = append(out, "agentctl launched it and the launch record's process is gone: its exit code and any stop agentctl made decide stopped or failed (an agent's own proof of a live process would have outranked it)")
		}
	case "":
	default:
		if w := evidenceWhy[v.Evidence][statusClass(v.Status)]; w != "" {
			out = append(out, w)
		} else {
			out = append(out, verdictWhy(v))
		}
	}
	if i := rankOf(v.Evidence); i > 0 {
		var missed []string
		seen := map[string]bool{}
		for _, g := range signals {
			if j := rankOf(g.Evidence); !g.Found && j >= 0 && j < i && !seen[g.Source] {
				seen[g.Source] = true
				missed = append(missed, g.Source)
			}
		}
		if len(missed) > 0 {
			out = append(out, "stronger evidence was looked for first and not found: "+strings.Join(missed, ", "))
		}
	}
	if w, ok := statusWhy[v.Status]; ok {
		out = append(out, w)
	}
	if v.Inferred {
		out = append(out, "inferred: a rule of thumb, not a record, gave this answer")
	}
	if v.Blocked != "" {
		out = append(out, fmt.Sprintf("blocked on %s: the latest turn's recorded error names it (%s); a turn retried live would be running instead",
			v.Blocked, BlockedWhy(v.Blocked)))
	}
	return out
}

func rankOf(ev string) int {
	for i, e := range evidenceRank {
		if e == ev {
			return i
		}
	}
	return -1
}

// BlockedWhy is what a blocked reason means, in a few words.
func BlockedWhy(reason string) string {
	switch reason {
	case BlockedQuota:
		return "quota, usage or rate limit exhausted"
	case BlockedAuth:
		return "login or API key refused"
	case BlockedAPIErrors:
		return "the provider's API kept failing, turn after turn"
	}
	return reason
}
