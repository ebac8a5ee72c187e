package locks_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

type procs struct {
	mu    sync.Mutex
	alive map[int]uint64
}

func (p *procs) Find(pid int) (proc.Process, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.alive[pid]; ok {
		return proc.Process{PID: pid, StartTicks: s}, nil
	}
	return proc.Process{}, proc.ErrGone
}

func (p *procs) BootID() string  { return "" }
func (p *procs) Available() bool { return true }

func (p *procs) kill(pid int) { p.mu.Lock(); delete(p.alive, pid); p.mu.Unlock() }

func newStore(t *testing.T) (*meta.Store, *procs, *time.Time) {
	t.Helper()
	s := meta.NewStore(filepath.Join(t.TempDir(), "state"))
	p := &procs{alive: map[int]uint64{10: 1000, 11: 1100}}
	now := t0
	s.Now = func() time.Time { return now }
	s.Procs = p
	return s, p, &now
}

func dirs(ls []locks.Lock) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Directory+":"+l.Type)
	}
	return out
}

func TestAcquireConflictAndForce(t *testing.T) {
	s, _, _ := newStore(t)
	a := locks.Lock{Directory: "/w/app", Type: locks.Auto, PID: 10, PIDStart: 1000, LaunchID: "l-1", LockedBy: "ana", Reason: "claude-code launch l-1"}
	if _, err := locks.Acquire(s, a, false); err != nil {
		t.Fatal(err)
	}
	b := locks.Lock{Directory: "/w/app", Type: locks.Auto, PID: 11, PIDStart: 1100, LaunchID: "l-2", LockedBy: "bo"}
	_, err := locks.Acquire(s, b, false)
	var ce *locks.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("second lock on the same dir: %v, want ConflictError", err)
	}
	want := "directory locked by ana (claude-code launch l-1) since 2026-11-20T12:00:00Z; use --force"
	if err.Error() != want {
		t.Errorf("conflict message:\n got %q\nwant %q", err.Error(), want)
	}
	warns, err := locks.Acquire(s, b, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "overrode") {
		t.Errorf("--force warnings = %v", warns)
	}
	got, _ := locks.List(s)
	if len(got) != 1 || got[0].LaunchID != "l-2" {
		t.Errorf("after --force: %+v", got)
	}
}

func TestRelatedDirectoriesWarn(t *testing.T) {
	s, _, _ := newStore(t)
	if _, err := locks.Acquire(s, locks.Lock{Directory: "/w/app", Type: locks.Manual, LockedBy: "ana"}, false); err != nil {
		t.Fatal(err)
	}
	for dir, rel := range map[string]string{"/w/app/sub": "inside", "/w": "a parent of"} {
		warns, err := locks.Acquire(s, locks.Lock{Directory: dir, Type: locks.Manual}, false)
		if err != nil {
			t.Fatalf("%s: a lock on a related dir must not conflict: %v", dir, err)
		}
		if len(warns) == 0 || !strings.Contains(warns[0], rel) {
			t.Errorf("%s: warnings %v, want one saying %q", dir, warns, rel)
		}
	}
	// A sibling with a common string prefix is not related.
	warns, err := locks.Acquire(s, locks.Lock{Directory: "/w/application", Type: locks.Manual}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		if strings.Contains(w, "/w/app ") || strings.Contains(w, "/w/app,") {
			t.Errorf("/w/application warned about /w/app: %v", warns)
		}
	}
}

// Whichever command opens the file drops auto locks whose owner died (or whose
// PID now belongs to another process) and manual locks past their TTL.
func TestLazyRemoval(t *testing.T) {
	s, p, now := newStore(t)
	exp := t0.Add(time.Hour)
	for _, l := range []locks.Lock{
		{Directory: "/a", Type: locks.Auto, PID: 10, PIDStart: 1000},
		{Directory: "/b", Type: locks.Auto, PID: 11, PIDStart: 9999}, // recycled pid
		{Directory: "/c", Type: locks.Auto},                          // no owner at all
		{Directory: "/d", Type: locks.Manual, ExpiresAt: &exp},
		{Directory: "/e", Type: locks.Manual},
	} {
		if _, err := locks.Acquire(s, l, false); err != nil {
			t.Fatal(err)
		}
	}
	got, err := locks.List(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/a:auto", "/d:manual", "/e:manual"}, dirs(got)); diff != "" {
		t.Errorf("live locks (-want +got):\n%s", diff)
	}
	p.kill(10)
	*now = t0.Add(2 * time.Hour)
	got, _ = locks.List(s)
	if diff := cmp.Diff([]string{"/e:manual"}, dirs(got)); diff != "" {
		t.Errorf("after owner death and TTL (-want +got):\n%s", diff)
	}
	raw, _ := locks.Read(s)
	if len(raw) != 1 {
		t.Errorf("locks.json still holds %d entries; dead ones must be evicted from the file", len(raw))
	}
	// A dead lock no longer conflicts.
	if _, err := locks.Acquire(s, locks.Lock{Directory: "/a", Type: locks.Auto, PID: 11, PIDStart: 1100}, false); err != nil {
		t.Errorf("lock on a dir whose owner died: %v", err)
	}
}

