package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// A real `codex exec` thread, first while the stub holds its model reply, then
// done, then resumed (held again, then done): agentctl reports it running on the
// thread-writer lock with the holder's pid while a turn is open, stopped on the
// rollout afterwards, and the cumulative token_count of both turns — never a sum
// of the cumulative lines (docs/agents/codex.md §3, §4).
func TestCodexReadSide(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	for _, v := range harness.CodexVersions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			codexReadSide(t, v)
		})
	}
}

func codexReadSide(t *testing.T, version string) {
	srv := stub.Start(t, nil)
	c := harness.NewCodexVersion(t, version, srv)
	dir := harness.WorkDir(t, "billing")
	a := harness.NewAgentctl(t, c.Home)

	const prompt = "Summarise the invoices HOLD=codex-new"
	m := markNow(srv)
	p := c.Exec(t, dir, prompt)
	id := p.WaitStdout(t, 30*time.Second, "thread.started", harness.CodexThreadID)
	waitHeldBy(t, srv, "codex-new", p)
	waitRollout(t, c, prompt)
	liveCodex(t, "new thread, reply held", a, id, p, nil)
	checkPeekLive(t, "peek mid-turn", a, id, prompt)

	srv.Release("codex-new")
	waitExit(t, "codex exec", p)
	first := since(srv, m)
	if len(first) != 1 || !first[0].Completed {
		t.Fatalf("stub saw %d model requests for the first turn; want one completed", len(first))
	}
	want := view{ID: id, Adapter: "codex", Status: "stopped", Cwd: dir,
		Model: lastModel(first), Prompt: prompt, Tokens: tokens(sent(first))}
	d, _ := only(t, "list -a after turn 1", listDetails(t, a, "-a"), id)
	checkSession(t, "list -a after turn 1", d.Session, want)
	checkStopped(t, "list -a after turn 1", d)

	// Resume appends the next turn to the same rollout (docs/agents/codex.md §7).
	const again = "And the totals? HOLD=codex-resume"
	m = markNow(srv)
	p = c.Resume(t, dir, id, again)
	if got := p.WaitStdout(t, 30*time.Second, "thread.started", harness.CodexThreadID); got != id {
		t.Fatalf("resume started thread %s, want %s", got, id)
	}
	waitHeldBy(t, srv, "codex-resume", p)
	waitRollout(t, c, again)
	// Mid-turn the totals are still those of turn 1.
	firstTokens := tokens(sent(first))
	liveCodex(t, "resumed thread, reply held", a, id, p, &firstTokens)
	checkPeekLive(t, "peek mid-turn", a, id, again)

	srv.Release("codex-resume")
	waitExit(t, "codex exec resume", p)
	resumed := since(srv, m)
	if len(resumed) != 1 || !resumed[0].Completed {
		t.Fatalf("stub saw %d model requests for the resumed turn; want one completed", len(resumed))
	}
	if r := c.Rollouts(); len(r) != 1 {
		t.Fatalf("rollouts %v; resume must append to the one file", r)
	}

	want = view{ID: id, Adapter: "codex", Status: "stopped", Cwd: dir,
		Model: lastModel(first, resumed), Prompt: prompt, Tokens: tokens(sent(first, resumed))}
	ds := listDetails(t, a, "-a")
	if len(ds) != 1 {
		t.Errorf("list -a shows %d sessions; the resume must not make a second one", len(ds))
	}
	d, _ = only(t, "list -a after the resume", ds, id)
	checkSession(t, "list -a after the resume", d.Session, want)
	st := detailOf(t, a, id)
	checkSession(t, "status after the resume", st.Session, want)
	checkStopped(t, "status after the resume", st)
	// Codex records no cost: agentctl may estimate one, never claim Codex said so.
	if st.CostSource == "agent" {
		t.Errorf("status: cost_source agent, but Codex records no cost")
	}
	if alive := listDetails(t, a); len(alive) != 0 {
		t.Errorf("list (alive only) shows %d sessions after codex exited: %+v", len(alive), alive)
	}
	checkPeek(t, "peek", a.Peek(t, id), []string{prompt, again}, texts(append(first, resumed...)))
}

// waitRollout waits until Codex's one rollout records prompt: the thread is on
// disk (what agentctl reads), whatever agentctl makes of it.
func waitRollout(t *testing.T, c *harness.Codex, prompt string) {
	t.Helper()
	harness.Eventually(t, 15*time.Second, func() string {
		r := c.Rollouts()
		if len(r) != 1 {
			return fmt.Sprintf("rollouts %v; want one", r)
		}
		if b, _ := os.ReadFile(r[0]); !strings.Contains(string(b), prompt) {
			return "the prompt is not in the rollout yet"
		}
		return ""
	})
}

// liveCodex checks a thread with an open turn: running on the thread-writer lock
// (evidence "registry": Codex's own live-writer record), pid = the lock holder.
func liveCodex(t *testing.T, what string, a *harness.Agentctl, id string, p *harness.Proc, tok *harness.Tokens) {
	t.Helper()
	d := detailOf(t, a, id)
	checkLive(t, what+": status", d, p, "registry", false)
	if !strings.Contains(d.EvidenceDetail, "thread-writer lock") {
		t.Errorf("%s: evidence detail %q does not name the thread-writer lock", what, d.EvidenceDetail)
	}
	if tok != nil && (d.Tokens == nil || *d.Tokens != *tok) {
		t.Errorf("%s: tokens %+v; want %+v (the completed turns only)", what, d.Tokens, *tok)
	}
	l, ok := only(t, what+": list", listDetails(t, a), id)
	if ok && (l.Status != "running" || l.PID != d.PID) {
		t.Errorf("%s: list (alive only) shows status %q pid %d; want running, pid %d", what, l.Status, l.PID, d.PID)
	}
}
