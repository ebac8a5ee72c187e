package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// issue 35: a Codex TUI (the pinned CLI, its default: the thread runs in the
// app-server daemon the TUI starts) takes a message from `agentctl send`
// through the daemon's queue (thread/queue/add on the daemon's unix socket,
// what `codex queue` sends, the text in the request body; docs/agents/codex.md
// §12): can_send says codex-app-server for a session whose lock holder is the
// pid in CODEX_HOME/app-server-daemon/daemon.pid; send exits 0 only once the
// rollout (read here directly) holds the message; the stub's next request
// carries it; the TUI shows it; it is recorded exactly once; its marker is in
// no process's argv at any 50 ms sample. While a turn is held (HOLD=name) a
// send is refused without --force, and with --force (the daemon queues it
// behind the turn) exits 1 "not yet recorded" within --timeout; released, the
// queued message runs once. The median of 10 send→delivered is logged.
func TestSendCodexDaemonTUI(t *testing.T) {
	harness.Require(t)
	srv := stub.Start(t, nil)
	c := harness.NewCodex(t, srv)
	codexHome := filepath.Join(c.Home, ".codex")
	dir := harness.WorkDir(t, "send-codexd")
	// Last cleanup to run: the daemon the TUI leaves behind (PPID 1 once the
	// TUI is gone), stopped the way a user would, then by its pid files.
	t.Cleanup(func() { stopCodexDaemon(c, codexHome) })
	x, a, id, idle := codexTUIInTmux(t, c, dir)
	// The daemon hosts the thread: its pid (Codex's own pid file) holds it.
	daemon := codexDaemonPID(t, codexHome)
	var st struct {
		PID     int    `json:"pid"`
		CanSend string `json:"can_send"`
	}
	a.JSON(t, &st, "status", id)
	if st.PID != daemon || daemon == 0 {
		t.Fatalf("status pid %d; the daemon's (daemon.pid) is %d: the thread is not daemon-hosted, the test would prove nothing", st.PID, daemon)
	}
	if st.CanSend != "codex-app-server" {
		t.Errorf("status --json can_send %q, want codex-app-server", st.CanSend)
	}
	rollout := codexRolloutOf(t, c, id)

	marker := "CXDMARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	msg := "please note " + marker + " and reply"
	m := markNow(srv)
	w := watchCmdlines(marker)
	r := sendStdin(t, a, msg, "--json", id, "-")
	// Read at once: exit 0 must mean the rollout already has it.
	atExit := rolloutUserTexts(t, rollout, msg)
	samples, hits := w.finish()
	if r.code != 0 {
		t.Fatalf("send: exit %d\nstdout: %s\nstderr: %s\nscreen:\n%s", r.code, r.out, r.errOut, x.screen(t))
	}
	if atExit != 1 {
		t.Errorf("when send exited 0 the rollout held the message %d times, want 1", atExit)
	}
	var out struct {
		Via    string `json:"via"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.out), &out); err != nil || out.Via != "codex-app-server" || out.Status != "delivered" {
		t.Errorf("send --json = %s; want via codex-app-server, delivered", r.out)
	}
	t.Logf("send → delivered in %s; %d argv samples", r.took.Round(time.Millisecond), samples)
	enoughSamples(t, samples, r.took)
	for _, h := range hits {
		t.Errorf("the message's marker is in an argv: %s", h)
	}
	harness.Eventually(t, 30*time.Second, func() string {
		ex := since(srv, m)
		if len(ex) == 0 {
			return "no model request since the send"
		}
		if !strings.Contains(ex[0].Request.LastUser, msg) {
			return "the next model request's last user message is " + strconv.Quote(ex[0].Request.LastUser)
		}
		return ""
	})
	harness.Eventually(t, 30*time.Second, func() string {
		if !strings.Contains(x.screen(t), marker) {
			return "the TUI does not show the message:\n" + x.screen(t)
		}
		return ""
	})
	idle("after the reply")
	if n := rolloutUserTexts(t, rollout, msg); n != 1 {
		t.Errorf("after the reply: the rollout has %d user messages with the text, want exactly 1", n)
	}
	if n := userRecords(t, a, id, msg); n != 1 {
		t.Errorf("after the reply: peek shows %d user records with the message, want exactly 1", n)
	}

	// A held turn: the session is busy.
	held := "hold this HOLD=cxq " + marker
	if r := sendStdin(t, a, held, id, "-"); r.code != 0 {
		t.Fatalf("send (held turn): exit %d %q %q", r.code, r.out, r.errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := srv.WaitHeld(ctx, "cxq"); err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			srv.Release("cxq")
		}
	}()
	late := "queued behind the turn " + marker
	if r := sendStdin(t, a, late, id, "-"); r.code != 1 || !strings.Contains(r.errOut, "not idle") {
		t.Errorf("send to a busy thread without --force: exit %d, stderr %q; want 1, not idle", r.code, r.errOut)
	}
	const limit = 3 * time.Second
	r = sendStdin(t, a, late, "--force", "--timeout", "3s", id, "-")
	if r.code != 1 || !strings.Contains(r.errOut, "sent via codex-app-server; not yet recorded") {
		t.Errorf("send --force behind a held turn: exit %d, stderr %q; want 1, not yet recorded", r.code, r.errOut)
	}
	if r.took < limit || r.took > limit+20*time.Second {
		t.Errorf("send --timeout 3s took %s", r.took)
	}
	if n := rolloutUserTexts(t, rollout, late); n != 0 {
		t.Errorf("the rollout has the queued message %d times while the turn is held, want 0", n)
	}
	m = markNow(srv)
	srv.Release("cxq")
	released = true
	harness.Eventually(t, 60*time.Second, func() string {
		for _, e := range since(srv, m) {
			if strings.Contains(e.Request.LastUser, late) {
				return ""
			}
		}
		return "the stub has not seen the queued message after the release"
	})
	idle("after the queued message ran")
	if n := rolloutUserTexts(t, rollout, late); n != 1 {
		t.Errorf("the queued message is in the rollout %d times, want exactly 1", n)
	}

	timedSends(t, a, id, id, marker, "codex TUI via codex-app-server", idle, func() string { return x.screen(t) })
}

// trustCodexProject marks dir trusted in c's config.toml (no trust prompt).
func trustCodexProject(t *testing.T, c *harness.Codex, dir string) {
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
}

func codexDaemonPID(t *testing.T, codexHome string) int {
	t.Helper()
	return harness.CodexDaemonPID(codexHome, "daemon.pid")
}

// stopCodexDaemon stops the TUI's daemon (`codex app-server daemon stop`),
// then kills whatever its pid files still name.
func stopCodexDaemon(c *harness.Codex, codexHome string) {
	cmd := exec.Command(c.Bin, "app-server", "daemon", "stop")
	cmd.Env = c.Env.List()
	done := make(chan struct{})
	go func() { _ = cmd.Run(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	}
	harness.KillCodexDaemons(codexHome)
}

// codexRolloutOf is the rollout file of thread id.
func codexRolloutOf(t *testing.T, c *harness.Codex, id string) string {
	t.Helper()
	for _, p := range c.Rollouts() {
		if strings.HasSuffix(p, id+".jsonl") {
			return p
		}
	}
	t.Fatalf("no rollout for %s among %q", id, c.Rollouts())
	return ""
}

// rolloutUserTexts counts the rollout's user messages (response_item,
// role user) whose text is msg, read straight from Codex's file.
func rolloutUserTexts(t *testing.T, path, msg string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var l struct {
			Type    string `json:"type"`
			Payload struct {
				Type    string `json:"type"`
				Role    string `json:"role"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"payload"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Type != "response_item" || l.Payload.Type != "message" || l.Payload.Role != "user" {
			continue
		}
		for _, c := range l.Payload.Content {
			if c.Type == "input_text" && strings.TrimSpace(c.Text) == msg {
				n++
			}
		}
	}
	return n
}
