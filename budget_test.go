package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// Bad budgets are usage errors naming the flag, and nothing is launched.
func TestBudgetFlagsBadInput(t *testing.T) {
	c := newCLI(t)
	dir := mkdir(t, t.TempDir(), "w")
	for _, tc := range []struct{ flag, val string }{
		{"--max-tokens", "-5"}, {"--max-tokens", "lots"}, {"--max-cost", "-1"}, {"--max-cost", "free"},
		{"--max-duration", "-3s"}, {"--max-duration", "soon"},
	} {
		_, errOut, code := c.run("launch", "--cwd", dir, "-p", "x", tc.flag+"="+tc.val)
		if code != 2 || !strings.Contains(errOut, tc.flag) {
			t.Errorf("launch %s=%s: exit %d %q; want 2 naming the flag", tc.flag, tc.val, code, errOut)
		}
	}
	if recs, _ := c.store().ReadLaunches(); len(recs) != 0 {
		t.Errorf("%d launch records after bad budgets", len(recs))
	}
	_, errOut, code := c.run("resume", "--max-tokens=0", "abc", "go on")
	if code != 2 || !strings.Contains(errOut, "--max-tokens") {
		t.Errorf("resume --max-tokens=0: exit %d %q", code, errOut)
	}
}

// Config "budget" fills in what the flags leave unset; the run is stopped on
// time and wait, status and the journal say why.
func TestBudgetDurationFromConfig(t *testing.T) {
	c := newCLI(t)
	os.MkdirAll(c.state, 0o700)
	if err := os.WriteFile(filepath.Join(c.state, meta.ConfigFile), []byte(`{"budget": {"max_duration_seconds": 1, "max_tokens": 900}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := mkdir(t, t.TempDir(), "w")
	l := c.launch(dir, "--max-tokens", "5000", "--env", "FAKE_SLEEP=30")
	recs, _ := c.store().ReadLaunches()
	r := meta.FindLaunch(recs, l.LaunchID)
	if r == nil || r.Budget == nil || *r.Budget != (meta.Budget{MaxDurationSeconds: 1, MaxTokens: 5000}) {
		t.Fatalf("record budget: %+v", r)
	}
	out, _, code := c.run("wait", "--timeout", "20s", l.ID)
	if code != 1 || !strings.Contains(out, "budget:duration") {
		t.Fatalf("wait: exit %d %q; want 1 naming budget:duration", code, out)
	}
	st := c.ok("status", l.ID)
	for _, want := range []string{"exit reason:", "budget:duration", "budget:", "duration 1s, 5000 tokens", "stopped by agentctl for its budget"} {
		if !strings.Contains(st, want) {
			t.Errorf("status lacks %q:\n%s", want, st)
		}
	}
	ev := c.ok("events", "--json", "--type", "session.budget_exceeded")
	if strings.Count(ev, "\n") != 1 || !strings.Contains(ev, `"reason":"budget:duration"`) {
		t.Errorf("events: %s", ev)
	}
}

// The short human form of the journal names the budget reason and figures.
func TestHumanEventShowsBudgetReason(t *testing.T) {
	ev := meta.Event{Type: meta.EventBudgetExceeded, Adapter: "codex", SessionID: "019a-abc",
		Session: map[string]any{"cwd": "/w", "exit_reason": "budget:tokens"},
		Data:    map[string]any{"used": "2000 tokens", "limit": "1500 tokens"}}
	got := humanEvent(ev, "/home/x", time.Time{})
	if !strings.HasSuffix(got, "session.budget_exceeded    codex        019a-abc      /w  budget:tokens (2000 tokens > 1500 tokens)") {
		t.Errorf("human event %q", got)
	}
}
