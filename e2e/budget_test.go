package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// Budgets (README "Budgets") against the real agents: every model turn of the
// stub reports turnTokens; the first two turns ask for a shell command, the
// third is held, so an agent that is not stopped waits there for ever.
const turnTokens = 1000

func budgetScript(hold string) stub.Script {
	var mu sync.Mutex
	results := 0
	u := &stub.Usage{Input: 500, Output: 500}
	return func(r *stub.Request) stub.Reply {
		if len(r.Tools) == 0 {
			return stub.Keywords(r) // auxiliary requests (titles)
		}
		if !r.ToolResult {
			return stub.Reply{Tool: &stub.ToolCall{Command: "echo one"}, Usage: u}
		}
		mu.Lock()
		results++
		n := results
		mu.Unlock()
		if n == 1 {
			return stub.Reply{Tool: &stub.ToolCall{Command: "echo two"}, Usage: u}
		}
		return stub.Reply{Hold: hold, Usage: u}
	}
}

type budgetStatus struct {
	Status     string `json:"status"`
	ExitReason string `json:"exit_reason"`
	Tokens     *struct {
		Input, Output int64
		CacheRead     int64 `json:"cache_read"`
		CacheWrite    int64 `json:"cache_write"`
	} `json:"tokens"`
	EvidenceDetail string `json:"evidence_detail"`
}

func (s budgetStatus) total() int64 {
	if s.Tokens == nil {
		return 0
	}
	return s.Tokens.Input + s.Tokens.Output + s.Tokens.CacheRead + s.Tokens.CacheWrite
}

// journalTypes is the session events of the journal for one session, in order.
func journalTypes(t *testing.T, a *harness.Agentctl, id string) []string {
	t.Helper()
	out, errOut, code := a.Run(t, "events", "--json", "--type", "session")
	if code != 0 {
		t.Fatalf("events: exit %d\n%s", code, errOut)
	}
	var types []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev eventJSON
		if json.Unmarshal([]byte(l), &ev) == nil && ev.SessionID == id {
			types = append(types, ev.Type)
		}
	}
	return types
}

// waitJournal waits until the journal's session events of id are want
// (space-separated, in order). `wait` returns once the supervisor recorded the
// end in the launch record; the supervisor journals session.stopped after that
// (finalise: record, unlock, journal), a moment later under load.
func waitJournal(t *testing.T, a *harness.Agentctl, id, want string) {
	t.Helper()
	harness.Eventually(t, 20*time.Second, func() string {
		if got := journalTypes(t, a, id); strings.Join(got, " ") != want {
			return fmt.Sprintf("journal for %s: %v; want %s", id, got, want)
		}
		return ""
	})
}

