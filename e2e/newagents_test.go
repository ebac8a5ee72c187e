package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// Gemini CLI, Qwen Code and Copilot CLI (issue 33), each run by hand the way a user
// runs them, against the stub: a one-shot, a resume of it, a 429 and a 401, and a
// turn held open then SIGKILLed. agentctl must list each session once with the
// tokens the stub sent for it (per each agent's rules: Gemini's model-router side
// calls are recorded nowhere; Qwen's memory extractor is the session's subagent
// share), the first prompt, the model, the status and the blocked reason, and see
// the held turn running and the killed one stopped.

type newAgentCase struct {
	agent *harness.NewAgent
	// idOf finds the session id in the run's stdout.
	idOf func(stdout string) string
	// counts says whether a model request is recorded in the session (Gemini's
	// router side calls are not).
	counts func(stub.Exchange) bool
	model  string
	// quota and auth are the blocked reasons agentctl must give the 429 and 401 runs.
	quota, auth string
}

var streamInitRE = regexp.MustCompile(`"session_id":"([0-9a-f-]{36})"`)
var copilotResultRE = regexp.MustCompile(`"type":"result".*"sessionId":"([0-9a-f-]{36})"`)

func firstMatch(re *regexp.Regexp) func(string) string {
	return func(s string) string {
		if m := re.FindStringSubmatch(s); m != nil {
			return m[1]
		}
		return ""
	}
}

func newAgentCases(t *testing.T, srv *stub.Server) map[string]newAgentCase {
	all := func(stub.Exchange) bool { return true }
	return map[string]newAgentCase{
		// Gemini's reason comes from its error report in the agent's TMPDIR.
		"gemini": {agent: harness.NewGemini(t, srv), idOf: firstMatch(streamInitRE),
			counts: func(e stub.Exchange) bool { return len(e.Request.Tools) > 0 },
			quota:  "quota", auth: "auth"},
		"qwen": {agent: harness.NewQwen(t, srv), idOf: firstMatch(streamInitRE), counts: all,
			model: "qwen3-coder-plus", quota: "quota", auth: "auth"},
		"copilot": {agent: harness.NewCopilot(t, srv), idOf: firstMatch(copilotResultRE), counts: all,
			model: "gpt-4.1", quota: "quota", auth: "auth"},
	}
}

// newSession is the part of `list --json` these tests check.
type newSession struct {
	ID            string          `json:"id"`
	Adapter       string          `json:"adapter"`
	Status        string          `json:"status"`
	Evidence      string          `json:"evidence"`
	BlockedReason string          `json:"blocked_reason"`
	Cwd           string          `json:"cwd"`
	Model         string          `json:"model"`
	Prompt        string          `json:"prompt"`
	Tokens        *harness.Tokens `json:"tokens"`
}

func TestNewAgentsReadSide(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	for _, name := range []string{"gemini", "qwen", "copilot"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := stub.Start(t, nil)
			c := newAgentCases(t, srv)[name]
			newAgentReadSide(t, srv, c)
			// An independent reader of the same files agrees (ccusage_newagents_test.go).
			ccusageAgrees(t, name, c.agent.Name, c.agent.Home)
		})
	}
}

