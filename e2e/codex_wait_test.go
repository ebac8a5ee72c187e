package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// The Codex TUI on a pty (approval policy on-request, read-only sandbox) asked
// to run a command outside the sandbox: while it shows "Would you like to run
// the following command?" agentctl reports the thread waiting, naming the
// function call it rests on, and a `wait --until waiting` started while the
// reply was held returns within 1 s of the prompt. Approved, the command runs
// and the thread is idle (docs/agents/codex.md §4.2).
func TestCodexTUIApprovalWaiting(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewCodex(t, srv)
	dir := harness.WorkDir(t, "approve")
	p := startCodexTUI(t, c, dir, "codex-tui", 60*time.Second)
	a := harness.NewAgentctl(t, c.Home)

	const prompt = "ESCALATE HOLD=cx TOOLCMD: touch codex-made-this"
	p.Type(t, prompt)
	// Enter right after the text can be taken as part of a paste: press it
	// until the request arrives.
	for i := 0; ; i++ {
		time.Sleep(time.Second)
		p.Type(t, "\r")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := srv.WaitHeld(ctx, "cx")
		cancel()
		if err == nil {
			break
		}
		if i == 4 {
			t.Fatalf("the prompt never reached the stub\nscreen:\n%s", harness.Tail(harness.StripANSI(p.Output()), 15))
		}
	}
	waitRollout(t, c, prompt)
	id := strings.TrimSuffix(filepath.Base(c.Rollouts()[0]), ".jsonl")
	id = id[len(id)-36:]
	if s := a.Status(t, id); s.Status != "running" {
		t.Errorf("reply held: status %s (%s), want running", s.Status, s.EvidenceDetail)
	}

	// wait --until waiting, started before the approval request exists.
	res := startWait(t, a, id, "waiting")
	time.Sleep(time.Second) // let wait see the running thread first
	from := p.Len()
	srv.Release("cx")
	p.WaitOutput(t, 30*time.Second, from, "Would you like to run")
	shown := time.Now()
	var r waitResult
	select {
	case r = <-res:
	case <-time.After(10 * time.Second):
		t.Fatalf("wait --until waiting did not return within 10 s of the approval prompt; status %+v", a.Status(t, id))
	}
	var line struct {
		Status  string `json:"status"`
		Reached string `json:"reached"`
	}
	if err := json.Unmarshal([]byte(r.out), &line); err != nil || r.code != 0 || line.Status != "waiting" || line.Reached != "waiting" {
		t.Fatalf("wait --until waiting: exit %d, output %q (%v)", r.code, r.out, err)
	}
	t.Logf("wait --until waiting returned %s after the prompt was seen on screen", r.after.Sub(shown).Round(time.Millisecond))
	if lag := r.after.Sub(shown); lag > time.Second {
		t.Errorf("wait --until waiting returned %s after the prompt was on screen; want within 1 s", lag)
	}
	s := a.Status(t, id)
	if s.Status != "waiting" || s.Evidence != "registry" ||
		!strings.Contains(s.EvidenceDetail, "require_escalated") || !strings.Contains(s.EvidenceDetail, "touch codex-made-this") {
		t.Errorf("at the approval prompt: status %s on %s (%s); want waiting on the thread-writer lock, naming the escalated call",
			s.Status, s.Evidence, s.EvidenceDetail)
	}
	if l, ok := harness.Find(a.ListAlive(t), id); !ok || l.Status != "waiting" {
		t.Errorf("list at the approval prompt: %+v; want the thread waiting", l)
	}
	if dst := os.Getenv("AGENTCTL_RECORD_DIR"); dst != "" {
		b, _ := os.ReadFile(c.Rollouts()[0])
		_ = os.WriteFile(filepath.Join(dst, "codex-approval-waiting.jsonl"), b, 0o644)
	}

	// Approve: the command runs, the reply comes, the turn ends: idle.
	p.Type(t, "y")
	harness.Eventually(t, 20*time.Second, func() string {
		if s := a.Status(t, id); s.Status != "idle" {
			return "after approving: status " + s.Status + " (" + s.EvidenceDetail + "), want idle\nscreen:\n" +
				harness.Tail(harness.StripANSI(p.Output()), 10)
		}
		return ""
	})
	if !exists(filepath.Join(dir, "codex-made-this")) {
		t.Errorf("the approved command did not run")
	}
}

// A real `codex exec` turn the stub answers with 429 until Codex gives up:
// agentctl reports the thread failed and blocked on quota, `wait --until
// blocked` returns it, `wait --until done` exits 1 (the run failed).
func TestCodexQuotaBlocked(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewCodex(t, srv)
	dir := harness.WorkDir(t, "billing")
	a := harness.NewAgentctl(t, c.Home)
	p := c.Exec(t, dir, "quota test STATUS=429")
	id := p.WaitStdout(t, 30*time.Second, "thread.started", harness.CodexThreadID)
	waitRollout(t, c, "quota test STATUS=429")
	out, errOut, code := a.Run(t, "wait", "--until", "blocked", "--timeout", "120s", "--json", id)
	var line struct {
		Status        string `json:"status"`
		Reached       string `json:"reached"`
		BlockedReason string `json:"blocked_reason"`
	}
	if err := json.Unmarshal([]byte(out), &line); err != nil || code != 0 || line.Reached != "blocked" || line.BlockedReason != "quota" {
		t.Fatalf("wait --until blocked: exit %d, %q %s (%v); want exit 0, reached blocked, blocked_reason quota", code, out, errOut, err)
	}
	if code := p.Wait(t, 60*time.Second); code != 1 {
		t.Errorf("codex exec exited %d after the 429s; want 1", code)
	}
	s := a.Status(t, id)
	if s.Status != "failed" || !strings.Contains(s.EvidenceDetail, "429") {
		t.Errorf("status %s (%s); want failed naming the 429", s.Status, s.EvidenceDetail)
	}
	if _, _, code := a.Run(t, "wait", "--until", "done", id); code != 1 {
		t.Errorf("wait --until done on the failed run: exit %d, want 1", code)
	}
}

type waitResult struct {
	out   string
	code  int
	after time.Time // when the wait returned
}

// startWait runs `agentctl wait --until until --timeout 60s --json id` in the
// background.
func startWait(t *testing.T, a *harness.Agentctl, id, until string) <-chan waitResult {
	t.Helper()
	res := make(chan waitResult, 1)
	cmd := exec.Command(a.Bin, "wait", "--until", until, "--timeout", "60s", "--json", id, "--home", a.Home)
	cmd.Env = a.Env.List()
	go func() {
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		res <- waitResult{string(out), code, time.Now()}
	}()
	return res
}

// startCodexTUI starts the Codex TUI on a pty in dir, trusted in its config,
// with approval policy on-request in a read-only sandbox, and returns once its
// composer takes keys (it shows "Ask Codex" within ready).
func startCodexTUI(t *testing.T, c *harness.Codex, dir, name string, ready time.Duration) *harness.PTY {
	t.Helper()
	cfg := filepath.Join(c.Home, ".codex", "config.toml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, []byte("\n[projects.\""+dir+"\"]\ntrust_level = \"trusted\"\n")...)
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// The TUI refuses TERM=dumb.
	p := harness.StartPTY(t, harness.Spec{Path: c.Bin, Args: []string{"-a", "on-request", "-s", "read-only", "-C", dir},
		Dir: dir, Env: c.Env.With("PWD", dir).With("TERM", "xterm-256color"), Name: name})
	p.WaitOutput(t, ready, 0, "Ask Codex")
	time.Sleep(2 * time.Second) // the composer takes keys a moment after it is drawn
	return p
}