// tokenBudget launches adapter with --max-tokens between one and two turns:
// the agent is stopped after its second turn, wait exits 1, status says
// budget:tokens with totals over the limit by at most one turn, the journal has
// the breach before the stop, and on-complete and the webhook fire once with
// the reason.
func tokenBudget(t *testing.T, adapter string, srv *stub.Server, hold string, a *harness.Agentctl, recv *webhookReceiver, args ...string) {
	const limit = turnTokens * 3 / 2
	hookOut := filepath.Join(t.TempDir(), "hook")
	hook := fmt.Sprintf(`printf '%%s %%s\n' "$AGENTCTL_EXIT_REASON" "$AGENTCTL_SESSION_ID" >> '%s'`, hookOut)
	ac := &agentCase{adapter: adapter, a: a, srv: srv, cwd: harness.WorkDir(t, "budget")}
	l := ac.launch(t, a, "run two commands", append([]string{"--max-tokens", fmt.Sprint(limit), "--on-complete", hook}, args...)...)
	start := time.Now()
	out, errOut, code := a.Run(t, "wait", "--timeout", "90s", l.ID)
	if code != 1 || !strings.Contains(out, "budget:tokens") {
		t.Fatalf("wait: exit %d %q, want 1 naming budget:tokens\n%s\n%s", code, out, errOut, readLog(a.State))
	}
	t.Logf("stopped %s after %s", l.ID, time.Since(start).Round(time.Millisecond))
	var st budgetStatus
	a.JSON(t, &st, "status", l.ID)
	if st.ExitReason != meta.ReasonBudgetTokens || st.Status != "stopped" {
		t.Errorf("status: %+v; want stopped with exit_reason budget:tokens", st)
	}
	if got := st.total(); got <= limit || got > limit+turnTokens {
		t.Errorf("tokens at the stop: %d; want over %d by at most one turn (%d)", got, limit, turnTokens)
	}
	if _, err := proc.Lookup(l.PID); err == nil {
		t.Errorf("%s pid %d alive after the budget stop", adapter, l.PID)
	}
	held := 0
	for _, ex := range srv.Exchanges() {
		if ex.Reply.Hold == hold {
			held++
		}
	}
	if held > 1 {
		t.Errorf("the third turn was asked %d times; the agent must be stopped by then", held)
	}
	waitJournal(t, a, l.ID, "session.launched session.budget_exceeded session.stopped")
	if recv == nil {
		return
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(recv.deliveries()) == 0 || len(hookLines(hookOut)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no webhook (%d) or on-complete (%v) after the budget stop", len(recv.deliveries()), hookLines(hookOut))
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.Run(t, "sweep") // nothing more to fire
	time.Sleep(time.Second)
	if got := hookLines(hookOut); len(got) != 1 || got[0] != "budget:tokens "+l.ID {
		t.Errorf("on-complete ran %q; want once with budget:tokens", got)
	}
	ds := recv.deliveries()
	if len(ds) != 1 {
		t.Fatalf("%d webhook deliveries, want 1", len(ds))
	}
	var p struct {
		ExitReason string         `json:"exit_reason"`
		Budget     map[string]any `json:"budget"`
	}
	if err := json.Unmarshal(ds[0].Body, &p); err != nil || p.ExitReason != "budget:tokens" || p.Budget["reason"] != "budget:tokens" || p.Budget["by"] != "supervisor" {
		t.Errorf("webhook body %s", ds[0].Body)
	}
}

func TestBudgetTokensClaude(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, budgetScript("cc-third"))
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	recv := newWebhookReceiver(t)
	a := agentctlFor(t, c.Home, c.Env, harness.Env{"AGENTCTL_CLAUDE_BIN": c.Bin,
		"AGENTCTL_WEBHOOK_URL": recv.URL, "AGENTCTL_WEBHOOK_SECRET": recv.Secret})
	tokenBudget(t, "claude-code", srv, "cc-third", a, recv)
}

func TestBudgetTokensCodex(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, budgetScript("codex-third"))
	c := harness.NewCodex(t, srv)
	recv := newWebhookReceiver(t)
	a := agentctlFor(t, c.Home, c.Env, harness.Env{"AGENTCTL_CODEX_BIN": c.Bin,
		"AGENTCTL_WEBHOOK_URL": recv.URL, "AGENTCTL_WEBHOOK_SECRET": recv.Secret})
	tokenBudget(t, "codex", srv, "codex-third", a, recv)
}

// --max-duration on a reply the stub holds: stopped within the limit plus the
// stop's escalation (SIGINT 3 s, SIGTERM 5 s, SIGKILL 2 s).
func TestBudgetDurationClaude(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	a := agentctlFor(t, c.Home, c.Env, harness.Env{"AGENTCTL_CLAUDE_BIN": c.Bin})
	ac := &agentCase{adapter: "claude-code", a: a, srv: srv, cwd: harness.WorkDir(t, "slow")}
	l := ac.launch(t, a, "think long HOLD=cc-slow", "--max-duration", "3s")
	waitHeld(t, srv, "cc-slow")
	out, _, code := a.Run(t, "wait", "--timeout", "60s", l.ID)
	if code != 1 || !strings.Contains(out, "budget:duration") {
		t.Fatalf("wait: exit %d %q; want 1 naming budget:duration", code, out)
	}
	recs, _ := meta.NewStore(a.State).ReadLaunches()
	r := meta.FindLaunch(recs, l.LaunchID)
	if r == nil || r.EndedAt == nil || r.ConfirmedAt == nil || r.ExitReason != meta.ReasonBudgetDuration {
		t.Fatalf("launch record: %+v", r)
	}
	took := r.EndedAt.Sub(*r.ConfirmedAt)
	if took < 3*time.Second || took > 3*time.Second+10*time.Second+2*time.Second {
		t.Errorf("ended %s after the confirmation; want 3 s + the escalation at most", took)
	}
	t.Logf("stopped %s after the confirmation (signals %v)", took.Round(time.Millisecond), r.Stop)
}