func newAgentReadSide(t *testing.T, srv *stub.Server, c newAgentCase) {
	ag := c.agent
	// run runs one headless turn and returns its id and the model requests it made.
	run := func(dir, prompt string, wantOK bool, extra ...string) (string, []stub.Exchange) {
		t.Helper()
		before := len(srv.Exchanges())
		p := ag.Run(t, dir, prompt, extra...)
		code := p.Wait(t, 120*time.Second)
		if (code == 0) != wantOK {
			t.Fatalf("%s %q: exit %d\nstdout:\n%s\nstderr:\n%s", ag.Name, prompt, code, harness.Tail(p.Stdout(), 10), harness.Tail(p.Stderr(), 20))
		}
		id := c.idOf(p.Stdout())
		if id == "" {
			t.Fatalf("%s %q: no session id in its output:\n%s", ag.Name, prompt, harness.Tail(p.Stdout(), 10))
		}
		var mine []stub.Exchange
		for _, e := range srv.Exchanges()[before:] {
			if e.Request.API != "" && e.Completed && c.counts(e) {
				mine = append(mine, e)
			}
		}
		return id, mine
	}
	web := harness.WorkDir(t, "webapp")
	// The 429 and the 401 run in two directories: Gemini deletes a project's
	// sessions without an answer at its next start there (docs/agents/gemini.md).
	billing, infra := harness.WorkDir(t, "billing"), harness.WorkDir(t, "infra")
	idA, exA := run(web, "first prompt WORDS=3", true)
	idB, exB := run(web, "second turn WORDS=2", true, "--resume", idA)
	if idB != idA {
		t.Fatalf("the resume answered as %s, not %s", idB, idA)
	}
	idQ, _ := run(billing, "quota run STATUS=429 HARDQUOTA", false)
	idU, _ := run(infra, "auth run STATUS=401", false)

	a := harness.NewAgentctl(t, ag.Home)
	// Gemini's only error evidence is its report in the agent's TMPDIR.
	a.Env = a.Env.With("TMPDIR", ag.Env["TMPDIR"])
	var ss []newSession
	a.JSON(t, &ss, "list", "-a", "--adapter", ag.Name)
	byID := map[string]newSession{}
	for _, s := range ss {
		if _, dup := byID[s.ID]; dup {
			t.Errorf("%s listed twice", s.ID)
		}
		byID[s.ID] = s
	}
	if len(ss) != 3 {
		t.Errorf("list -a --adapter %s: %d sessions, want 3 (the resumed one once, the 429 and the 401)", ag.Name, len(ss))
	}
	model := c.model
	if model == "" { // the model the agent's router picked, as the stub saw it
		model = exA[len(exA)-1].Request.Model
	}
	want := newSession{ID: idA, Adapter: ag.Name, Status: "stopped", Cwd: web, Model: model,
		Prompt: "first prompt WORDS=3", Tokens: ptr(tokens(sent(exA, exB)))}
	if got := byID[idA]; strip(got) != strip(want) || got.Tokens == nil || *got.Tokens != *want.Tokens {
		t.Errorf("one-shot + resume:\n got %+v %+v\nwant %+v %+v", strip(got), got.Tokens, strip(want), want.Tokens)
	}
	for _, f := range []struct {
		id, reason, what, dir string
	}{{idQ, c.quota, "429", billing}, {idU, c.auth, "401", infra}} {
		got := byID[f.id]
		if got.ID == "" {
			t.Errorf("the %s run %s is not listed", f.what, f.id)
			continue
		}
		if got.Status == "running" || got.Status == "idle" || got.Cwd != f.dir {
			t.Errorf("the %s run: %+v", f.what, got)
		}
		if f.reason != "" && got.BlockedReason != f.reason {
			t.Errorf("the %s run: blocked_reason %q, want %q (%+v)", f.what, got.BlockedReason, f.reason, got)
		}
		if got.Tokens != nil && *got.Tokens != (harness.Tokens{}) {
			t.Errorf("the %s run has tokens %+v; the stub answered no turn", f.what, *got.Tokens)
		}
	}

	// A turn held open is running; the same process SIGKILLed is not (whatever
	// registry or lock it left behind).
	hold := ag.Name + "-live"
	p := ag.Run(t, web, "live turn HOLD="+hold)
	waitHeldWhileAlive(t, srv, hold, p)
	var live string
	harness.Eventually(t, 30*time.Second, func() string {
		for _, s := range listNew(t, a, ag.Name) {
			if s.ID != idA && s.ID != idQ && s.ID != idU {
				live = s.ID
				if s.Status != "running" {
					return fmt.Sprintf("the held turn %s is %s (evidence %s), want running", s.ID, s.Status, s.Evidence)
				}
				return ""
			}
		}
		return "the held turn is not listed"
	})
	// A headless Copilot run is running from its lock at once, before its
	// prompt is on disk (it sends the request first); killed that early it
	// leaves no session at all, so the kill waits for the prompt's record.
	var st newSession
	harness.Eventually(t, 30*time.Second, func() string {
		if a.JSON(t, &st, "status", live); st.Prompt == "" {
			return "status " + live + ": no prompt recorded yet (" + st.Status + ")"
		}
		return ""
	})
	if st.Status != "running" {
		t.Errorf("status %s while held: %+v", live, st)
	}
	syscall.Kill(-p.PID, syscall.SIGKILL)
	p.Wait(t, 20*time.Second)
	harness.Eventually(t, 30*time.Second, func() string {
		var st newSession
		a.JSON(t, &st, "status", live)
		if st.Status == "running" || st.Status == "idle" || st.Status == "waiting" {
			return fmt.Sprintf("killed %s still %s (evidence %s)", live, st.Status, st.Evidence)
		}
		return ""
	})
	for _, s := range listNew(t, a, ag.Name) {
		if s.Status == "running" || s.Status == "idle" {
			t.Errorf("after the kill, %s is still listed as %s", s.ID, s.Status)
		}
	}
}

