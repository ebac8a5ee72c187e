package e2e

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// The interactive TUI on a pty (docs/agents/claude-code.md §10.2): Claude's registry status
// goes idle → busy → idle, and waiting while a permission prompt is shown; agentctl
// must report idle, running, idle, waiting and, after /exit, stopped, all on the
// registry's evidence.
func TestClaudeTUIStatus(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		dir := harness.WorkDir(t, "tui")
		seedClaudeJSON(t, c, dir)
		id := uuid.NewString()
		// 2.1.329 defaults to auto mode, which runs the tool without asking.
		args := []string{"--session-id", id, "--permission-mode", "default"}
		p := harness.StartPTY(t, harness.Spec{Path: c.Bin, Args: args, Dir: dir, Env: c.Env,
			Name: "claude-tui-" + c.Version})
		a := harness.NewAgentctl(t, c.Home)

		// expect polls `status --json` until it shows status on registry evidence.
		expect := func(when, status string) harness.Session {
			t.Helper()
			var s harness.Session
			harness.Eventually(t, 15*time.Second, func() string {
				s = a.Status(t, id)
				if s.Status != status || s.Evidence != "registry" || s.PID != p.PID {
					reg, _ := os.ReadFile(c.Registry(p.PID))
					return when + ": status " + s.Status + " (" + s.Evidence + ": " + s.EvidenceDetail + "), want " + status +
						" on registry evidence\nregistry: " + string(reg) + "\nscreen:\n" + harness.Tail(harness.StripANSI(p.Output()), 15)
				}
				return ""
			})
			return s
		}

		// 1. Started, no prompt yet: only the registry knows the session.
		harness.Eventually(t, 20*time.Second, func() string {
			if !exists(c.Registry(p.PID)) {
				return "no registry file " + c.Registry(p.PID) + "\nscreen:\n" + harness.Tail(harness.StripANSI(p.Output()), 15)
			}
			return ""
		})
		if s := expect("before any prompt", "idle"); s.Prompt != "" {
			t.Errorf("before any prompt: prompt %q, want none", s.Prompt)
		}
		if l, ok := harness.Find(a.ListAlive(t), id); !ok || l.Status != "idle" {
			t.Errorf("list (alive only) shows %+v for the fresh TUI session; want it idle", l)
		}

		// 2. A prompt whose reply the stub holds: running.
		const prompt = "hello from the tui HOLD=tui"
		typeLine(t, p, prompt)
		waitHeld(t, srv, "tui")
		expect("while the reply is held", "running")

		// 3. The reply arrives: idle, with the typed prompt as the first prompt.
		srv.Release("tui")
		expect("after the reply", "idle")
		// Claude writes the turn to the transcript a moment after the registry
		// turns idle (seen: the file still held only its mode lines).
		harness.Eventually(t, 10*time.Second, func() string {
			if s := a.Status(t, id); s.Status != "idle" || s.Prompt != prompt {
				b, _ := os.ReadFile(c.Transcript(dir, id))
				return "after the reply: status " + s.Status + ", prompt " + strconv.Quote(s.Prompt) + "; want idle, " +
					strconv.Quote(prompt) + "\ntranscript:\n" + string(b)
			}
			return ""
		})

		// 4. A non-read-only Bash call in default mode: the permission prompt.
		res := startWait(t, a, id, "waiting")
		from := p.Len()
		typeLine(t, p, "TOOLCMD: touch tui-made-this")
		p.WaitOutput(t, 20*time.Second, from, harness.ClaudePermissionPrompt)
		shown := time.Now()
		select {
		case r := <-res:
			if r.code != 0 || !strings.Contains(r.out, `"reached":"waiting"`) {
				t.Errorf("wait --until waiting: exit %d, %q; want exit 0, reached waiting", r.code, r.out)
			}
			t.Logf("wait --until waiting returned %s after the prompt was seen on screen", r.after.Sub(shown).Round(time.Millisecond))
			if lag := r.after.Sub(shown); lag > time.Second {
				t.Errorf("wait --until waiting returned %s after the permission prompt was on screen; want within 1 s", lag)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("wait --until waiting did not return within 10 s of the permission prompt")
		}
		s := expect("at the permission prompt", "waiting")
		if !strings.Contains(s.EvidenceDetail, "permission") {
			t.Errorf("at the permission prompt: evidence_detail %q does not name the permission prompt", s.EvidenceDetail)
		}
		p.Type(t, "\x1b") // reject: the turn ends
		expect("after rejecting the tool", "idle")
		if exists(dir + "/tui-made-this") {
			t.Errorf("the rejected tool ran")
		}

		// 5. /exit: stopped.
		typeLine(t, p, "/exit")
		if code := p.Wait(t, 20*time.Second); code != 0 {
			t.Fatalf("claude TUI exited %d after /exit\nscreen:\n%s", code, harness.Tail(harness.StripANSI(p.Output()), 15))
		}
		if s := a.Status(t, id); s.Status != "stopped" || s.Prompt != prompt {
			t.Errorf("after /exit: status %q (%s), prompt %q; want stopped, %q", s.Status, s.Evidence, s.Prompt, prompt)
		}
	})
}

// typeLine types text, then Enter on its own: sent together, the TUI may take
// the \r as part of a paste.
func typeLine(t *testing.T, p *harness.PTY, text string) {
	t.Helper()
	from := p.Len()
	p.Type(t, text)
	p.WaitOutput(t, 10*time.Second, from, text)
	p.Type(t, "\r")
}

// seedClaudeJSON writes the $HOME/.claude.json that skips onboarding, the API key
// question and the trust dialog for dir (docs/agents/claude-code.md §10.2).
func seedClaudeJSON(t *testing.T, c *harness.Claude, dir string) {
	t.Helper()
	cfg := map[string]any{
		"hasCompletedOnboarding": true,
		"lastOnboardingVersion":  c.Version,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{"sk-test"}, "rejected": []string{}},
		"projects": map[string]any{dir: map[string]any{
			"hasTrustDialogAccepted":        true,
			"hasCompletedProjectOnboarding": true,
		}},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.Home+"/.claude.json", b, 0o600); err != nil {
		t.Fatal(err)
	}
}
