package claude

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

func TestSubState(t *testing.T) {
	now := fixtureNow
	ms := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	agg := func(kind uint8, age time.Duration) *aggregate {
		return &aggregate{Last: turnTail{Kind: kind, TS: ms(age)}}
	}
	type want struct {
		Status, Detail string
		Inferred       bool
	}
	tests := []struct {
		name string
		in   liveInput
		want want
	}{
		{"registry busy", liveInput{RegStatus: "busy", Agg: agg(tailEnd, time.Hour)}, want{discover.StatusRunning, "", false}},
		{"registry idle", liveInput{RegStatus: "idle", Agg: agg(tailPrompt, 0)}, want{discover.StatusIdle, "", false}},
		{"registry waiting", liveInput{RegStatus: "waiting", WaitingFor: "permission prompt"}, want{discover.StatusWaiting, "permission prompt", false}},
		{"-p process", liveInput{Print: true, Agg: agg(tailEnd, time.Hour)}, want{discover.StatusRunning, "", false}},
		{"no transcript, TUI", liveInput{Entrypoint: "cli"}, want{discover.StatusIdle, "no prompt yet", false}},
		{"no transcript, -p", liveInput{Entrypoint: "sdk-cli"}, want{discover.StatusRunning, "", false}},
		{"end_turn", liveInput{Agg: agg(tailEnd, time.Second)}, want{discover.StatusIdle, "", false}},
		{"turn_duration after the reply", liveInput{Agg: &aggregate{Last: turnTail{Kind: tailToolResult, TS: ms(3 * time.Second)}, LastTurnEnd: ms(2 * time.Second)}}, want{discover.StatusIdle, "", false}},
		{"prompt", liveInput{Agg: agg(tailPrompt, time.Hour)}, want{discover.StatusRunning, "", false}},
		{"tool result", liveInput{Agg: agg(tailToolResult, time.Hour)}, want{discover.StatusRunning, "", false}},
		{"tool_use, fresh", liveInput{Entrypoint: "cli", Agg: agg(tailToolUse, 10*time.Second)}, want{discover.StatusRunning, "", false}},
		{"tool_use, TUI, 2 min", liveInput{Entrypoint: "cli", Agg: agg(tailToolUse, 2*time.Minute)},
			want{discover.StatusWaiting, "tool call unanswered for 2m0s (inferred permission prompt)", true}},
		{"tool_use, -p, 2 min", liveInput{Entrypoint: "sdk-cli", Agg: agg(tailToolUse, 2*time.Minute)}, want{discover.StatusRunning, "", false}},
		{"tool_use, TUI, bypass", liveInput{Entrypoint: "cli", Agg: &aggregate{PermMode: "bypassPermissions", Last: turnTail{Kind: tailToolUse, TS: ms(2 * time.Minute)}}},
			want{discover.StatusRunning, "", false}},
		{"stop_reason null, fresh", liveInput{Agg: agg(tailOpen, 2*time.Second)}, want{discover.StatusRunning, "", false}},
		{"stop_reason null, old", liveInput{Agg: agg(tailOpen, 6*time.Second)}, want{discover.StatusIdle, "", false}},
		{"api error", liveInput{Agg: agg(tailAPIError, 0)}, want{discover.StatusIdle, "", false}},
		{"interrupted", liveInput{Agg: agg(tailInterrupted, 0)}, want{discover.StatusIdle, "", false}},
	}
	for _, tt := range tests {
		tt.in.Now = now
		st, d, inf := subState(tt.in)
		if diff := cmp.Diff(tt.want, want{st, d, inf}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestStatusNeverFromFileAge: transcripts written a second ago, no process.
// A finished turn is stopped; a mid-turn one is unknown (its writer may have
// exited a moment ago, or still run where /proc does not show it) while the
// registry says a Claude process started or exited in the last minute, else
// stopped; neither is ever running.
func TestStatusNeverFromFileAge(t *testing.T) {
	fresh := fixtureNow.Add(-time.Second)
	unknown := liveness{discover.StatusUnknown, discover.EvidenceTranscript, "transcript ends mid-turn and was written 1s ago, but no live claude process was found", false, 0}
	stopped := liveness{discover.StatusStopped, discover.EvidenceTranscript, "", false, 0}
	for _, tc := range []struct {
		name     string
		registry func(t *testing.T, home string)
		midTurn  liveness
	}{
		{"registry moved 30s ago", func(t *testing.T, home string) { registryMoved(t, home, fixtureNow.Add(-30*time.Second)) }, unknown},
		{"registry moved in the future", func(t *testing.T, home string) { registryMoved(t, home, fixtureNow.Add(time.Hour)) }, unknown},
		{"registry unchanged for 61s", func(t *testing.T, home string) { registryMoved(t, home, fixtureNow.Add(-61*time.Second)) }, stopped},
		{"no registry", func(t *testing.T, home string) {
			if err := os.RemoveAll(filepath.Join(home, ".claude", "sessions")); err != nil {
				t.Fatal(err)
			}
		}, stopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := copyHome(t)
			for _, rel := range []string{"-home-dev-webapp/" + idWebapp, "-home-dev-cli-tool/" + idTUI329} {
				if err := os.Chtimes(filepath.Join(home, ".claude/projects", rel+".jsonl"), fresh, fresh); err != nil {
					t.Fatal(err)
				}
			}
			tc.registry(t, home)
			env := newEnv(t, home, &proc.Fake{})
			got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
			want := map[string]liveness{idWebapp: stopped, idTUI329: tc.midTurn}
			for id, w := range want {
				if diff := cmp.Diff(w, livenessOf(got[id])); diff != "" {
					t.Errorf("%s (-want +got):\n%s", id[:8], diff)
				}
			}
			for _, s := range got {
				if s.Status == discover.StatusRunning || s.Status == discover.StatusIdle || s.Status == discover.StatusWaiting {
					t.Errorf("%s is %s without any live process", s.ID, s.Status)
				}
			}
		})
	}
}

// TestNoProcessTable: without /proc nothing is guessed.
func TestNoProcessTable(t *testing.T) {
	env := newEnv(t, copyHome(t), &proc.Fake{NoProcs: true})
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	for _, s := range got {
		if s.Status != discover.StatusUnknown || s.PID != 0 {
			t.Errorf("%s: %s pid %d, want unknown", s.ID, s.Status, s.PID)
		}
	}
	if s := got[idWebapp]; s.EvidenceDetail != "no process table (/proc) to check liveness" {
		t.Errorf("detail %q", s.EvidenceDetail)
	}
}

// TestEndedAt: a stopped session's ended_at is its last activity; a live one has
// none.
func TestEndedAt(t *testing.T) {
	env := newEnv(t, copyHome(t), &proc.Fake{Procs: []proc.Process{{PID: 14535, Comm: "claude", StartTicks: 25479}}})
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	if s := got[idWebapp]; s.EndedAt == nil || !s.EndedAt.Equal(*s.LastActivity) {
		t.Errorf("stopped session ended_at %v, want %v", s.EndedAt, s.LastActivity)
	}
	if s := got[idInfra]; s.EndedAt != nil {
		t.Errorf("running session has ended_at %v", s.EndedAt)
	}
}

// A real Claude Code 2.1.329 TUI transcript (e2e accuracy benchmark) whose last
// turn got 429s from the stub until Claude gave up: its last record is the
// assistant "API Error: Request rejected (429) · stub error 429 (scripted)"
// (isApiErrorMessage). While the TUI is up and its registry says idle, the
// session is idle and blocked on quota; while the registry says busy, running,
// not blocked; once the process is gone, failed and blocked.
func TestLiveTUIBlockedOnQuota(t *testing.T) {
	const id = "0ceea13f-ba64-4bf1-ba6f-196ddd0452ff"
	const rel = ".claude/projects/-home-dev-acc/" + id + ".jsonl"
	home := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata/quota", rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(home, rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, rel), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := discovertest.DiscoverAll(t, testAdapter(), newEnv(t, home, &proc.Fake{}).Env)[id]
	if s.Status != discover.StatusFailed || s.BlockedReason != discover.BlockedQuota {
		t.Errorf("no process: %s blocked_reason %q (%s); want failed, quota", s.Status, s.BlockedReason, s.EvidenceDetail)
	}
	live := &proc.Fake{Procs: []proc.Process{{PID: 4242, Comm: "claude", StartTicks: 4242}}}
	for status, want := range map[string][2]string{"idle": {discover.StatusIdle, discover.BlockedQuota}, "busy": {discover.StatusRunning, ""}} {
		writeRegistry(t, home, 4242, `{"pid":4242,"sessionId":"`+id+`","cwd":"/home/dev/acc","startedAt":1795601460000,"procStart":"4242","version":"2.1.329","kind":"interactive","entrypoint":"cli","status":"`+status+`"}`)
		s := discovertest.DiscoverAll(t, testAdapter(), newEnv(t, home, live).Env)[id]
		if s.Status != want[0] || s.BlockedReason != want[1] || s.Evidence != discover.EvidenceRegistry {
			t.Errorf("registry %s: %s blocked_reason %q (%s %s); want %s, %q", status, s.Status, s.BlockedReason, s.Evidence, s.EvidenceDetail, want[0], want[1])
		}
	}
}
