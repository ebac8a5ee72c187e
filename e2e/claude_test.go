package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// The oldest and the newest pinned Claude Code: since 2.1.329 -p writes a registry status
// and many more line types; 2.1.197 does neither. 2.1.329 itself left the suite
// when 2.1.332 came (two pins keep the suite's time; the oldest shows the most
// differences).
var claudeVersions = []string{harness.ClaudeOldest, harness.ClaudeNewest}

func forEachClaude(t *testing.T, f func(t *testing.T, c *harness.Claude, srv *stub.Server)) {
	for _, v := range claudeVersions {
		t.Run(v, func(t *testing.T) {
			harness.Require(t)
			t.Parallel()
			srv := stub.Start(t, nil)
			f(t, harness.NewClaude(t, v, srv), srv)
		})
	}
}

// A print run, resumed (appends to the same file) and forked (a new file holding
// copies of the parent's turns): ids, cwd, model, first prompt and de-duplicated
// token totals must match what the stub sent.
func TestClaudePrintResumeFork(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		dir := harness.WorkDir(t, "webapp")
		const prompt = "say hi WORDS=4"

		m := markNow(srv)
		id, _ := c.Run(t, dir, prompt)
		first := since(srv, m)
		transcript := c.Transcript(dir, id)
		before := countLines(t, transcript)

		m = markNow(srv)
		resumedID, _ := c.Run(t, dir, "again", "--resume", id)
		resumed := since(srv, m)
		if resumedID != id {
			t.Fatalf("resume answered with session %s, want %s", resumedID, id)
		}
		if after := countLines(t, transcript); after <= before {
			t.Fatalf("resume did not append to %s (%d lines before, %d after)", transcript, before, after)
		}

		forkID := uuid.NewString()
		m = markNow(srv)
		gotFork, _ := c.Run(t, dir, "forked", "--resume", id, "--fork-session", "--session-id", forkID)
		forked := since(srv, m)
		if gotFork != forkID || !exists(c.Transcript(dir, forkID)) {
			t.Fatalf("fork: init session %s, want %s with its own transcript", gotFork, forkID)
		}
		if len(first) != 1 || len(resumed) != 1 || len(forked) != 1 {
			t.Fatalf("model requests per run: %d, %d, %d; want one each", len(first), len(resumed), len(forked))
		}

		a := harness.NewAgentctl(t, c.Home)
		list := a.List(t)
		wantParent := view{ID: id, Adapter: "claude-code", Status: "stopped", Cwd: dir,
			Model: lastModel(first, resumed), Prompt: prompt, Tokens: tokens(sent(first, resumed))}
		// A fork's totals include the copied parent turns (docs/agents/claude-code.md §3.1).
		wantFork := view{ID: forkID, Adapter: "claude-code", Status: "stopped", Cwd: dir,
			Model: lastModel(forked), Prompt: prompt, Tokens: tokens(sent(first, resumed, forked))}
		for _, w := range []view{wantParent, wantFork} {
			s, ok := harness.Find(list, w.ID)
			if !ok {
				t.Errorf("list -a --json has no session %s (%d sessions listed)", w.ID, len(list))
				continue
			}
			checkSession(t, "list -a "+w.ID, s, w)
			checkSession(t, "status "+w.ID, a.Status(t, w.ID), w)
		}
		for _, s := range a.List(t, "--status", "running") {
			t.Errorf("nothing runs, yet list --status running shows %s (%s)", s.ID, s.Status)
		}

		var users, replies []string
		for _, msg := range a.Peek(t, id) {
			switch msg.Kind {
			case "user":
				users = append(users, msg.Text)
			case "assistant":
				replies = append(replies, msg.Text)
			}
		}
		wantReplies := []string{first[0].Text, resumed[0].Text}
		if fmt.Sprint(users) != fmt.Sprint([]string{prompt, "again"}) || fmt.Sprint(replies) != fmt.Sprint(wantReplies) {
			t.Errorf("peek %s: users %q replies %q; want %q and %q", id, users, replies, []string{prompt, "again"}, wantReplies)
		}
	})
}

// A tool turn: thinking + text + tool_use in one API message give three
// transcript lines that share one usage; the totals must count it once.
func TestClaudeToolUse(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		dir := harness.WorkDir(t, "api-server")
		word := "e2e-tool-" + strings.ReplaceAll(c.Version, ".", "-")
		prompt := "THINK TOOLCMD: echo " + word
		m := markNow(srv)
		id, p := c.Run(t, dir, prompt, "--allowedTools", "Bash")
		ex := since(srv, m)
		if len(ex) != 2 || ex[0].Reply.Tool == nil || !ex[1].Request.ToolResult || !strings.Contains(ex[1].Request.ToolOutput, word) {
			t.Fatalf("want a tool call and a tool result; stub saw %d requests\nstdout:\n%s", len(ex), harness.Tail(p.Stdout(), 10))
		}

		a := harness.NewAgentctl(t, c.Home)
		want := view{ID: id, Adapter: "claude-code", Status: "stopped", Cwd: dir,
			Model: lastModel(ex), Prompt: prompt, Tokens: tokens(sent(ex))}
		checkSession(t, "status", a.Status(t, id), want)

		var tool, reply string
		for _, msg := range a.Peek(t, id) {
			for _, tc := range msg.Tools {
				tool = fmt.Sprintf("%s: %s ← %s", tc.Name, tc.Summary, tc.Result)
			}
			if msg.Kind == "assistant" && msg.Text != "" {
				reply = msg.Text
			}
		}
		if wantTool := fmt.Sprintf("Bash: echo %s ← %s", word, word); tool != wantTool {
			t.Errorf("peek tool call %q, want %q", tool, wantTool)
		}
		if reply != ex[1].Text {
			t.Errorf("peek last reply %q, want %q", reply, ex[1].Text)
		}
	})
}

