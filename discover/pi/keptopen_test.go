package pi

import (
	"context"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// A pi that agentctl keeps open (launch --keep-open: RPC mode) outlives its
// turns like the TUI: a final leaf is idle, and the session is kind
// kept-open. The same launch as a one-shot print run is still finishing
// (running) on a final leaf (docs/agents/pi.md §4.2).
func TestKeptOpenLaunchIdleBetweenTurns(t *testing.T) {
	const done = "01a1faea-b485-714f-9f73-af5206c9d06d" // final leaf: stopReason stop
	for _, tc := range []struct {
		input      string
		want, kind string
	}{
		{"/state/inputs/l-9", discover.StatusIdle, discover.KindKeptOpen},
		{"", discover.StatusRunning, ""},
	} {
		env, f := liveEnv(t, liveHome(t))
		piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
		l := launchRec("l-9", "pi", done, liveCwd, []string{"--mode", "rpc"})
		l.PID, l.StartTicks, l.BootID, l.Input = 4242, uint64(msOf("2026-11-20T21:55:00.000Z")), "boot-1", tc.input
		env.Launches = append(env.Launches, l)
		res := discover.All(context.Background(), env, []discover.Adapter{&Adapter{StartTime: msStart}}, 5*time.Second)
		found := false
		for _, s := range res.Sessions {
			if s.ID != done {
				continue
			}
			found = true
			if s.Status != tc.want || s.Kind != tc.kind || s.PID != 4242 || s.Evidence != discover.EvidenceLaunchRecord {
				t.Errorf("input %q: %s kind %q pid %d evidence %s (%s); want %s kind %q pid 4242 launch-record",
					tc.input, s.Status, s.Kind, s.PID, s.Evidence, s.EvidenceDetail, tc.want, tc.kind)
			}
		}
		if !found {
			t.Errorf("input %q: session %s not listed", tc.input, done)
		}
	}
}
