package launch

import (
	"context"
	"testing"

	"github.com/agentctl/agentctl/locks"
)

// The directory lock LockAll took is Start's to release on every failure and
// the supervisor's once the agent is confirmed; one slot's failure never
// touches another slot's lock.
func TestStartLeaseReleasedUnlessConfirmed(t *testing.T) {
	l := testLauncher(t)
	ctx := context.Background()
	held := func() map[string]bool {
		ls, err := locks.List(l.Store)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, lk := range ls {
			m[lk.LaunchID] = true
		}
		return m
	}
	bad, noSup, good := spec(workdir(t), "x"), spec(workdir(t), "x"), spec(workdir(t), "x", "FAKE_SLEEP=30")
	bad.UserEnv = []string{"NOVALUE"} // refused by Plan, before anything is written
	specs := []*Spec{&bad, &noSup, &good}
	if _, err := l.LockAll(specs); err != nil {
		t.Fatal(err)
	}
	if h := held(); !h[bad.LaunchID] || !h[noSup.LaunchID] || !h[good.LaunchID] {
		t.Fatalf("after LockAll: locks %v", h)
	}
	if _, err := l.Start(ctx, bad); err == nil {
		t.Fatal("a bad --env started")
	}
	// A supervisor that cannot start: the record is written, then the launch fails.
	broken := *l
	broken.Self = "/nonexistent/agentctl"
	if _, err := broken.Start(ctx, noSup); err == nil {
		t.Fatal("started without a supervisor")
	}
	if h := held(); h[bad.LaunchID] || h[noSup.LaunchID] || !h[good.LaunchID] {
		t.Fatalf("after two failed starts: locks %v, want only %s", h, good.LaunchID)
	}
	if _, err := l.Start(ctx, good); err != nil {
		t.Fatal(err)
	}
	if h := held(); !h[good.LaunchID] {
		t.Fatalf("the confirmed launch lost its lock: %v", h)
	}
}
