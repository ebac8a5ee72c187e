package locks_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

func fuseDirs(fs []locks.Fuse) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Directory+":"+f.State+":"+f.Label)
	}
	return out
}

func TestFuseSetReplacesExtendCancel(t *testing.T) {
	s, _, now := newStore(t)
	if _, _, err := locks.SetFuse(s, locks.Fuse{Directory: "/w/a", Label: "one"}, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	_, replaced, err := locks.SetFuse(s, locks.Fuse{Directory: "/w/a", Label: "two", Script: "true"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if replaced == nil || replaced.Label != "one" {
		t.Fatalf("replaced = %+v, want the first fuse", replaced)
	}
	if _, _, err := locks.SetFuse(s, locks.Fuse{Directory: "/w/b"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := locks.ReadFuses(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/w/a:armed:two", "/w/b:armed:"}, fuseDirs(got)); diff != "" {
		t.Fatalf("fuses (-want +got):\n%s", diff)
	}
	if !got[0].ExpiresAt.Equal(t0.Add(time.Hour)) || got[0].TTL != "1h0m0s" {
		t.Errorf("expiry %v ttl %q", got[0].ExpiresAt, got[0].TTL)
	}

	// extend without --ttl restarts the fuse's own TTL from now.
	*now = t0.Add(50 * time.Minute)
	f, err := locks.ExtendFuse(s, "/w/a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(110 * time.Minute); !f.ExpiresAt.Equal(want) {
		t.Errorf("extended to %v, want %v", f.ExpiresAt, want)
	}
	if f, err = locks.ExtendFuse(s, "/w/a", 5*time.Minute); err != nil || !f.ExpiresAt.Equal(t0.Add(55*time.Minute)) {
		t.Errorf("extend --ttl 5m: %v, %v", f.ExpiresAt, err)
	}
	var nf *locks.NoFuseError
	if _, err := locks.ExtendFuse(s, "/w/none", 0); !errors.As(err, &nf) {
		t.Errorf("extend of no fuse: %v", err)
	}

	if _, err := locks.CancelFuse(s, "/w/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := locks.CancelFuse(s, "/w/b"); !errors.As(err, &nf) {
		t.Errorf("second cancel: %v", err)
	}
	got, _ = locks.ReadFuses(s)
	if diff := cmp.Diff([]string{"/w/a:armed:two"}, fuseDirs(got)); diff != "" {
		t.Fatalf("after cancel (-want +got):\n%s", diff)
	}

	var types []string
	if err := s.ReadEvents(func(ev meta.Event, _ []byte) bool { types = append(types, ev.Type); return true }); err != nil {
		t.Fatal(err)
	}
	want := []string{"fuse.set", "fuse.set", "fuse.set", "fuse.extended", "fuse.extended", "fuse.cancelled"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
}

// Many processes notice the same expired fuse at once; exactly one fires it.
func TestFuseFiresOnceUnderConcurrentClaims(t *testing.T) {
	for round := 0; round < 20; round++ {
		s, p, now := newStore(t)
		for pid := 100; pid < 116; pid++ {
			p.alive[pid] = uint64(pid * 10)
		}
		if _, _, err := locks.SetFuse(s, locks.Fuse{Directory: "/w/a", Event: "done"}, time.Minute); err != nil {
			t.Fatal(err)
		}
		*now = t0.Add(2 * time.Minute)
		var fired atomic.Int32
		var wg sync.WaitGroup
		for pid := 100; pid < 116; pid++ {
			wg.Add(1)
			go func(pid int) {
				defer wg.Done()
				owner := locks.Owner{PID: pid, Start: uint64(pid * 10)}
				_, err := locks.FireDueFuses(context.Background(), s, owner, pid%2 == 0, func(context.Context, locks.Fuse) error {
					fired.Add(1)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}(pid)
		}
		wg.Wait()
		if n := fired.Load(); n != 1 {
			t.Fatalf("round %d: fired %d times, want 1", round, n)
		}
		if left, _ := locks.ReadFuses(s); len(left) != 0 {
			t.Fatalf("fuse still there after firing: %+v", left)
		}
	}
}

func TestFuseDeadFirerIsRetriedBySweepOnly(t *testing.T) {
	s, p, now := newStore(t)
	if _, _, err := locks.SetFuse(s, locks.Fuse{Directory: "/w/a"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	*now = t0.Add(time.Minute)
	first := locks.Owner{PID: 10, Start: 1000}
	claimed, err := locks.ClaimDueFuses(s, first, false)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	// Its firer is alive: nobody else may claim it, sweep or not.
	for _, retry := range []bool{false, true} {
		if c, _ := locks.ClaimDueFuses(s, locks.Owner{PID: 11, Start: 1100}, retry); len(c) != 0 {
			t.Fatalf("claimed a fuse whose firer is alive (retry=%v)", retry)
		}
	}
	var fe *locks.FiringError
	if _, err := locks.CancelFuse(s, "/w/a"); !errors.As(err, &fe) {
		t.Errorf("cancel of a firing fuse: %v", err)
	}
	p.kill(10)
	if c, _ := locks.ClaimDueFuses(s, locks.Owner{PID: 11, Start: 1100}, false); len(c) != 0 {
		t.Fatal("a lazy command retried a dead firer's fuse; only sweep does")
	}
	var runs int
	fired, err := locks.FireDueFuses(context.Background(), s, locks.Owner{PID: 11, Start: 1100}, true, func(context.Context, locks.Fuse) error {
		runs++
		return errors.New("script failed")
	})
	if err != nil || runs != 1 || len(fired) != 1 || fired[0].Fuse.Attempts != 2 || fired[0].Err == nil {
		t.Fatalf("retry: runs %d fired %+v err %v", runs, fired, err)
	}
	// The dead firer coming back (same PID reused is another process; here the
	// same identity) cannot remove anything any more.
	if err := locks.FuseFired(s, claimed[0], first); err != nil {
		t.Fatal(err)
	}
	if left, _ := locks.ReadFuses(s); len(left) != 0 {
		t.Fatalf("left: %+v", left)
	}
}

// A fuse set again while the old one fires is a new fuse: the old firer's
// completion leaves it alone.
func TestFuseSetWhileFiring(t *testing.T) {
	s, _, now := newStore(t)
	if _, _, err := locks.SetFuse(s, locks.Fuse{Directory: "/w/a", Label: "old"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	*now = t0.Add(time.Minute)
	owner := locks.Owner{PID: 10, Start: 1000}
	claimed, _ := locks.ClaimDueFuses(s, owner, false)
	if _, _, err := locks.SetFuse(s, locks.Fuse{Directory: "/w/a", Label: "new"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := locks.FuseFired(s, claimed[0], owner); err != nil {
		t.Fatal(err)
	}
	got, _ := locks.ReadFuses(s)
	if diff := cmp.Diff([]string{"/w/a:armed:new"}, fuseDirs(got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// A corrupt fuses.json is moved aside once, with a warning, by the first
// command that fires fuses; it does not fail every command after it.
func TestFusesCorruptMovedAside(t *testing.T) {
	s, _, _ := newStore(t)
	var warned []string
	s.Warn = func(f string, a ...any) { warned = append(warned, f) }
	if err := s.EnsureDir(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(locks.FusesFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := locks.ClaimDueFuses(s, locks.Owner{PID: 10, Start: 1000}, false); err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 {
		t.Errorf("warnings: %v", warned)
	}
	if fs, err := locks.ReadFuses(s); err != nil || len(fs) != 0 {
		t.Errorf("after: %v %v", fs, err)
	}
	m, _ := filepath.Glob(s.Path(locks.FusesFile) + ".corrupt-*")
	if len(m) != 1 {
		t.Errorf("corrupt copies: %v", m)
	}
}
