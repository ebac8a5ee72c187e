package launch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// fileTotals is a Deps.Totals that reads the session's token total from a file
// the test writes (the read side is main's business; see the e2e tests).
func fileTotals(path string) func(context.Context, *meta.Launch) (meta.Usage, error) {
	return func(context.Context, *meta.Launch) (meta.Usage, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return meta.Usage{}, err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return meta.Usage{Tokens: n}, err
	}
}

func budgetLauncher(t *testing.T) (*Launcher, string) {
	t.Helper()
	l := testLauncher(t)
	totals := filepath.Join(t.TempDir(), "totals")
	if err := os.WriteFile(totals, []byte("0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l.Environ = append(l.Environ, "LAUNCH_TEST_TOTALS="+totals)
	return l, totals
}

func setTotals(t *testing.T, path string, n int64) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(fmt.Sprintln(n)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// Under the limit the agent runs on; past it the supervisor stops it, records
// budget:tokens with the figures, and journals the breach before the stop.
func TestSupervisorStopsRunPastTokenBudget(t *testing.T) {
	l, totals := budgetLauncher(t)
	sp := spec(workdir(t), "work", "FAKE_SLEEP=60")
	sp.Budget = &meta.Budget{MaxTokens: 1000}
	res, err := l.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	id := res.Record.ID
	setTotals(t, totals, 1000) // at the limit is within it
	time.Sleep(2 * budgetPollMin)
	if r := l.record(id); r.EndedAt != nil || r.Breach != nil {
		t.Fatalf("stopped at the limit: %+v", r)
	}
	setTotals(t, totals, 1234)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fin, err := l.WaitLaunch(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if fin.ExitReason != meta.ReasonBudgetTokens || fin.Breach == nil || fin.Breach.Usage.Tokens != 1234 || fin.Breach.By != "supervisor" || !fin.Breach.Stopped {
		t.Fatalf("record after the breach: reason %q breach %+v", fin.ExitReason, fin.Breach)
	}
	if fin.StopRequested == nil {
		t.Error("no stop request on record")
	}
	var j []string
	for _, e := range journal(t, l.Store) {
		if strings.HasPrefix(e, "session.") {
			j = append(j, e)
		}
	}
	want := []string{meta.EventLaunched, meta.EventBudgetExceeded, meta.EventStopped}
	if fmt.Sprint(j) != fmt.Sprint(want) {
		t.Errorf("journal = %v; want %v", j, want)
	}
}

// --max-duration is enforced on time, without waiting for a poll to come round.
func TestSupervisorStopsRunPastDuration(t *testing.T) {
	l, _ := budgetLauncher(t)
	sp := spec(workdir(t), "work", "FAKE_SLEEP=60")
	sp.Budget = &meta.Budget{MaxDurationSeconds: 1.5}
	res, err := l.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fin, err := l.WaitLaunch(ctx, res.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	took := fin.EndedAt.Sub(*fin.ConfirmedAt)
	// 1.5 s + SIGINT's 3 s window at most (the fake agent dies on SIGINT).
	if fin.ExitReason != meta.ReasonBudgetDuration || took < 1500*time.Millisecond || took > 4500*time.Millisecond {
		t.Fatalf("reason %q after %s; want budget:duration after 1.5s–4.5s", fin.ExitReason, took)
	}
}

// A supervisor killed before the breach cannot act on it: sweep does, exactly
// once however often it runs.
func TestSweepStopsRunPastBudgetOnce(t *testing.T) {
	l, totals := budgetLauncher(t)
	sp := spec(workdir(t), "work", "FAKE_SLEEP=60")
	sp.Budget = &meta.Budget{MaxTokens: 10}
	res, err := l.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Record
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
	if fin.FinalisedAt == nil || fin.ExitReason != meta.ReasonBudgetTokens || fin.Breach == nil || fin.Breach.By != "sweep" {
		t.Fatalf("after sweeps: finalised %v reason %q breach %+v", fin.FinalisedAt, fin.ExitReason, fin.Breach)
	}
	if l.Store.AgentAlive(fin) {
		t.Fatal("the agent is still alive")
	}
	j := journal(t, l.Store)
	if count(j, meta.EventBudgetExceeded) != 1 || count(j, meta.EventStopped) != 1 {
		t.Errorf("journal = %v; want one budget_exceeded and one stopped", j)
	}
}

func TestParseBudgetNamesTheFlag(t *testing.T) {
	for _, c := range []struct{ d, c, n, want string }{
		{"-3s", "", "", "--max-duration"},
		{"soon", "", "", "--max-duration"},
		{"", "-1", "", "--max-cost"},
		{"", "lots", "", "--max-cost"},
		{"", "", "-5", "--max-tokens"},
		{"", "", "1e3", "--max-tokens"},
		{"", "", "0", "--max-tokens"},
	} {
		if _, err := meta.ParseBudget(c.d, c.c, c.n); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseBudget(%q, %q, %q) = %v; want an error naming %s", c.d, c.c, c.n, err, c.want)
		}
	}
	b, err := meta.ParseBudget("90s", "$0.50", "200_000")
	if err != nil || b != (meta.Budget{MaxDurationSeconds: 90, MaxCostUSD: 0.5, MaxTokens: 200000}) {
		t.Errorf("ParseBudget = %+v, %v", b, err)
	}
}

// A matrix entry carries its own budget; a bad one names the entry and the key.
func TestReadMatrixBudget(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.yaml")
	os.WriteFile(p, []byte("prompt: p\nmatrix:\n  - adapter: claude-code\n    max_tokens: 5000\n    max_duration: 10m\n  - adapter: codex\n"), 0o644)
	_, slots, err := ReadMatrix(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 2 || slots[0].Budget == nil || *slots[0].Budget != (meta.Budget{MaxTokens: 5000, MaxDurationSeconds: 600}) || slots[1].Budget != nil {
		t.Fatalf("slots %+v", slots)
	}
	os.WriteFile(p, []byte("matrix:\n  - adapter: codex\n  - adapter: pi\n    max_cost: cheap\n"), 0o644)
	if _, _, err := ReadMatrix(p, nil); err == nil || !strings.Contains(err.Error(), "matrix entry 2: max_cost") {
		t.Errorf("bad max_cost: %v", err)
	}
}

// A resumed session's earlier history is not the run's spending: the budget
// counts from the totals the session had when the run was confirmed.
func TestResumeBudgetCountsFromItsStart(t *testing.T) {
	l, totals := budgetLauncher(t)
	setTotals(t, totals, 50_000)
	sp := spec(workdir(t), "go on", "FAKE_SLEEP=60")
	sp.Kind, sp.SessionID = KindResume, "6b1f6a52-1111-4222-8333-444455556666"
	sp.Budget = &meta.Budget{MaxTokens: 1000}
	res, err := l.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	id := res.Record.ID
	eventually(t, 5*time.Second, "the baseline", func() bool { r := l.record(id); return r.BudgetBase != nil })
	if b := l.record(id).BudgetBase; b.Tokens != 50_000 {
		t.Fatalf("baseline %+v; want the 50000 tokens the session had", b)
	}
	setTotals(t, totals, 50_900)
	time.Sleep(2 * budgetPollMin)
	if r := l.record(id); r.Breach != nil || r.EndedAt != nil {
		t.Fatalf("stopped at 900 tokens of its own: %+v", r.Breach)
	}
	setTotals(t, totals, 51_001)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fin, err := l.WaitLaunch(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if fin.ExitReason != meta.ReasonBudgetTokens || fin.Breach.Usage.Tokens != 1001 {
		t.Errorf("reason %q breach %+v; want budget:tokens at 1001 tokens of its own", fin.ExitReason, fin.Breach)
	}
}
