package codex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/discover"
)

// procLocksLine renders a /proc/locks line for a file as the kernel would.
func procLocksLine(t *testing.T, n int, path string, pid int) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d: FLOCK  ADVISORY  WRITE %d %02x:%02x:%d 0 EOF\n", n, pid, unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
}

// The real format end to end: a recorded-style /proc/locks naming the lock
// file's device and inode makes the thread live; a waiter line does not.
func TestProcLocksFile(t *testing.T) {
	home := fixtureHome(t)
	lock := writeLock(t, home, id861e)
	other := writeLock(t, home, id5425)
	locks := filepath.Join(t.TempDir(), "locks")
	body := procLocksLine(t, 1, lock, 14774) + "2: -> " + procLocksLine(t, 2, other, 14775)[3:]
	if err := os.WriteFile(locks, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &Adapter{Holders: ProcLocks(locks)}
	got := discoverAll(t, a, testEnv(home, procs(14774), nil))
	if s := got[id861e]; s.Status != discover.StatusRunning || s.PID != 14774 {
		t.Errorf("held: %s pid %d", s.Status, s.PID)
	}
	if s := got[id5425]; s.Status != discover.StatusStopped || s.Evidence != discover.EvidenceTranscript {
		t.Errorf("only a waiter: %s/%s", s.Status, s.Evidence)
	}
	if _, err := ProcLocks(filepath.Join(t.TempDir(), "none"))(context.Background(), []string{lock}); err == nil {
		t.Error("missing /proc/locks: no error")
	}
}

// The real kernel: this process takes the flock the way Codex does, and
// /proc/locks names it as the holder.
func TestRealFlock(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks")
	}
	home := fixtureHome(t)
	lock := writeLock(t, home, id861e)
	f, err := os.Open(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Skipf("flock: %v", err)
	}
	held, err := ProcLocks("/proc/locks")(context.Background(), []string{lock})
	if err != nil {
		t.Fatal(err)
	}
	if pid, ok := held[lock]; !ok || (pid != os.Getpid() && pid != 0) {
		t.Fatalf("holder %d (found %v), want %d", pid, ok, os.Getpid())
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	held, _ = ProcLocks("/proc/locks")(context.Background(), []string{lock})
	if _, ok := held[lock]; ok {
		t.Error("still held after unlock")
	}
}
