package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// A `launch --home DIR` run keeps its record in DIR/.agentctl. Its supervisor
// killed and its agent ended, a plain `sweep` (no --home) finalises it all the
// same — the launch noted DIR's state dir in the default one — and forgets the
// dir once it has no launch records left.
func TestPlainSweepFinalisesLaunchUnderOtherHome(t *testing.T) {
	c := newCLI(t)
	// The default state dir is $HOME/.agentctl here: no AGENTCTL_HOME.
	env := c.env[:0:0]
	for _, kv := range c.env {
		if len(kv) < 13 || kv[:13] != "AGENTCTL_HOME" {
			env = append(env, kv)
		}
	}
	c.env = env
	other := mkdir(t, "otherhome")
	otherState := filepath.Join(other, ".agentctl")
	c.state = otherState // settle (cleanup) waits on the launch's records
	dir := mkdir(t, "proj")
	// The agent ends once its supervisor is dead, not on a timer that a slow
	// launch could outlast (the supervisor would finalise it itself).
	finish := filepath.Join(t.TempDir(), "finish")
	l := c.launch(dir, "--home", other, "--env", "FAKE_WAIT_FOR="+finish)
	def := meta.NewStore(filepath.Join(c.home, ".agentctl"))
	homes, err := def.ReadHomes()
	if err != nil || len(homes) != 1 || homes[0].State != otherState || homes[0].Home != other {
		t.Fatalf("homes noted in the default state dir: %+v (%v); want %s", homes, err, otherState)
	}
	if recs, _ := def.ReadLaunches(); len(recs) != 0 {
		t.Fatalf("the launch's record is in the default state dir: %+v", recs)
	}
	st := meta.NewStore(otherState)
	recs, _ := st.ReadLaunches()
	if len(recs) != 1 {
		t.Fatalf("%d launch records under %s, want 1", len(recs), otherState)
	}
	sup := recs[0].SupervisorPID
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the supervisor to die", func() bool { return !st.IsAlive(sup, recs[0].SupervisorStart, "") })
	os.WriteFile(finish, nil, 0o644)
	waitFor(t, 10*time.Second, "the agent to end", func() bool { _, err := proc.Lookup(l.PID); return err != nil })

	var rep sweepReport
	if err := json.Unmarshal([]byte(c.ok("sweep", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.Finalised, l.LaunchID) || !slices.Equal(rep.OtherStates, []string{otherState}) {
		t.Fatalf("plain sweep: %+v; want %s finalised from %s", rep, l.LaunchID, otherState)
	}
	recs, _ = st.ReadLaunches()
	if len(recs) != 1 || recs[0].FinalisedAt == nil {
		t.Fatalf("record after the sweep: %+v", recs)
	}
	// Sweeping again finalises nothing more.
	rep = sweepReport{}
	if err := json.Unmarshal([]byte(c.ok("sweep", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Finalised) != 0 {
		t.Errorf("second sweep finalised %v", rep.Finalised)
	}
	// A dir that is gone is forgotten.
	if err := os.RemoveAll(otherState); err != nil {
		t.Fatal(err)
	}
	c.ok("sweep")
	if homes, _ := def.ReadHomes(); len(homes) != 0 {
		t.Errorf("homes after their state dir went: %+v", homes)
	}
}