func TestUnlock(t *testing.T) {
	s, _, _ := newStore(t)
	locks.Acquire(s, locks.Lock{Directory: "/m", Type: locks.Manual}, false)
	locks.Acquire(s, locks.Lock{Directory: "/auto", Type: locks.Auto, PID: 10, PIDStart: 1000, LaunchID: "l-9"}, false)
	if _, err := locks.Unlock(s, "/m", false); err != nil {
		t.Fatal(err)
	}
	var nl *locks.NotLockedError
	if _, err := locks.Unlock(s, "/m", false); !errors.As(err, &nl) {
		t.Errorf("unlock twice: %v", err)
	}
	var al *locks.AutoLockError
	if _, err := locks.Unlock(s, "/auto", false); !errors.As(err, &al) {
		t.Errorf("unlock of an auto lock without force: %v", err)
	}
	if _, err := locks.Unlock(s, "/auto", true); err != nil {
		t.Errorf("unlock --force of an auto lock: %v", err)
	}
	// Journal: acquired ×2, released ×2.
	var types []string
	s.ReadEvents(func(ev meta.Event, _ []byte) bool { types = append(types, ev.Type+" "+ev.Directory); return true })
	want := []string{"lock.acquired /m", "lock.acquired /auto", "lock.released /m", "lock.released /auto"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
}

func TestSetOwnerAndReleaseLaunch(t *testing.T) {
	s, p, _ := newStore(t)
	locks.Acquire(s, locks.Lock{Directory: "/x", Type: locks.Auto, PID: 10, PIDStart: 1000, LaunchID: "l-1"}, false)
	p.alive[42] = 4200
	if ok, err := locks.SetOwner(s, "l-1", 42, 4200, "boot", "sess-1"); err != nil || !ok {
		t.Fatalf("SetOwner: %v %v", ok, err)
	}
	p.kill(10) // the launcher exits; the agent owns the lock now
	got, _ := locks.List(s)
	if len(got) != 1 || got[0].PID != 42 || got[0].SessionID != "sess-1" {
		t.Fatalf("after SetOwner: %+v", got)
	}
	if err := locks.ReleaseLaunch(s, "l-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := locks.List(s); len(got) != 0 {
		t.Errorf("after ReleaseLaunch: %+v", got)
	}
}

func TestCanonical(t *testing.T) {
	d := t.TempDir()
	real := filepath.Join(d, "real")
	os.Mkdir(real, 0o755)
	link := filepath.Join(d, "link")
	os.Symlink(real, link)
	got, err := locks.Canonical(link)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(real)
	if got != want {
		t.Errorf("Canonical(symlink) = %s, want %s", got, want)
	}
	if _, err := locks.Canonical(filepath.Join(d, "nope")); err == nil || !regexp.MustCompile(`does not exist`).MatchString(err.Error()) {
		t.Errorf("missing dir: %v", err)
	}
	f := filepath.Join(d, "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := locks.Canonical(f); err == nil {
		t.Error("a file was accepted as a directory")
	}
}

// 64 goroutines × 100 lock/unlock rounds. A lost acquire would make the
// matching unlock fail (not locked); a lost unlock would leave a lock behind; and
// a contended directory is never held by two workers at once.
func TestConcurrentLockUnlock(t *testing.T) {
	s, _, _ := newStore(t)
	s.Now = time.Now
	const workers, n = 64, 25
	var wg sync.WaitGroup
	var holders, wins atomic.Int32
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				dir := fmt.Sprintf("/w%d/%d", w, i)
				if _, err := locks.Acquire(s, locks.Lock{Directory: dir, Type: locks.Manual}, false); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					_, err := locks.Acquire(s, locks.Lock{Directory: "/shared", Type: locks.Manual, LockedBy: dir}, false)
					var ce *locks.ConflictError
					switch {
					case err == nil:
						wins.Add(1)
						if h := holders.Add(1); h != 1 {
							t.Errorf("%d workers hold /shared at once", h)
						}
						holders.Add(-1)
						if _, err := locks.Unlock(s, "/shared", false); err != nil {
							t.Errorf("unlock /shared: %v", err)
						}
					case !errors.As(err, &ce):
						t.Error(err)
					}
				}
				if _, err := locks.Unlock(s, dir, false); err != nil {
					t.Errorf("unlock %s: %v (a lost update)", dir, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	got, err := locks.Read(s)
	if err != nil {
		t.Fatalf("locks.json does not parse: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("%d locks left behind, want 0 (lost unlocks): %v", len(got), dirs(got))
	}
	if wins.Load() == 0 {
		t.Error("nobody ever got /shared")
	}
}

// AcquireAll is all or nothing: one live lock among the directories and none
// of them is locked, the file untouched.
func TestAcquireAllIsAllOrNothing(t *testing.T) {
	s := meta.NewStore(t.TempDir())
	exp := time.Now().Add(time.Hour)
	if _, err := locks.Acquire(s, locks.Lock{Directory: "/w/b", Type: locks.Manual, ExpiresAt: &exp}, false); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(s.Dir, locks.File))
	_, err := locks.AcquireAll(s, []locks.Lock{{Directory: "/w/a", Type: locks.Manual, ExpiresAt: &exp}, {Directory: "/w/b", Type: locks.Manual, ExpiresAt: &exp}}, false)
	var ce *locks.ConflictError
	if !errors.As(err, &ce) || ce.Lock.Directory != "/w/b" {
		t.Fatalf("AcquireAll over a locked /w/b: %v; want a ConflictError on /w/b", err)
	}
	if after, _ := os.ReadFile(filepath.Join(s.Dir, locks.File)); !bytes.Equal(after, before) {
		t.Errorf("locks.json after a refused AcquireAll:\n%s\nwant\n%s", after, before)
	}
	if _, err := locks.AcquireAll(s, []locks.Lock{{Directory: "/w/a", Type: locks.Manual, ExpiresAt: &exp}, {Directory: "/w/c", Type: locks.Manual, ExpiresAt: &exp}}, false); err != nil {
		t.Fatal(err)
	}
	if ls, _ := locks.List(s); len(ls) != 3 {
		t.Errorf("%d locks after AcquireAll of two free directories, want 3: %+v", len(ls), ls)
	}
}

// locks.json is bounded (issue 34 item 12): `lock` refuses past MaxLocks with
// a clear error, and a file over MaxFileBytes is never read into memory — a
// read skips it with a warning, the next change moves it aside.
func TestLocksFileBounded(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		s, _, _ := newStore(t)
		defer func(n int) { locks.MaxLocks = n }(locks.MaxLocks)
		locks.MaxLocks = 3
		for i := 0; i < 3; i++ {
			if _, err := locks.Acquire(s, locks.Lock{Directory: fmt.Sprintf("/w/%d", i), Type: locks.Manual}, false); err != nil {
				t.Fatal(err)
			}
		}
		_, err := locks.Acquire(s, locks.Lock{Directory: "/w/3", Type: locks.Manual}, false)
		var tm *locks.TooManyError
		if !errors.As(err, &tm) || !strings.Contains(err.Error(), "release some first") {
			t.Fatalf("fourth lock: got %v, want a TooManyError", err)
		}
		got, err := locks.Read(s)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"/w/0:manual", "/w/1:manual", "/w/2:manual"}, dirs(got)); diff != "" {
			t.Errorf("locks after the refusal (-want +got):\n%s", diff)
		}
	})
	t.Run("size", func(t *testing.T) {
		s, _, _ := newStore(t)
		var warns []string
		s.Warn = func(f string, a ...any) { warns = append(warns, fmt.Sprintf(f, a...)) }
		defer func(n int64) { locks.MaxFileBytes = n }(locks.MaxFileBytes)
		locks.MaxFileBytes = 4096
		var b bytes.Buffer
		b.WriteString(`{"schema":1,"locks":[`)
		for i := 0; b.Len() < 8192; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"directory":"/big/%d","type":"manual","locked_at":"2026-11-20T12:00:00Z"}`, i)
		}
		b.WriteString("]}\n")
		if err := s.EnsureDir(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.Path(locks.File), b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := locks.Read(s)
		if err != nil || len(got) != 0 || len(warns) != 1 || !strings.Contains(warns[0], "over its bound") {
			t.Fatalf("Read of an oversized locks.json: %d locks, err %v, warnings %q; want none, a warning", len(got), err, warns)
		}
		if _, err := locks.Acquire(s, locks.Lock{Directory: "/w/a", Type: locks.Manual}, false); err != nil {
			t.Fatal(err)
		}
		asides, _ := filepath.Glob(s.Path(locks.File) + ".toolarge-*")
		got, _ = locks.Read(s)
		if len(asides) != 1 || len(got) != 1 {
			t.Errorf("after a lock: moved aside %v, locks %v; want the big file aside and one lock", asides, dirs(got))
		}
	})
}
