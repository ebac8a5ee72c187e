package codex

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
	"golang.org/x/sys/unix"
)

// watchOpens counts, through inotify, every open of a directory or file under
// root (directory listings included: a listing opens its directory). It is the
// kernel's count, whatever code path agentctl takes.
func watchOpens(t *testing.T, root string) func() int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		_, err = unix.InotifyAddWatch(fd, p, unix.IN_OPEN|unix.IN_ACCESS)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n := 0
		buf := make([]byte, 64<<10)
		for {
			k, err := unix.Read(fd, buf)
			if k <= 0 || err != nil {
				return n
			}
			for off := 0; off+unix.SizeofInotifyEvent <= k; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				n++
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
	count() // the walk's own listings
	return count
}

// A history of rollouts without a state DB and without thread-writer-locks
// (Codex before them: liveness is a codex process holding its rollout open).
// With no codex process alive and no launch naming a thread, an alive-only
// listing reads nothing of it: no folder listed, no rollout opened
// (README "Performance": ≤ 30 ms at any size).
func TestAliveOnlyReadsNoRollouts(t *testing.T) {
	home := t.TempDir()
	sessions := filepath.Join(home, ".codex", "sessions")
	copyRollouts(t, "testdata/legacy", filepath.Join(sessions, "2025", "09", "01"))
	copyRollouts(t, "testdata/reverted/.codex/sessions/2026/12/02", filepath.Join(sessions, "2026", "12", "02"))
	procs := &proc.Fake{Boot: "boot-1", Procs: []proc.Process{{PID: 700, Comm: "bash"}, {PID: 701, Comm: "node"}}}
	opened := 0
	a := &Adapter{OpenFiles: func(pid int) ([]string, error) { opened++; return nil, nil }}

	env := testEnv(home, procs, nil)
	env.OnlyAlive = true
	env.NoCache = true
	count := watchOpens(t, sessions)
	got, err := a.Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("alive-only listing shows %d threads; none is alive", len(got))
	}
	if n := count(); n != 0 {
		t.Errorf("alive-only listing with no codex process opened or read under sessions/ %d times; want none", n)
	}
	if opened != 0 {
		t.Errorf("open files of %d non-codex processes read", opened)
	}

	// A codex process holding the newest rollout of the reverted thread open:
	// the thread is alive, found by the rollout's name, and listed once.
	newest := filepath.Join(sessions, "2026", "12", "02", revertedNewest)
	procs.Procs = append(procs.Procs, proc.Process{PID: 702, Comm: "codex"})
	a = &Adapter{OpenFiles: func(pid int) ([]string, error) {
		if pid == 702 {
			return []string{"/dev/null", newest}, nil
		}
		return nil, nil
	}}
	got, err = a.Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != idReverted || got[0].Status != discover.StatusIdle || got[0].PID != 702 {
		t.Errorf("alive-only listing with codex 702 holding %s: %+v; want %s idle, pid 702", revertedNewest, got, idReverted)
	}
}

func copyRollouts(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
