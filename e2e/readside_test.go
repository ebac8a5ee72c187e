package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// Shared by the read-side tests of Codex, OpenCode, Pi, OpenClaw and the mixed
// home: the session fields they pin beyond harness.Session, and the checks for
// "running on live evidence" and "stopped once the CLI exited".

// detail is a session as `list --json` / `status --json` print it, with the
// fields these tests pin beyond harness.Session.
type detail struct {
	harness.Session
	Inferred   bool     `json:"inferred"`
	CostUSD    *float64 `json:"cost_usd"`
	CostSource string   `json:"cost_source"`
}

func detailOf(t *testing.T, a *harness.Agentctl, id string) detail {
	t.Helper()
	var d detail
	a.JSON(t, &d, "status", id)
	return d
}

func listDetails(t *testing.T, a *harness.Agentctl, args ...string) []detail {
	t.Helper()
	var ds []detail
	a.JSON(t, &ds, append([]string{"list"}, args...)...)
	return ds
}

// only returns the one session with id in ds, failing when it is missing or
// listed more than once (each session exactly once, under one adapter).
func only(t *testing.T, what string, ds []detail, id string) (detail, bool) {
	t.Helper()
	var found []detail
	for _, d := range ds {
		if d.ID == id {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 1:
		return found[0], true
	case 0:
		var ids []string
		for _, d := range ds {
			ids = append(ids, d.ID+" ("+d.Adapter+")")
		}
		t.Errorf("%s: session %s not listed; listed: %s", what, id, strings.Join(ids, ", "))
	default:
		var as []string
		for _, d := range found {
			as = append(as, d.Adapter+"/"+d.Status)
		}
		t.Errorf("%s: session %s listed %d times: %s", what, id, len(found), strings.Join(as, ", "))
	}
	return detail{}, false
}

// checkLive checks that a session whose model reply the stub is holding is
// `running` on the evidence the agent's spec prescribes, with a verified pid
// that belongs to the process the test started (its process group: npm shims
// run the native binary as a child).
func checkLive(t *testing.T, what string, d detail, p *harness.Proc, evidence string, inferred bool) {
	t.Helper()
	if d.Status != "running" || d.Evidence != evidence || d.Inferred != inferred {
		t.Errorf("%s: status %q evidence %q inferred %v (%s); want running on %q evidence, inferred %v",
			what, d.Status, d.Evidence, d.Inferred, d.EvidenceDetail, evidence, inferred)
	}
	if d.PID == 0 {
		t.Errorf("%s: no pid; want one in process group %d", what, p.PID)
	} else if g, err := syscall.Getpgid(d.PID); err != nil || g != p.PID {
		t.Errorf("%s: pid %d is in process group %d (%v); want the agent's group %d", what, d.PID, g, err, p.PID)
	}
}

// checkStopped checks the evidence of a session whose CLI has exited cleanly:
// stopped on its transcript, no pid.
func checkStopped(t *testing.T, what string, d detail) {
	t.Helper()
	if d.Status != "stopped" || d.Evidence != "transcript" || d.PID != 0 || d.Inferred {
		t.Errorf("%s: status %q evidence %q pid %d inferred %v (%s); want stopped on transcript evidence, no pid",
			what, d.Status, d.Evidence, d.PID, d.Inferred, d.EvidenceDetail)
	}
}

// checkCost compares an agent-reported cost with what the stub's usage costs
// at the per-million prices the test configured.
func checkCost(t *testing.T, what string, d detail, u stub.Usage, inPrice, outPrice float64) {
	t.Helper()
	want := (float64(u.Input)*inPrice + float64(u.Output)*outPrice) / 1e6
	if d.CostUSD == nil || d.CostSource != "agent" || math.Abs(*d.CostUSD-want) > 1e-12 {
		got := "none"
		if d.CostUSD != nil {
			got = fmt.Sprint(*d.CostUSD)
		}
		t.Errorf("%s: cost %s (source %q); want %g reported by the agent", what, got, d.CostSource, want)
	}
}

// conversation splits `peek --json` into user prompts and assistant texts.
func conversation(ms []harness.Message) (users, replies []string) {
	for _, m := range ms {
		switch {
		case m.Kind == "user":
			users = append(users, strings.TrimSpace(m.Text))
		case m.Kind == "assistant" && m.Text != "":
			replies = append(replies, m.Text)
		}
	}
	return users, replies
}

func checkPeek(t *testing.T, what string, ms []harness.Message, wantUsers, wantReplies []string) {
	t.Helper()
	users, replies := conversation(ms)
	if fmt.Sprintf("%q", users) != fmt.Sprintf("%q", wantUsers) || fmt.Sprintf("%q", replies) != fmt.Sprintf("%q", wantReplies) {
		t.Errorf("%s: users %q replies %q; want %q and %q", what, users, replies, wantUsers, wantReplies)
	}
}

// checkPeekLive checks that peek works mid-turn and shows the pending prompt
// as the newest user message.
func checkPeekLive(t *testing.T, what string, a *harness.Agentctl, id, prompt string) {
	t.Helper()
	users, _ := conversation(a.Peek(t, id))
	if len(users) == 0 || users[len(users)-1] != prompt {
		t.Errorf("%s: peek shows user messages %q; want the pending prompt %q last", what, users, prompt)
	}
}

// turns are the model exchanges since m that carry tools: the agent's own turns,
// not auxiliary calls such as OpenCode's title generation.
func turns(srv *stub.Server, m mark) []stub.Exchange {
	var out []stub.Exchange
	for _, e := range since(srv, m) {
		if len(e.Request.Tools) > 0 {
			out = append(out, e)
		}
	}
	return out
}

// texts are the assistant texts the stub sent in exs, in order.
func texts(exs []stub.Exchange) []string {
	var out []string
	for _, e := range exs {
		if e.Completed && e.Text != "" {
			out = append(out, e.Text)
		}
	}
	return out
}

// waitExit waits for a CLI to finish its turn and requires exit 0.
func waitExit(t *testing.T, what string, p *harness.Proc) {
	t.Helper()
	if code := p.Wait(t, 60*time.Second); code != 0 {
		t.Fatalf("%s exited %d\nstdout:\n%s\nstderr:\n%s", what, code, harness.Tail(p.Stdout(), 10), harness.Tail(p.Stderr(), 20))
	}
}

// rehome moves an agent prepared by the harness into another HOME: it copies
// the config files the harness wrote and points every variable that named the
// old home at the new one. The mixed-home test uses it to give every agent the
// same HOME.
func rehome(t *testing.T, from, to string, env harness.Env) harness.Env {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatalf("copy %s to %s: %v", from, to, err)
	}
	out := harness.Env{}
	for k, v := range env {
		if v == from || strings.HasPrefix(v, from+string(filepath.Separator)) {
			v = to + strings.TrimPrefix(v, from)
		}
		out[k] = v
	}
	return out
}
