package discover

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// peekOnly is an adapter that only answers Peek, with fixed messages.
type peekOnly struct{ msgs []Message }

func (peekOnly) Name() string                                                  { return "fake" }
func (peekOnly) Discover(context.Context, *Env) ([]Session, error)             { return nil, nil }
func (p peekOnly) Peek(context.Context, *Env, Session, int) ([]Message, error) { return p.msgs, nil }

// A live launch record outranks everything: it is listed, checked with the one
// liveness rule, marked as deciding, and the process and last record are shown.
func TestExplainLaunchRecord(t *testing.T) {
	ts := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	env := &Env{
		Procs: &proc.Fake{Procs: []proc.Process{{PID: 42, Comm: "claude", StartTicks: 9}},
			Args: map[int][]string{42: {"claude", "-p", "hi"}}},
		Launches: []meta.Launch{{ID: "l-1", Adapter: "fake", SessionID: "s1", PID: 42, StartTicks: 9}},
	}
	s := Session{ID: "s1", Adapter: "fake", Status: StatusWaiting, Evidence: EvidenceLaunchRecord, PID: 42}
	a := peekOnly{[]Message{{TS: ts, Kind: "assistant", Tools: []ToolCall{{Name: "Bash"}}}}}
	x := Explain(context.Background(), env, a, s)
	got := map[string]bool{}
	for _, g := range x.Signals {
		got[g.Source] = g.Decides
	}
	if diff := cmp.Diff(map[string]bool{"launch-record": true, "process": false, "last-record": false}, got); diff != "" {
		t.Errorf("signals (source: decides) -want +got:\n%s\n%+v", diff, x.Signals)
	}
	if want := "launch l-1: agent alive (pid 42 start_ticks=9 matches)"; x.Signals[0].Says != want {
		t.Errorf("launch signal %q, want %q", x.Signals[0].Says, want)
	}
	if want := "pid 42 (claude): claude -p hi"; x.Signals[1].Says != want {
		t.Errorf("process signal %q, want %q", x.Signals[1].Says, want)
	}
	if want := "assistant at 2026-11-25T07:00:00Z; tool Bash has no result yet"; x.Signals[2].Says != want {
		t.Errorf("last record %q, want %q", x.Signals[2].Says, want)
	}
	why := strings.Join(x.Why, "\n")
	for _, w := range []string{"strongest proof", "waiting: the agent asks the user"} {
		if !strings.Contains(why, w) {
			t.Errorf("why lacks %q:\n%s", w, why)
		}
	}
}

// A dead launch record does not decide a status the agent's own registry
// proved; each blocked reason is explained.
func TestExplainDeadLaunchAndBlocked(t *testing.T) {
	code := 1
	env := &Env{
		Procs:    &proc.Fake{},
		Launches: []meta.Launch{{ID: "l-2", Adapter: "fake", SessionID: "s2", PID: 7, StartTicks: 1, ExitCode: &code}},
	}
	for _, reason := range []string{BlockedQuota, BlockedAuth, BlockedAPIErrors} {
		s := Session{ID: "s2", Adapter: "fake", Status: StatusFailed, Evidence: EvidenceTranscript, BlockedReason: reason}
		x := Explain(context.Background(), env, peekOnly{}, s)
		if g := x.Signals[0]; g.Source != "launch-record" || !g.Found || g.Decides || g.Says != "launch l-2: agent not alive (pid 7 is gone); exit code 1" {
			t.Errorf("launch signal %+v", g)
		}
		var g Signal
		for _, sg := range x.Signals {
			if sg.Source == "last-record" {
				g = sg
			}
		}
		if g.Found || g.Says != "no conversation record yet" {
			t.Errorf("last record signal %+v", g)
		}
		why := strings.Join(x.Why, "\n")
		if !strings.Contains(why, "blocked on "+reason+": ") || !strings.Contains(why, BlockedWhy(reason)) || BlockedWhy(reason) == reason {
			t.Errorf("%s: why:\n%s", reason, why)
		}
	}
}

// An adapter without signals of its own (OpenCode's server, OpenClaw's
// gateway): the verdict's evidence is listed as the deciding signal.
func TestExplainVerdictEvidenceAsSignal(t *testing.T) {
	s := Session{ID: "ses_1", Adapter: "fake", Status: StatusWaiting, Evidence: EvidenceServer,
		EvidenceDetail: "opencode server 127.0.0.1:4096 (pid 9): permission per_1 asks to run bash \"x\""}
	x := Explain(context.Background(), &Env{Procs: &proc.Fake{}}, peekOnly{}, s)
	last := x.Signals[len(x.Signals)-1]
	if last.Source != EvidenceServer || !last.Found || !last.Decides || last.Says != s.EvidenceDetail {
		t.Errorf("last signal %+v, want the server's answer deciding", last)
	}
	if !strings.Contains(strings.Join(x.Why, "\n"), "asked over loopback HTTP") {
		t.Errorf("why does not explain server evidence: %q", x.Why)
	}
}

