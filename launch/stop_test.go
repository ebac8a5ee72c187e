package launch

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/proc"
)

// startGroup starts sh -c script in its own session (like a launched agent).
func startGroup(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd
}

func ticks(t *testing.T, pid int) uint64 {
	t.Helper()
	var p proc.Process
	var err error
	for i := 0; i < 50; i++ {
		if p, err = proc.Lookup(pid); err == nil {
			return p.StartTicks
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d: %v", pid, err)
	return 0
}

// A record whose start time does not match the live process is forged or stale:
// stop must never signal that PID.
func TestStopNeverSignalsAMismatchedPID(t *testing.T) {
	cmd := startGroup(t, "sleep 30")
	pid := cmd.Process.Pid
	real := ticks(t, pid)
	d := testDeps(t)
	var sent []int
	d.Kill = func(pid int, sig syscall.Signal) error { sent = append(sent, pid); return nil }
	for _, forged := range []StopTarget{
		{PID: pid, Start: real + 1, PGID: pid, Group: true},
		{PID: pid, Start: real, BootID: "another-boot", PGID: pid, Group: true},
	} {
		res, err := d.Stop(context.Background(), forged, StopOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.AlreadyGone || res.ExitObserved || len(res.Signals) != 0 {
			t.Errorf("forged %+v: result %+v", forged, res)
		}
	}
	if len(sent) != 0 {
		t.Fatalf("signals were sent to %v", sent)
	}
	if _, err := proc.Lookup(pid); err != nil {
		t.Fatal("the innocent process died")
	}
}

// SIGINT is ignored, so stop escalates to SIGTERM; it re-verifies before every
// signal, confirms the exit, and cleans up a setsid'd descendant group.
func TestStopEscalatesAndCleansUpGroups(t *testing.T) {
	dir := t.TempDir()
	// The "agent" ignores SIGINT and starts a tool in its own session (as the Bash
	// tool does), which a group kill misses.
	cmd := startGroup(t, "trap '' INT; setsid sleep 60 & echo $! > "+dir+"/tool; sleep 60; wait")
	pid := cmd.Process.Pid
	start := ticks(t, pid)
	var tool int
	eventually(t, 5*time.Second, "the tool pid", func() bool {
		b, err := readFileErr(dir + "/tool")
		tool, _ = strconv.Atoi(strings.TrimSpace(b))
		return err == nil && tool > 0
	})
	toolStart := ticks(t, tool)
	d := testDeps(t)
	var log []string
	kill := d.Kill
	d.Kill = func(p int, sig syscall.Signal) error {
		log = append(log, strconv.Itoa(p)+" "+signalName(sig))
		return kill(p, sig)
	}
	res, err := d.Stop(context.Background(), StopTarget{PID: pid, Start: start, PGID: pid, Group: true},
		StopOptions{Steps: []StopStep{{syscall.SIGINT, 300 * time.Millisecond}, {syscall.SIGTERM, 3 * time.Second}, {syscall.SIGKILL, 2 * time.Second}}, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.ExitObserved {
		t.Fatalf("exit not observed: %+v", res)
	}
	if diff := cmp.Diff([]string{"SIGINT", "SIGTERM"}, res.Signals); diff != "" {
		t.Errorf("signals (-want +got):\n%s", diff)
	}
	if log[0] != "-"+strconv.Itoa(pid)+" SIGINT" {
		t.Errorf("launched agents get their process group signalled; first kill was %q", log[0])
	}
	eventually(t, 3*time.Second, "the tool's group to be gone", func() bool {
		p, err := proc.Lookup(tool)
		return err != nil || p.StartTicks != toolStart
	})
}

func readFileErr(p string) (string, error) {
	b, err := exec.Command("cat", p).Output()
	return string(b), err
}

func TestStopForeignSessionSignalsPIDOnly(t *testing.T) {
	cmd := startGroup(t, "sleep 30")
	pid := cmd.Process.Pid
	d := testDeps(t)
	var targets []int
	kill := d.Kill
	d.Kill = func(p int, sig syscall.Signal) error { targets = append(targets, p); return kill(p, sig) }
	// (go test may start us with SIGINT ignored, which children inherit: keep the
	// escalation short.)
	res, err := d.Stop(context.Background(), StopTarget{PID: pid, Start: ticks(t, pid), PGID: pid},
		StopOptions{Steps: []StopStep{{syscall.SIGINT, 200 * time.Millisecond}, {syscall.SIGTERM, 2 * time.Second}}, Poll: 10 * time.Millisecond})
	if err != nil || !res.ExitObserved {
		t.Fatalf("%+v %v", res, err)
	}
	for _, p := range targets {
		if p < 0 {
			t.Errorf("a foreign session's group was signalled (%d)", p)
		}
	}
}