// waitHeldWhileAlive waits for the agent's request to park under hold for as long
// as the agent is alive (a loaded machine is slower, not red), failing at once
// with its output when it exits first.
func waitHeldWhileAlive(t *testing.T, srv *stub.Server, hold string, p *harness.Proc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-p.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := srv.WaitHeld(ctx, hold); err != nil {
		t.Fatalf("%v (agent exited: %v)\nstdout:\n%s\nstderr:\n%s", err, p.ExitCode(), harness.Tail(p.Stdout(), 10), harness.Tail(p.Stderr(), 20))
	}
}

func listNew(t *testing.T, a *harness.Agentctl, adapter string) []newSession {
	var ss []newSession
	a.JSON(t, &ss, "list", "--adapter", adapter)
	return ss
}

// strip drops what is compared apart (tokens) or not at all (evidence), so two
// views compare by value.
func strip(s newSession) newSession {
	s.Tokens = nil
	s.Evidence = ""
	s.BlockedReason = ""
	return s
}

func ptr[T any](v T) *T { return &v }

// The launch lifecycle of agentCase (launch with hook and webhook, held reply,
// wait, resume, stop of a running turn) against each new agent's real CLI.
func TestLaunchLifecycleNewAgents(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	for _, name := range []string{"gemini", "qwen", "copilot"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := stub.Start(t, nil)
			ag := newAgentCases(t, srv)[name].agent
			a := agentctlFor(t, ag.Home, ag.Env, harness.Env{ag.BinVar: ag.Bin})
			ac := &agentCase{adapter: ag.Name, a: a, srv: srv, cwd: harness.WorkDir(t, "webapp")}
			l := ac.lifecycle(t)
			ac.resume(t, l.ID)
			var s newSession
			a.JSON(t, &s, "status", l.ID)
			if s.Prompt == "" || !strings.HasPrefix(s.Prompt, "lifecycle run") {
				t.Errorf("after the resume, the first prompt is %q", s.Prompt)
			}
			ac.stopRunning(t, func(id string) string { return "^stopped " + regexp.QuoteMeta(id) })
		})
	}
}

// Copilot's TUI under a pty, asking to run a command that needs approval: agentctl
// says waiting (a permission.requested without its permission.completed, written by
// the live holder of inuse.<pid>.lock) while the dialog is on screen, and the command
// has not run; SIGKILLed there, the lock it leaves is stale and the session is no
// longer live. (Gemini writes nothing while it asks, and Qwen only after 60 s is
// "waiting" inferred: docs/agents/{gemini,qwen}.md.)
func TestCopilotTUIWaiting(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	ag := harness.NewCopilot(t, srv)
	dir := harness.WorkDir(t, "webapp")
	env := ag.Env.Merge(harness.Env{"PWD": dir, "TERM": "xterm-256color"})
	p := harness.StartPTY(t, harness.Spec{Path: ag.Bin, Dir: dir, Env: env, Name: "copilot-tui"})
	// The first start unpacks Copilot's runtime (7 s idle, longer when loaded).
	p.WaitOutput(t, 3*time.Minute, 0, "Do you trust the files in this folder?")
	p.Type(t, "\r")
	from := p.Len()
	p.WaitOutput(t, time.Minute, from, "Interactive")
	typeLine(t, p, "now TOOLCMD: touch approval-probe.txt")
	p.WaitOutput(t, 2*time.Minute, from, "Do you want to run this command?")

	a := harness.NewAgentctl(t, ag.Home)
	var live newSession
	harness.Eventually(t, 30*time.Second, func() string {
		ss := listNew(t, a, "copilot")
		if len(ss) != 1 {
			return fmt.Sprintf("%d live copilot sessions listed, want 1", len(ss))
		}
		live = ss[0]
		if live.Status != "waiting" || live.Evidence != "registry" {
			return fmt.Sprintf("the session on its permission dialog is %s (evidence %s), want waiting on registry", live.Status, live.Evidence)
		}
		return ""
	})
	if _, err := os.Stat(filepath.Join(dir, "approval-probe.txt")); err == nil {
		t.Error("the command ran without approval")
	}
	syscall.Kill(-p.PID, syscall.SIGKILL)
	p.Wait(t, 20*time.Second)
	// The native binary (a child of the node loader) takes a moment to die.
	harness.Eventually(t, 30*time.Second, func() string {
		var st newSession
		a.JSON(t, &st, "status", live.ID)
		if st.Status == "running" || st.Status == "waiting" || st.Status == "idle" || st.Evidence == "registry" {
			return fmt.Sprintf("after SIGKILL: %+v; want it no longer live (the lock it left is stale)", st)
		}
		return ""
	})
	// What made it stopped is the dead holder, not a missing lock: SIGKILL leaves it.
	if locks, _ := filepath.Glob(filepath.Join(ag.Home, ".copilot", "session-state", live.ID, "inuse.*.lock")); len(locks) == 0 {
		t.Error("no inuse lock left behind: the stale-lock case was not exercised")
	}
}
