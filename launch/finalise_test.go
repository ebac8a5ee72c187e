package launch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// FinaliseDead with a fake process table: it leaves alone what has a live owner
// and closes what has none, exactly once.
func TestFinaliseDeadOwnership(t *testing.T) {
	d := testDeps(t)
	alive := map[int]uint64{10: 100, 20: 200}
	d.Store.Procs = proc.Starts(alive)
	d.Procs = proc.Starts(alive)
	now := time.Now().UTC()
	recs := []meta.Launch{
		{ID: "agent-alive", Adapter: "claude-code", PID: 10, StartTicks: 100, LaunchedAt: now},
		{ID: "supervisor-alive", Adapter: "claude-code", PID: 11, StartTicks: 1, SupervisorPID: 20, SupervisorStart: 200, LaunchedAt: now},
		{ID: "recycled", Adapter: "claude-code", PID: 10, StartTicks: 999, LaunchedAt: now, ConfirmedAt: &now},
		{ID: "never-started", Adapter: "claude-code", LaunchedAt: now, Log: "/nonexistent.log"},
		{ID: "done", Adapter: "claude-code", PID: 12, StartTicks: 1, LaunchedAt: now, FinalisedAt: &now, EndedAt: &now},
	}
	d.Store.UpdateLaunches(func(l *meta.Launches) (bool, error) { l.Records = recs; return true, nil })
	done, err := d.FinaliseDead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(done, ",") != "recycled,never-started" {
		t.Errorf("finalised %v, want recycled and never-started", done)
	}
	got, _ := d.Store.ReadLaunches()
	by := map[string]meta.Launch{}
	for _, r := range got {
		by[r.ID] = r
	}
	if by["agent-alive"].FinalisedAt != nil || by["supervisor-alive"].FinalisedAt != nil {
		t.Error("finalised a launch with a live owner")
	}
	if r := by["recycled"]; r.ExitCode != nil || r.EndedAt == nil || !strings.HasPrefix(r.Failure, "crashed") {
		t.Errorf("recycled: exit %v ended %v failure %q", r.ExitCode, r.EndedAt, r.Failure)
	}
	if r := by["never-started"]; !strings.HasPrefix(r.Failure, "aborted") {
		t.Errorf("never-started: failure %q", r.Failure)
	}
	if again, _ := d.FinaliseDead(context.Background()); len(again) != 0 {
		t.Errorf("second pass finalised %v", again)
	}
}
