package harness

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/proc"
)

// TestKilledTestBinaryLeavesNoProcess SIGKILLs a test binary that started an
// agent-like process tree (one child, one grandchild that escaped with setsid, as
// Claude's Bash tool does). No t.Cleanup runs; the next test binary's guard must
// still leave nothing of it alive.
func TestKilledTestBinaryLeavesNoProcess(t *testing.T) {
	if os.Getenv("HARNESS_REAP_CHILD") != "" {
		p := Start(t, Spec{Path: "/bin/sh", Args: []string{"-c", "setsid sleep 301 & exec sleep 302"}, Env: Env{"PATH": "/usr/bin:/bin"}})
		time.Sleep(200 * time.Millisecond) // let the grandchild start
		fmt.Printf("started %d %s\n", p.PID, runOwner)
		time.Sleep(time.Minute)
		return
	}
	child := exec.Command(os.Args[0], "-test.run=^TestKilledTestBinaryLeavesNoProcess$")
	// The child is killed, so its own cleanups never run: its temporary
	// directories go in one of ours, removed when this test ends.
	child.Env = append(os.Environ(), "HARNESS_REAP_CHILD=1", "TMPDIR="+t.TempDir())
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		child.Process.Kill()
		t.Fatalf("child: %v", err)
	}
	var pid int
	var childOwner string
	if _, err := fmt.Sscanf(line, "started %d %s", &pid, &childOwner); err != nil {
		t.Fatalf("child said %q", line)
	}
	var tagged []int
	for _, p := range proc.Snapshot().All() {
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
		if strings.Contains(string(env), tokenVar+"="+childOwner+"-") {
			tagged = append(tagged, p.PID)
		}
	}
	if len(tagged) < 2 {
		t.Fatalf("expected the child and the setsid grandchild tagged, found %v", tagged)
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()

	// What the next test binary's guard does.
	reap(func(o string) bool { return o != runOwner && !ownerAlive(o) })
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range tagged {
		for {
			if _, err := proc.Lookup(p); err != nil {
				break
			}
			if time.Now().After(deadline) {
				syscall.Kill(p, syscall.SIGKILL)
				t.Fatalf("pid %d of the killed test binary is still alive", p)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
