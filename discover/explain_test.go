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