// explaining is an adapter with its own signals (an Explainer) and a last
// record.
type explaining struct {
	peekOnly
	signals []Signal
}

func (x explaining) Explain(context.Context, *Env, Session) []Signal { return x.signals }

// TestExplainMatchesTheVerdict: for every kind of evidence, and each class of
// status it gives, the starred signals are the found ones of the verdict's
// evidence, the first reason says what the verdict says (an unknown status is
// never called proof), and the "looked for first and not found" list names only
// signals that were looked at and not found (issue 37 item 7).
func TestExplainMatchesTheVerdict(t *testing.T) {
	ts := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	last := []Message{{TS: ts, Kind: "assistant", Text: "done"}}
	nf := func(source, ev string) Signal { return Signal{Source: source, Evidence: ev, Says: "not here"} }
	found := func(source, ev string) Signal { return Signal{Source: source, Evidence: ev, Found: true, Says: "here"} }
	claudeLike := func(reg Signal) []Signal {
		return []Signal{reg, nf("argv", EvidenceArgv), nf("process-scan", EvidenceProcess)}
	}
	live := &proc.Fake{Procs: []proc.Process{{PID: 42, Comm: "agent", StartTicks: 9}}}
	tests := []struct {
		name      string
		s         Session
		launches  []meta.Launch
		signals   []Signal
		msgs      []Message
		starred   []string
		first     string // the first reason starts so
		notFound  string // "" when there is no such line
		forbidden []string
	}{
		{name: "launch-record alive", s: Session{Status: StatusRunning, Evidence: EvidenceLaunchRecord, PID: 42},
			launches: []meta.Launch{{ID: "l-1", Adapter: "fake", SessionID: "s", PID: 42, StartTicks: 9}},
			starred:  []string{"launch-record"}, first: "agentctl launched it and the launch record's PID, start time and boot id match a live process"},
		{name: "launch-record ended", s: Session{Status: StatusStopped, Evidence: EvidenceLaunchRecord},
			launches: []meta.Launch{{ID: "l-1", Adapter: "fake", SessionID: "s", PID: 7, StartTicks: 1}},
			starred:  []string{"launch-record"}, first: "agentctl launched it and the launch record's process is gone"},
		{name: "registry alive", s: Session{Status: StatusIdle, Evidence: EvidenceRegistry, PID: 42},
			signals: claudeLike(found("registry", EvidenceRegistry)), msgs: last,
			starred: []string{"registry"}, first: "the agent's own record names a live writer of this session", notFound: "launch-record"},
		{name: "registry unknown (another PID namespace)", s: Session{Status: StatusUnknown, Evidence: EvidenceRegistry, EvidenceDetail: "sessions/1.json: foreign PID namespace"},
			signals: claudeLike(found("registry", EvidenceRegistry)), msgs: last,
			starred: []string{"registry"}, first: "the agent's own record names a writer of this session, but its identity cannot be verified from here",
			notFound: "launch-record", forbidden: []string{"verified: proof", "proof"}},
		{name: "registry ended (superseded)", s: Session{Status: StatusStopped, Evidence: EvidenceRegistry, EvidenceDetail: "superseded by x"},
			signals: claudeLike(found("registry", EvidenceRegistry)), msgs: last,
			starred: []string{"registry"}, first: "the agent's own record says this session has ended", notFound: "launch-record", forbidden: []string{"live writer"}},
		{name: "argv", s: Session{Status: StatusRunning, Evidence: EvidenceArgv, PID: 42},
			signals: []Signal{nf("registry", EvidenceRegistry), found("argv", EvidenceArgv)},
			starred: []string{"argv"}, first: "a live agent process names this session in its arguments", notFound: "launch-record, registry"},
		{name: "server", s: Session{Status: StatusWaiting, Evidence: EvidenceServer, EvidenceDetail: "opencode server asks"},
			starred: []string{"server"}, first: "the agent's own server (opencode serve or TUI)", notFound: "launch-record"},
		{name: "process inferred", s: Session{Status: StatusRunning, Evidence: EvidenceProcess, PID: 42, Inferred: true},
			signals: claudeLike(nf("registry", EvidenceRegistry))[:2:2], msgs: last,
			starred: []string{"process"}, first: "no record proves a live writer; a live agent process matched", notFound: "launch-record, registry, argv"},
		{name: "process ambiguous", s: Session{Status: StatusUnknown, Evidence: EvidenceProcess, Inferred: true},
			signals: []Signal{nf("registry", EvidenceRegistry), nf("argv", EvidenceArgv), found("process-scan", EvidenceProcess)},
			starred: []string{"process-scan"}, first: "live agent processes may host this session, but none can be tied to it alone",
			notFound: "launch-record, registry, argv"},
		{name: "stale registry", s: Session{Status: StatusFailed, Evidence: EvidenceStaleRegistry, EvidenceDetail: "sessions/9.json: pid 9 is gone"},
			signals: claudeLike(found("registry", EvidenceStaleRegistry)), msgs: last,
			starred: []string{"registry"}, first: "the agent's registry entry names a process that is gone",
			notFound: "launch-record, argv, process-scan, process", forbidden: []string{"server", "found: launch-record, registry"}},
		{name: "job record", s: Session{Status: StatusStopped, Evidence: EvidenceJobRecord, EvidenceDetail: "job abc stopped"},
			signals: claudeLike(nf("registry", EvidenceRegistry)), msgs: last,
			starred: []string{"job-record"}, first: "the agent's own record of the background job says it has ended",
			notFound: "launch-record, registry, argv, process-scan, process"},
		{name: "gateway", s: Session{Status: StatusIdle, Evidence: EvidenceGateway, EvidenceDetail: "gateway row idle"},
			starred: []string{"gateway"}, first: "the OpenClaw gateway, which runs the session, reports its state itself", notFound: "launch-record, process"},
		{name: "gateway unknown", s: Session{Status: StatusUnknown, Evidence: EvidenceGateway, EvidenceDetail: "gateway row has neither"},
			starred: []string{"gateway"}, first: "the OpenClaw gateway runs the session, but its answer does not say", notFound: "launch-record, process"},
		{name: "transcript ended", s: Session{Status: StatusStopped, Evidence: EvidenceTranscript},
			signals: claudeLike(nf("registry", EvidenceRegistry)), msgs: last,
			starred: []string{"last-record"}, first: "no live process hosts the session: the last turn recorded decides",
			notFound: "launch-record, registry, argv, process-scan, process"},
		{name: "transcript unknown", s: Session{Status: StatusUnknown, Evidence: EvidenceTranscript, EvidenceDetail: "mid-turn, written 3s ago"},
			signals: claudeLike(nf("registry", EvidenceRegistry)), msgs: last,
			starred: []string{"last-record"}, first: "no live process was found, yet the transcript does not settle it",
			notFound: "launch-record, registry, argv, process-scan, process", forbidden: []string{"decides stopped or failed"}},
		{name: "none unknown", s: Session{Status: StatusUnknown, Evidence: EvidenceNone},
			signals: claudeLike(nf("registry", EvidenceRegistry)),
			first:   "no evidence either way", notFound: "launch-record, registry, argv, process-scan, process, last-record"},
		{name: "none ended", s: Session{Status: StatusStopped, Evidence: EvidenceNone},
			signals: claudeLike(nf("registry", EvidenceRegistry)),
			first:   "no live process hosts the session and it recorded nothing", notFound: "launch-record, registry, argv, process-scan, process, last-record",
			forbidden: []string{"either way"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.ID, tt.s.Adapter = "s", "fake"
			env := &Env{Procs: live, Launches: tt.launches}
			x := Explain(context.Background(), env, explaining{peekOnly{tt.msgs}, tt.signals}, tt.s)
			var starred []string
			for _, g := range x.Signals {
				if g.Decides {
					starred = append(starred, g.Source)
					if !g.Found || g.Evidence != tt.s.Evidence {
						t.Errorf("starred signal %+v: want a found one of evidence %s", g, tt.s.Evidence)
					}
				}
			}
			if diff := cmp.Diff(tt.starred, starred); diff != "" {
				t.Errorf("starred signals (-want +got):\n%s\n%+v", diff, x.Signals)
			}
			if x.Status != tt.s.Status || x.Evidence != tt.s.Evidence {
				t.Errorf("explanation of %s/%s, want the verdict's %s/%s", x.Status, x.Evidence, tt.s.Status, tt.s.Evidence)
			}
			if len(x.Why) == 0 || !strings.HasPrefix(x.Why[0], tt.first) {
				t.Fatalf("first reason %q, want it to start %q", x.Why, tt.first)
			}
			const lead = "stronger evidence was looked for first and not found: "
			gotNF := ""
			for _, w := range x.Why {
				if strings.HasPrefix(w, lead) {
					gotNF = strings.TrimPrefix(w, lead)
				}
			}
			if gotNF != tt.notFound {
				t.Errorf("not found list %q, want %q", gotNF, tt.notFound)
			}
			why := strings.Join(x.Why, "\n")
			for _, f := range tt.forbidden {
				if strings.Contains(why, f) {
					t.Errorf("why says %q, which the verdict does not:\n%s", f, why)
				}
			}
		})
	}
}
