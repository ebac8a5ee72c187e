package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/proc"
)

// A `launch --home DIR` run keeps its record in the caller's own state dir
// ($HOME/.agentctl here: no AGENTCTL_HOME), never under DIR, with DIR as the
// home its agent's files are under. Its supervisor killed, `status` and
// `wait` without --home still find it, and once its agent ended a plain
// `sweep` (no --home) finalises it.
func TestPlainSweepFinalisesLaunchUnderOtherHome(t *testing.T) {
	c := newCLI(t)
	env := c.env[:0:0]
	for _, kv := range c.env {
		if !strings.HasPrefix(kv, "AGENTCTL_HOME=") {
			env = append(env, kv)
		}
	}
	c.env = env
	c.state = filepath.Join(c.home, ".agentctl") // settle (cleanup) waits on the launch's records
	other := mkdir(t, "otherhome")
	dir := mkdir(t, "proj")
	// The agent ends once its supervisor is dead, not on a timer that a slow
	// launch could outlast (the supervisor would finalise it itself).
	finish := filepath.Join(t.TempDir(), "finish")
	l := c.launch(dir, "--home", other, "--env", "FAKE_WAIT_FOR="+finish)
	if ents, err := os.ReadDir(other); err != nil || len(ents) != 0 {
		t.Fatalf("launch --home wrote under the home: %v %v", ents, err)
	}
	st := c.store()
	recs, _ := st.ReadLaunches()
	if len(recs) != 1 || recs[0].ID != l.LaunchID || recs[0].Home != other {
		t.Fatalf("launch records in the caller's state dir %s: %+v; want %s with home %s", c.state, recs, l.LaunchID, other)
	}
	sup := recs[0].SupervisorPID
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the supervisor to die", func() bool { return !st.IsAlive(sup, recs[0].SupervisorStart, "") })
	if s := c.status(l.ID); s.Status != "running" || s.LaunchID != l.LaunchID || s.PID != l.PID {
		t.Fatalf("status without --home, supervisor dead: %+v", s)
	}
	if _, errOut, code := c.run("wait", "--timeout", "300ms", l.ID); code != 124 || !strings.Contains(errOut, "timed out after 300ms") {
		t.Fatalf("wait without --home on the running launch: exit %d %q", code, errOut)
	}
	os.WriteFile(finish, nil, 0o644)
	waitFor(t, 10*time.Second, "the agent to end", func() bool { _, err := proc.Lookup(l.PID); return err != nil })

	var rep sweepReport
	if err := json.Unmarshal([]byte(c.ok("sweep", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.Finalised, l.LaunchID) {
		t.Fatalf("plain sweep: %+v; want %s finalised", rep, l.LaunchID)
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
	if s := c.status(l.ID); s.Status != "stopped" || s.LaunchID != l.LaunchID {
		t.Errorf("status without --home after the sweep: %+v", s)
	}
	if out, errOut, code := c.run("wait", "--timeout", "5s", l.ID); code != 0 || !strings.HasPrefix(out, l.ID+" stopped") {
		t.Errorf("wait without --home after the sweep: exit %d %q %q", code, out, errOut)
	}
	if ents, err := os.ReadDir(other); err != nil || len(ents) != 0 {
		t.Errorf("something wrote under the launch's home: %v %v", ents, err)
	}
}

// agentctl run inside a `launch --home DIR` agent's environment (its hooks,
// the agent's own calls) shares the launching state dir, not DIR/.agentctl,
// though its HOME is DIR; an --env AGENTCTL_HOME of the user's still wins.
func TestLaunchHomeKeepsStateDirForTheRun(t *testing.T) {
	c := newCLI(t)
	env := c.env[:0:0]
	for _, kv := range c.env {
		if !strings.HasPrefix(kv, "AGENTCTL_HOME=") {
			env = append(env, kv)
		}
	}
	c.env = env
	c.state = filepath.Join(c.home, ".agentctl")
	other := mkdir(t, "otherhome")
	dir := mkdir(t, "proj")
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, c.state},
		{[]string{"--env", "AGENTCTL_HOME=/elsewhere"}, "/elsewhere"},
	} {
		hook := filepath.Join(t.TempDir(), "hook")
		c.ok(append([]string{"launch", "--wait", "--cwd", dir, "-p", "hello", "--home", other,
			"--on-complete", `echo "$HOME $AGENTCTL_HOME" > ` + hook}, tc.env...)...)
		waitFor(t, 10*time.Second, "the on-complete hook", func() bool { b, _ := os.ReadFile(hook); return len(b) > 0 })
		if got, want := strings.TrimSpace(readAll(t, hook)), other+" "+tc.want; got != want {
			t.Errorf("the run's HOME and AGENTCTL_HOME (%v): %q, want %q", tc.env, got, want)
		}
	}
}
