package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// fuseHome is a fresh HOME and state dir for real agentctl processes (the test
// binary serves as agentctl, see TestMain).
type fuseHome struct {
	t     *testing.T
	work  string
	home  string
	state string
	store *meta.Store
}

func newFuseHome(t *testing.T) *fuseHome {
	t.Helper()
	work := t.TempDir()
	h := &fuseHome{t: t, work: work, home: filepath.Join(work, "home"), state: filepath.Join(work, "state")}
	if err := os.MkdirAll(h.home, 0o755); err != nil {
		t.Fatal(err)
	}
	h.store = meta.NewStore(h.state)
	return h
}

func (h *fuseHome) cmd(args ...string) *exec.Cmd {
	c := exec.Command("agentctl", args...)
	c.Env = append(os.Environ(), "HOME="+h.home, "AGENTCTL_HOME="+h.state, "NO_COLOR=1")
	return c
}

// setExpired arms a fuse that expired a minute ago, as if set an hour back.
func (h *fuseHome) setExpired(dir, script string) {
	h.t.Helper()
	st := meta.NewStore(h.state)
	st.Now = func() time.Time { return time.Now().Add(-time.Hour) }
	if _, _, err := locks.SetFuse(st, locks.Fuse{Directory: dir, Script: script, Label: "t"}, 59*time.Minute); err != nil {
		h.t.Fatal(err)
	}
}

func (h *fuseHome) count(typ string) int {
	n := 0
	_ = h.store.ReadEvents(func(ev meta.Event, _ []byte) bool {
		if ev.Type == typ {
			n++
		}
		return true
	})
	return n
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// An expired fuse fires exactly once while 8 sweeps and 8 other commands that
// notice it run at the same time — round after round.
func TestFuseFiresOnceUnderConcurrentCommands(t *testing.T) {
	rounds := 25
	if testing.Short() {
		rounds = 6
	}
	h := newFuseHome(t)
	dir := filepath.Join(h.work, "proj")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fired := filepath.Join(h.work, "fired")
	others := [][]string{{"fuses"}, {"list"}, {"fuses", "--json"}, {"list", "-a"}}
	for r := 0; r < rounds; r++ {
		h.setExpired(dir, "echo "+strconv.Itoa(r)+" >> "+fired)
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			args := []string{"sweep"}
			if i%2 == 1 {
				args = others[i/2%len(others)]
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var stderr bytes.Buffer
				c := h.cmd(args...)
				c.Stderr = &stderr
				if err := c.Run(); err != nil {
					t.Errorf("agentctl %v: %v\n%s", args, err, stderr.String())
				}
			}()
		}
		wg.Wait()
		// A reading command hands the firing to a detached __fire-fuses, which
		// may still be running: wait for the fuse to be gone.
		h.waitNoFuses(t, r)
		got := lines(t, fired)
		if len(got) != r+1 || got[r] != strconv.Itoa(r) {
			t.Fatalf("round %d: the script ran %v (once per round expected)", r, got)
		}
		if fs, _ := locks.ReadFuses(h.store); len(fs) != 0 {
			t.Fatalf("round %d: fuse left behind: %+v", r, fs)
		}
	}
	if n := h.count(meta.EventFuseExpired); n != rounds {
		t.Errorf("%d fuse.expired events for %d firings", n, rounds)
	}
}

func (h *fuseHome) waitNoFuses(t *testing.T, round int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		fs, err := locks.ReadFuses(h.store)
		if err == nil && len(fs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d: fuse still there after 30 s: %+v (%v)", round, fs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A read never waits on a fuse's script: `list` with an expired fuse whose
// script sleeps 60 s returns at once, and the script still runs exactly once,
// however many reads noticed it.
func TestSlowFuseScriptDoesNotDelayList(t *testing.T) {
	h := newFuseHome(t)
	dir := filepath.Join(h.work, "proj")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(h.work, "runs")
	h.setExpired(dir, "echo $$ >> "+runs+"; sleep 60")
	start := time.Now()
	if out, err := h.cmd("list").CombinedOutput(); err != nil {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("list took %s: it waited for the fuse's script", d)
	}
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := h.cmd("list", "-a").CombinedOutput(); err != nil {
				t.Errorf("list -a: %v\n%s", err, out)
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for len(lines(t, runs)) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // a second firing would have started by now
	got := lines(t, runs)
	if len(got) != 1 {
		t.Fatalf("the script ran %d times (%v), want once", len(got), got)
	}
	if pid, err := strconv.Atoi(got[0]); err == nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // its own process group
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	h.waitNoFuses(t, 0) // the detached firer ends once its script is gone
	time.Sleep(200 * time.Millisecond)
}

// The process firing a fuse is SIGKILLed in the middle of its script: the fuse
// stays firing (other commands leave it alone, its owner might be alive), and
// the next sweeps — 8 at once — fire it again exactly once.
func TestFuseFirerKilledMidActionIsRetriedOnce(t *testing.T) {
	h := newFuseHome(t)
	dir := filepath.Join(h.work, "proj")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	first, pidFile, runs := filepath.Join(h.work, "first"), filepath.Join(h.work, "script.pid"), filepath.Join(h.work, "runs")
	script := `if [ -e ` + first + ` ]; then echo retry >> ` + runs + `; else touch ` + first + `; echo first >> ` + runs + `; echo $$ > ` + pidFile + `.tmp; mv ` + pidFile + `.tmp ` + pidFile + `; sleep 60; fi`
	h.setExpired(dir, script)

	sweep := h.cmd("sweep")
	if err := sweep.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var scriptPID int
	for scriptPID == 0 {
		if time.Now().After(deadline) {
			_ = sweep.Process.Kill()
			t.Fatal("the fuse script never started")
		}
		if b, err := os.ReadFile(pidFile); err == nil {
			scriptPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := sweep.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = sweep.Wait()
	_ = syscall.Kill(-scriptPID, syscall.SIGKILL) // the script runs in its own process group

	fs, err := locks.ReadFuses(h.store)
	if err != nil || len(fs) != 1 || fs[0].State != locks.FuseFiring || fs[0].FiringPID != sweep.Process.Pid {
		t.Fatalf("after the kill: %+v, %v (want one fuse firing, owned by the dead sweep)", fs, err)
	}
	// Commands other than sweep do not retry a firing fuse.
	if out, err := h.cmd("fuses").CombinedOutput(); err != nil || !strings.Contains(string(out), "firing") {
		t.Fatalf("fuses: %v\n%s", err, out)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := h.cmd("sweep").CombinedOutput(); err != nil {
				t.Errorf("sweep: %v\n%s", err, out)
			}
		}()
	}
	wg.Wait()
	if got := lines(t, runs); strings.Join(got, ",") != "first,retry" {
		t.Fatalf("script runs = %v, want [first retry]", got)
	}
	if fs, _ := locks.ReadFuses(h.store); len(fs) != 0 {
		t.Fatalf("fuse left behind: %+v", fs)
	}
	if n := h.count(meta.EventFuseExpired); n != 2 {
		t.Errorf("%d fuse.expired events, want 2 (the killed attempt and the retry)", n)
	}
}
