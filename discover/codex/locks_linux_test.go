package codex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
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
	got := discovertest.DiscoverAll(t, a, testEnv(home, procs(14774), nil))
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

// Among many stale lock files, the held ones are found from the listing's
// inodes: the same answer as a stat of every file, also for a file the listing
// does not have (created after it) and for a lock on another file.
func TestProcLocksAmongStaleFiles(t *testing.T) {
	home := t.TempDir()
	var files []string
	for i := range 300 {
		files = append(files, writeLock(t, home, fmt.Sprintf("01a1faf0-70be-7df3-9aa2-%012x", i)))
	}
	elsewhere := filepath.Join(t.TempDir(), "x.lock")
	os.WriteFile(elsewhere, nil, 0o600)
	body := procLocksLine(t, 1, files[7], 100) + procLocksLine(t, 2, files[299], 200) + procLocksLine(t, 3, elsewhere, 300)
	locks := filepath.Join(t.TempDir(), "locks")
	if err := os.WriteFile(locks, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := ProcLocks(locks)(context.Background(), append(files, filepath.Join(filepath.Dir(files[0]), "missing.lock")))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{files[7]: 100, files[299]: 200}
	if fmt.Sprint(held) != fmt.Sprint(want) {
		t.Fatalf("held %v, want %v", held, want)
	}
}

// A held lock that one read of a long /proc/locks skipped (a lock released
// between the kernel's page-sized read calls shifts the rest) is found by the
// next read: one live Codex is not shown failed for a busy machine's churn.
func TestProcLocksUnionOfReads(t *testing.T) {
	home := t.TempDir()
	held := writeLock(t, home, "01a1faf0-70be-7df3-9aa2-000000000001")
	var filler strings.Builder
	for i := 0; filler.Len() < 2*os.Getpagesize(); i++ {
		fmt.Fprintf(&filler, "%d: POSIX  ADVISORY  WRITE %d 00:00:%d 0 EOF\n", i+10, 90000+i, 500000+i)
	}
	withHeld := filler.String() + procLocksLine(t, 1, held, 4242)
	reads := []string{filler.String(), withHeld, filler.String()}
	n := 0
	got, err := procLocks(func() ([]byte, error) {
		b := reads[n%len(reads)]
		n++
		return []byte(b), nil
	})(context.Background(), []string{held})
	if err != nil {
		t.Fatal(err)
	}
	if got[held] != 4242 {
		t.Fatalf("held %v after %d reads, want %s held by 4242", got, n, held)
	}
	// A short listing is one read call: read once.
	n = 0
	short := procLocksLine(t, 1, held, 7)
	if _, err := procLocks(func() ([]byte, error) { n++; return []byte(short), nil })(context.Background(), []string{held}); err != nil || n != 1 {
		t.Fatalf("short listing read %d times (err %v), want once", n, err)
	}
}
