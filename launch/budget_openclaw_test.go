package launch

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/gateway/gatewaytest"
	"github.com/agentctl/agentctl/meta"
)

// openclawLauncher launches OpenClaw runs on a fake gateway whose runs stay
// active until aborted.
func openclawLauncher(t *testing.T) (*Launcher, *gatewaytest.Fake, string) {
	t.Helper()
	l, totals := budgetLauncher(t)
	g := gatewaytest.New(t, &gatewaytest.Fake{Token: "tok-budget"})
	l.Environ = append(l.Environ, "OPENCLAW_GATEWAY_URL="+g.URL(), "OPENCLAW_GATEWAY_TOKEN=tok-budget")
	l.Deps.Environ = l.Environ
	return l, g, totals
}

func openclawSpec(b *meta.Budget) Spec {
	return Spec{Adapter: "openclaw", Prompt: "work", Summary: "work", User: "tester", Budget: b}
}

func sessionEvents(t *testing.T, st *meta.Store) []string {
	var j []string
	for _, e := range journal(t, st) {
		if strings.HasPrefix(e, "session.") {
			j = append(j, e)
		}
	}
	return j
}

// An OpenClaw run past its budget is aborted on its gateway by the supervisor,
// the way `agentctl stop` aborts one: the reason recorded once, the breach
// journalled before the stop.
func TestSupervisorAbortsOpenClawRunPastBudget(t *testing.T) {
	for _, c := range []struct {
		name   string
		budget meta.Budget
		tokens int64
		reason string
	}{
		{"duration", meta.Budget{MaxDurationSeconds: 1.5}, 0, meta.ReasonBudgetDuration},
		{"tokens", meta.Budget{MaxTokens: 1000}, 1234, meta.ReasonBudgetTokens},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, g, totals := openclawLauncher(t)
			res, err := l.Start(context.Background(), openclawSpec(&c.budget))
			if err != nil {
				t.Fatal(err)
			}
			id := res.Record.ID
			if c.tokens > 0 {
				time.Sleep(2 * budgetPollMin)
				if r := l.record(id); r.EndedAt != nil || r.Breach != nil || g.AbortCount() != 0 {
					t.Fatalf("stopped under its budget: %+v", r)
				}
				setTotals(t, totals, c.tokens)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			fin, err := l.WaitLaunch(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if fin.ExitReason != c.reason || fin.Breach == nil || fin.Breach.By != "supervisor" || !fin.Breach.Stopped {
				t.Fatalf("record after the breach: reason %q breach %+v", fin.ExitReason, fin.Breach)
			}
			if fin.ExitCode == nil || *fin.ExitCode != 1 || fin.StopRequested == nil {
				t.Errorf("exit code %v, stop requested %v; want 1 and a stop request", fin.ExitCode, fin.StopRequested)
			}
			if c.reason == meta.ReasonBudgetDuration {
				if took := fin.EndedAt.Sub(*fin.ConfirmedAt); took < 1500*time.Millisecond || took > 4500*time.Millisecond {
					t.Errorf("ended %s after the run started; want 1.5 s plus the abort", took)
				}
			}
			if n := g.AbortCount(); n != 1 {
				t.Errorf("the gateway saw %d aborts; want 1", n)
			}
			want := []string{meta.EventLaunched, meta.EventBudgetExceeded, meta.EventStopped}
			if j := sessionEvents(t, l.Store); fmt.Sprint(j) != fmt.Sprint(want) {
				t.Errorf("journal = %v; want %v", j, want)
			}
		})
	}
}

// Its supervisor killed, an OpenClaw run past its budget is aborted by sweep,
// exactly once however often sweep runs.
func TestSweepAbortsOpenClawRunPastBudgetOnce(t *testing.T) {
	l, g, totals := openclawLauncher(t)
	res, err := l.Start(context.Background(), openclawSpec(&meta.Budget{MaxTokens: 10}))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Record
	eventually(t, 5*time.Second, "the run to be confirmed", func() bool { x := l.record(r.ID); return x.Gateway != nil })
	r = *l.record(r.ID)
	if err := syscall.Kill(r.SupervisorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the supervisor to die", func() bool { return !l.Store.IsAlive(r.SupervisorPID, r.SupervisorStart, "") })
	d := l.Deps
	d.Totals = fileTotals(totals)
	ctx := context.Background()
	if acted, err := d.SweepBudgets(ctx); err != nil || len(acted) != 0 {
		t.Fatalf("sweep under budget acted on %v (%v)", acted, err)
	}
	setTotals(t, totals, 11)
	for i := 0; i < 3; i++ {
		if _, err := d.SweepBudgets(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := d.FinaliseDead(ctx); err != nil {
			t.Fatal(err)
		}
	}
	fin := l.record(r.ID)
	if fin.FinalisedAt == nil || fin.ExitReason != meta.ReasonBudgetTokens || fin.Breach == nil || fin.Breach.By != "sweep" || !fin.Breach.Stopped {
		t.Fatalf("after sweeps: finalised %v reason %q breach %+v", fin.FinalisedAt, fin.ExitReason, fin.Breach)
	}
	if g.RunActive(fin.Gateway.RunID) || g.AbortCount() != 1 {
		t.Errorf("run active %v after %d aborts; want stopped by one", g.RunActive(fin.Gateway.RunID), g.AbortCount())
	}
	if j := journal(t, l.Store); count(j, meta.EventBudgetExceeded) != 1 || count(j, meta.EventStopped) != 1 {
		t.Errorf("journal = %v; want one budget_exceeded and one stopped", j)
	}
}