// While the model's reply is pending the session is running on the evidence of
// Claude's own registry (with its verified pid); after it ends, stopped.
func TestClaudeBusyThenStopped(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		dir := harness.WorkDir(t, "busy")
		id := uuid.NewString()
		prompt := "slow reply HOLD=busy"
		m := markNow(srv)
		p := c.Print(t, dir, prompt, "--session-id", id)
		waitHeld(t, srv, "busy")
		// What agentctl has to cope with (docs/agents/claude-code.md §4.2): 2.1.329 -p writes
		// status "busy", 2.1.197 -p writes no status at all. Claude creates
		// its entry first and merges the status into it with a later write,
		// which can lag the held request under load (§4.3, measured): the
		// entry is waited for until it holds what it must.
		wantBusy := c.Version != "2.1.197"
		harness.Eventually(t, 15*time.Second, func() string {
			b, err := os.ReadFile(c.Registry(p.PID))
			if err != nil {
				return "no registry file " + c.Registry(p.PID)
			}
			var reg struct {
				SessionID string  `json:"sessionId"`
				Status    *string `json:"status"`
			}
			json.Unmarshal(b, &reg)
			if reg.SessionID != id || (reg.Status != nil) != wantBusy || (wantBusy && *reg.Status != "busy") {
				return fmt.Sprintf("registry %s: %s", filepath.Base(c.Registry(p.PID)), b)
			}
			return ""
		})

		a := harness.NewAgentctl(t, c.Home)
		s := a.Status(t, id)
		if s.Status != "running" || s.Evidence != "registry" || s.PID != p.PID {
			t.Errorf("while the reply is pending: status %q evidence %q pid %d; want running, registry, pid %d",
				s.Status, s.Evidence, s.PID, p.PID)
		}
		if l, ok := harness.Find(a.ListAlive(t), id); !ok || l.Status != "running" {
			t.Errorf("list (alive only) shows %+v for the busy session; want it running", l)
		}

		srv.Release("busy")
		if code := p.Wait(t, 30*time.Second); code != 0 {
			t.Fatalf("claude exited %d after the reply\n%s", code, harness.Tail(p.Stderr(), 10))
		}
		ex := since(srv, m)
		want := view{ID: id, Adapter: "claude-code", Status: "stopped", Cwd: dir,
			Model: lastModel(ex), Prompt: prompt, Tokens: tokens(sent(ex))}
		checkSession(t, "status after the reply", a.Status(t, id), want)
	})
}

// SIGKILL mid-turn leaves Claude's registry file behind with a dead pid: agentctl
// must call the session failed on that evidence, never running.
func TestClaudeKilledLeavesStaleRegistry(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		dir := harness.WorkDir(t, "scratch")
		id := uuid.NewString()
		prompt := "sig test HOLD=kill"
		m := markNow(srv)
		p := c.Print(t, dir, prompt, "--session-id", id)
		waitHeld(t, srv, "kill")
		registry := c.Registry(p.PID)
		// Claude flushes the transcript a moment after the request goes out; kill
		// once the prompt is on disk, as in the recorded fixture (3 s in).
		harness.Eventually(t, 15*time.Second, func() string {
			if !exists(registry) {
				return "no registry file " + registry
			}
			if b, _ := os.ReadFile(c.Transcript(dir, id)); !strings.Contains(string(b), prompt) {
				return "prompt not in the transcript yet"
			}
			return ""
		})
		if err := p.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		p.Wait(t, 10*time.Second)
		if !exists(registry) {
			t.Fatalf("Claude %s removed %s on SIGKILL; this test needs the stale file", c.Version, registry)
		}

		a := harness.NewAgentctl(t, c.Home)
		s := a.Status(t, id)
		want := view{ID: id, Adapter: "claude-code", Status: "failed", Cwd: dir, Prompt: prompt,
			Tokens: tokens(sent(since(srv, m)))} // nothing completed: zero
		s.Model = "" // no reply, so no model worth pinning
		checkSession(t, "status after SIGKILL", s, want)
		if s.Evidence != "stale-registry" || s.PID != 0 {
			t.Errorf("evidence %q pid %d; want stale-registry and no pid", s.Evidence, s.PID)
		}
		data, _ := os.ReadFile(registry)
		if !strings.Contains(string(data), id) {
			t.Errorf("registry %s does not name %s: %s", filepath.Base(registry), id, data)
		}
	})
}

// waitHeldBy waits for the request held under name while p, the agent that
// will send it, makes progress (harness.Proc.WaitFor): on a busy machine an
// agent's cold start alone can take longer than any fixed deadline.
func waitHeldBy(t *testing.T, srv *stub.Server, name string, p *harness.Proc) {
	t.Helper()
	p.WaitFor(t, "model request parked under HOLD="+name, func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := srv.WaitHeld(ctx, name); err != nil {
			return err.Error()
		}
		return ""
	})
}

func waitHeld(t *testing.T, srv *stub.Server, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.WaitHeld(ctx, name); err != nil {
		t.Fatal(err)
	}
}
