package launch

import (
	"context"
	"os"
	"path/filepath"
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

// The slow half of a lazy finalisation goes to Detach; when the detached
// process never does it (it died after the claim), the next pass — here the
// inline one of sweep — does, once. A holder that died while the hook ran leaves
// the hook marked interrupted, not run twice; the webhook still goes out once.
func TestFinaliseHandoffSurvivesADeadFinaliser(t *testing.T) {
	rcv := newReceiver(t, "")
	d := testDeps(t)
	const livePID, liveStart, deadPID = 30, 300, 31
	d.Store.Procs = proc.Starts{livePID: liveStart}
	d.Procs = proc.Starts{}
	dir := t.TempDir()
	hookOut := filepath.Join(dir, "hook.out")
	now := time.Now().UTC()
	hook := "echo $AGENTCTL_LAUNCH_ID >> " + hookOut
	rec := func(id string) meta.Launch {
		return meta.Launch{ID: id, Adapter: "claude-code", SessionID: "s-" + id, PID: 12, StartTicks: 1, LaunchedAt: now,
			ConfirmedAt: &now, Cwd: dir, Log: filepath.Join(dir, id+".log"), OnComplete: hook, WebhookURL: rcv.srv.URL}
	}
	died := rec("died-after-claim")
	inHook := rec("died-in-hook")
	inHook.FinalisedAt, inHook.EndedAt = &now, &now
	inHook.Ending = &meta.Ending{PID: deadPID, Start: 1, HookStartedAt: &now}
	busy := rec("held-by-live")
	busy.FinalisedAt, busy.EndedAt = &now, &now
	busy.Ending = &meta.Ending{PID: livePID, Start: liveStart}
	d.Store.UpdateLaunches(func(l *meta.Launches) (bool, error) {
		l.Records = []meta.Launch{died, inHook, busy}
		return true, nil
	})

	var handed []string
	d.Detach = func(r *meta.Launch) error { handed = append(handed, r.ID); return nil } // and then dies
	done, err := d.FinaliseDead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(done, ",") != "died-after-claim" || strings.Join(handed, ",") != "died-after-claim,died-in-hook" {
		t.Fatalf("finalised %v, handed off %v", done, handed)
	}
	if _, err := os.Stat(hookOut); err == nil || rcv.count() != 0 {
		t.Fatalf("a reading pass ran the slow half itself (hook file: %v, %d webhooks)", err, rcv.count())
	}

	d.Detach = nil // sweep
	if _, err := d.FinaliseDead(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.FinaliseDead(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, hookOut); got != "died-after-claim\n" {
		t.Errorf("on-complete ran %q; want once, for died-after-claim only", got)
	}
	if rcv.count() != 2 {
		t.Errorf("%d webhooks, want one each for the two dead holders", rcv.count())
	}
	by := map[string]meta.Launch{}
	recs, _ := d.Store.ReadLaunches()
	for _, r := range recs {
		by[r.ID] = r
	}
	if r := by["died-after-claim"]; r.OnCompleteResult != "ok" || r.Ending == nil || r.Ending.DoneAt == nil || r.NotifiedAt == nil {
		t.Errorf("died-after-claim: hook %q ending %+v notified %v", r.OnCompleteResult, r.Ending, r.NotifiedAt)
	}
	if r := by["died-in-hook"]; !strings.HasPrefix(r.OnCompleteResult, "interrupted") || r.Ending.DoneAt == nil || r.NotifiedAt == nil {
		t.Errorf("died-in-hook: hook %q ending %+v notified %v", r.OnCompleteResult, r.Ending, r.NotifiedAt)
	}
	if r := by["held-by-live"]; r.Ending.DoneAt != nil || r.NotifiedAt != nil || r.OnCompleteResult != "" {
		t.Errorf("took the slow half from a live holder: %+v", r)
	}
}
