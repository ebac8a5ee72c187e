package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A launch whose terminal closes (SIGHUP) while it waits for its agent's
// confirmation ends as one interrupted with ^C does: the unconfirmed agent is
// stopped and the prompt file, which holds the whole task, is removed.
func TestLaunchHangupCleansUp(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			c := newCLI(t)
			dir := mkdir(t, "proj")
			cmd := exec.Command(c.bin, "launch", "--cwd", dir, "-p", "the whole task", "--env", "FAKE_NO_INIT=1")
			cmd.Env = c.env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			prompts := filepath.Join(c.state, "prompts")
			waitFor(t, 10*time.Second, "the agent to start", func() bool {
				recs, _ := c.store().ReadLaunches()
				return len(recs) == 1 && recs[0].PID > 0
			})
			if ents, _ := os.ReadDir(prompts); len(ents) != 1 {
				t.Fatalf("prompt files while starting: %d, want 1", len(ents))
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err == nil {
				t.Error("launch exited 0 after the signal")
			}
			t.Logf("launch: %s", stderr.String())
			if ents, _ := os.ReadDir(prompts); len(ents) != 0 {
				t.Errorf("prompt files left after %v: %d", sig, len(ents))
			}
			recs, _ := c.store().ReadLaunches()
			if len(recs) != 1 || c.store().AgentAlive(&recs[0]) {
				t.Errorf("the unconfirmed agent is still running after %v: %+v", sig, recs)
			}
		})
	}
}