// The supervisor is SIGKILLed; the run then goes over its budget: the next
// sweep stops it and finalises it, and sweeping again does nothing more.
func TestBudgetSweepAfterSupervisorDied(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	var mu sync.Mutex
	results := 0
	u := &stub.Usage{Input: 500, Output: 500}
	srv := stub.Start(t, func(r *stub.Request) stub.Reply {
		if len(r.Tools) == 0 {
			return stub.Keywords(r)
		}
		if !r.ToolResult {
			return stub.Reply{Tool: &stub.ToolCall{Command: "echo one"}, Usage: u, Hold: "sw-first"}
		}
		mu.Lock()
		results++
		n := results
		mu.Unlock()
		if n == 1 {
			return stub.Reply{Tool: &stub.ToolCall{Command: "echo two"}, Usage: u}
		}
		return stub.Reply{Hold: "sw-third", Usage: u}
	})
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	recv := newWebhookReceiver(t)
	a := agentctlFor(t, c.Home, c.Env, harness.Env{"AGENTCTL_CLAUDE_BIN": c.Bin,
		"AGENTCTL_WEBHOOK_URL": recv.URL, "AGENTCTL_WEBHOOK_SECRET": recv.Secret})
	ac := &agentCase{adapter: "claude-code", a: a, srv: srv, cwd: harness.WorkDir(t, "orphan")}
	l := ac.launch(t, a, "run two commands", "--max-tokens", fmt.Sprint(turnTokens*3/2))
	waitHeld(t, srv, "sw-first")
	recs, _ := meta.NewStore(a.State).ReadLaunches()
	r := meta.FindLaunch(recs, l.LaunchID)
	if r == nil || r.SupervisorPID == 0 {
		t.Fatalf("launch record %+v", r)
	}
	if err := syscall.Kill(r.SupervisorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.Release("sw-first")
	waitHeld(t, srv, "sw-third")
	if _, err := proc.Lookup(l.PID); err != nil {
		t.Fatalf("the agent died with its supervisor: %v", err)
	}
	var stopped []string
	sweep := func() {
		var rep struct {
			BudgetStopped []string `json:"budget_stopped"`
			Finalised     []string `json:"finalised"`
		}
		a.JSON(t, &rep, "sweep")
		stopped = append(stopped, rep.BudgetStopped...)
	}
	// The third request is held once the second reply was read; Claude may
	// append that reply's usage to the transcript a moment later (under load
	// a sweep right away saw the run under its budget): sweep until one stops
	// it, then twice more, which must do nothing.
	harness.Eventually(t, 20*time.Second, func() string {
		if sweep(); len(stopped) == 0 {
			return "no sweep stopped " + l.LaunchID + " (its transcript may not hold the second reply's usage yet)"
		}
		return ""
	})
	sweep()
	sweep()
	if len(stopped) != 1 || stopped[0] != l.LaunchID {
		t.Errorf("sweeps stopped %v; want %s once", stopped, l.LaunchID)
	}
	if _, err := proc.Lookup(l.PID); err == nil {
		t.Errorf("claude pid %d alive after sweep", l.PID)
	}
	var st budgetStatus
	a.JSON(t, &st, "status", l.ID)
	if st.ExitReason != meta.ReasonBudgetTokens {
		t.Errorf("status after sweep: %+v", st)
	}
	if got := journalTypes(t, a, l.ID); strings.Join(got, " ") != "session.launched session.budget_exceeded session.stopped" {
		t.Errorf("journal: %v", got)
	}
	if n := len(recv.deliveries()); n != 1 {
		t.Errorf("%d webhook deliveries, want 1", n)
	}
}

// OpenClaw has no local process: --max-duration on a turn the stub holds ends
// in the supervisor aborting the run on the real gateway (sessions.abort), the
// run finalised once with the reason: wait exits 1, the journal has the breach
// before the stop, on-complete and the webhook fire once with budget:duration.
func TestBudgetDurationOpenClaw(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	gw := harness.StartOpenClaw(t, srv)
	recv := newWebhookReceiver(t)
	// A gateway busy with a turn can take seconds to answer sessions.list on a
	// loaded machine: a longer adapter timeout than the 5 s default.
	a := agentctlFor(t, gw.Home, gw.Env, harness.Env{"OPENCLAW_GATEWAY_TOKEN": gw.Token, "OPENCLAW_GATEWAY_URL": gw.URL,
		"AGENTCTL_WEBHOOK_URL": recv.URL, "AGENTCTL_WEBHOOK_SECRET": recv.Secret, "AGENTCTL_ADAPTER_TIMEOUT": "30s"})
	hookOut := filepath.Join(t.TempDir(), "hook")
	hook := fmt.Sprintf(`printf '%%s %%s\n' "$AGENTCTL_EXIT_REASON" "$AGENTCTL_SESSION_ID" >> '%s'`, hookOut)
	ac := &agentCase{adapter: "openclaw", a: a, srv: srv, gateway: gw.Proc}
	// A fresh gateway's first turn can take longer than the budget to reach the
	// model on a loaded machine: one unbudgeted turn first, so that the
	// budgeted one is usually held by the time it runs out.
	warm := ac.launch(t, a, "warm up WORDS=2")
	harness.Eventually(t, 120*time.Second, func() string {
		recs, _ := meta.NewStore(a.State).ReadLaunches()
		if r := meta.FindLaunch(recs, warm.LaunchID); r == nil || r.EndedAt == nil {
			return "the warm-up turn has not ended"
		}
		return ""
	})
	l := ac.launch(t, a, "think long HOLD=oc-slow", "--max-duration", "10s", "--on-complete", hook)
	// On a loaded machine even a warm gateway can take seconds to reach the
	// model: the stop is checked either way, and whether the reply was held
	// when the time ran out is logged.
	hctx, hcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer hcancel()
	held := srv.WaitHeld(hctx, "oc-slow") == nil
	t.Logf("reply held before the budget ran out: %v", held)
	out, errOut, code := a.Run(t, "wait", "--timeout", "60s", l.ID)
	if code != 1 || !strings.Contains(out, "budget:duration") {
		t.Fatalf("wait: exit %d %q; want 1 naming budget:duration\n%s\n%s", code, out, errOut, readLog(a.State))
	}
	recs, _ := meta.NewStore(a.State).ReadLaunches()
	r := meta.FindLaunch(recs, l.LaunchID)
	if r == nil || r.EndedAt == nil || r.ConfirmedAt == nil || r.StopRequested == nil || r.ExitReason != meta.ReasonBudgetDuration || r.Breach == nil || !r.Breach.Stopped {
		t.Fatalf("launch record: %+v", r)
	}
	// 10 s, then the abort and the gateway marking the run ended, which a
	// loaded machine's gateway takes up to tens of seconds for.
	if took := r.StopRequested.Sub(*r.ConfirmedAt); took < 10*time.Second || took > 16*time.Second {
		// The supervisor sets a timer for the budget; the slack is for a
		// loaded CI machine, not for polling.
		t.Errorf("abort sent %s after the confirmation; want 10 s (+ up to 6 s on a loaded machine)", took)
	}
	if took := r.EndedAt.Sub(*r.ConfirmedAt); took > 10*time.Second+40*time.Second {
		t.Errorf("ended %s after the confirmation; want 10 s + the abort", took)
	}
	t.Logf("abort sent %s and run ended %s after the confirmation", r.StopRequested.Sub(*r.ConfirmedAt).Round(time.Millisecond),
		r.EndedAt.Sub(*r.ConfirmedAt).Round(time.Millisecond))
	var st budgetStatus
	a.JSON(t, &st, "status", l.ID)
	if st.ExitReason != meta.ReasonBudgetDuration || st.Status != "stopped" {
		t.Errorf("status: %+v; want stopped with exit_reason budget:duration", st)
	}
	waitJournal(t, a, l.ID, "session.launched session.budget_exceeded session.stopped")
	budgetHook := func() []webhookDelivery { // the warm-up turn delivers one too
		var out []webhookDelivery
		for _, d := range recv.deliveries() {
			if strings.Contains(string(d.Body), l.ID) {
				out = append(out, d)
			}
		}
		return out
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(budgetHook()) == 0 || len(hookLines(hookOut)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no webhook (%d) or on-complete (%v) after the budget stop", len(budgetHook()), hookLines(hookOut))
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.Run(t, "sweep") // nothing more to fire
	time.Sleep(time.Second)
	if got := hookLines(hookOut); len(got) != 1 || got[0] != "budget:duration "+l.ID {
		t.Errorf("on-complete ran %q; want once with budget:duration", got)
	}
	if ds := budgetHook(); len(ds) != 1 || !strings.Contains(string(ds[0].Body), `"exit_reason":"budget:duration"`) {
		t.Errorf("%d webhook deliveries (%v); want 1 with the reason", len(ds), ds)
	}
}
