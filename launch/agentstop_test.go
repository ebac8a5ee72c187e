package launch

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StopViaAgent: the agent's own stop ending the process needs no signal; a
// failing or ineffective one falls back to the signal ladder, and the result
// says which path ended the process.
func TestStopViaAgent(t *testing.T) {
	steps := []StopStep{{syscall.SIGTERM, 2 * time.Second}, {syscall.SIGKILL, 2 * time.Second}}
	for _, tc := range []struct {
		name      string
		ask       func(pid int) func(context.Context) error
		wantVia   string
		wantSigs  int
		wantError string
	}{
		{"agent stops it", func(pid int) func(context.Context) error {
			return func(context.Context) error { return syscall.Kill(pid, syscall.SIGKILL) }
		}, "agent", 0, ""},
		{"agent stop fails", func(int) func(context.Context) error {
			return func(context.Context) error { return errors.New("`claude stop x` exited 1: No session matching") }
		}, "signals", 1, "No session matching"},
		{"agent stop returns, process lives", func(int) func(context.Context) error {
			return func(context.Context) error { return nil }
		}, "signals", 1, "still alive"},
		{"agent stop hangs", func(int) func(context.Context) error {
			return func(ctx context.Context) error { <-ctx.Done(); return errors.New("did not return in time") }
		}, "signals", 1, "in time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := startGroup(t, "sleep 30")
			pid := cmd.Process.Pid
			d := testDeps(t)
			var sent []int
			kill := d.Kill
			d.Kill = func(p int, sig syscall.Signal) error { sent = append(sent, p); return kill(p, sig) }
			target := StopTarget{PID: pid, Start: ticks(t, pid), BootID: d.Procs.BootID()}
			res, err := d.StopViaAgent(context.Background(), target, tc.ask(pid), 300*time.Millisecond, 300*time.Millisecond, StopOptions{Steps: steps})
			if err != nil {
				t.Fatal(err)
			}
			if !res.ExitObserved || res.Via != tc.wantVia || len(res.Signals) != tc.wantSigs || !strings.Contains(res.AgentErr, tc.wantError) {
				t.Errorf("result %+v; want exit observed via %s, %d signals, agent error containing %q", res, tc.wantVia, tc.wantSigs, tc.wantError)
			}
			for _, p := range sent {
				if p != pid {
					t.Errorf("signalled %d, not the target %d alone", p, pid)
				}
			}
		})
	}
}
