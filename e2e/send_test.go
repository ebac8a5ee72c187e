package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// tmuxServer is a private tmux server (its own socket) for one test.
type tmuxServer struct {
	sock string
	env  []string
}

func startTmux(t *testing.T, env harness.Env, dir string, argv ...string) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is not installed: %v", err)
	}
	x := &tmuxServer{sock: filepath.Join(harness.TempDir(t), "tmux.sock"), env: env.Merge(harness.Env{"TERM": "xterm-256color"}).List()}
	x.run(t, append([]string{"-f", "/dev/null", "new-session", "-d", "-s", "send", "-x", "160", "-y", "48", "-c", dir, "--"}, argv...)...)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", x.sock, "kill-server").Run() })
	return x
}

func (x *tmuxServer) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", x.sock}, args...)...)
	cmd.Env = x.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (x *tmuxServer) screen(t *testing.T) string { return x.run(t, "capture-pane", "-p", "-t", "send") }

// typeLine types text into the pane as keys (the test's own typing, not
// agentctl's), then Enter.
func (x *tmuxServer) typeLine(t *testing.T, text string) {
	t.Helper()
	x.run(t, "send-keys", "-t", "send", "-l", text)
	harness.Eventually(t, 10*time.Second, func() string {
		if !strings.Contains(x.screen(t), text) {
			return "typed text not on screen:\n" + x.screen(t)
		}
		return ""
	})
	x.run(t, "send-keys", "-t", "send", "Enter")
}

// cmdlineWatch reads every /proc/*/cmdline every 50 ms, looking for a marker.
type cmdlineWatch struct {
	mu      sync.Mutex
	samples int
	hits    []string
	stop    chan struct{}
	done    chan struct{}
}

func watchCmdlines(marker string) *cmdlineWatch {
	w := &cmdlineWatch{stop: make(chan struct{}), done: make(chan struct{})}
	m := []byte(marker)
	go func() {
		defer close(w.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			ents, _ := os.ReadDir("/proc")
			var hits []string
			for _, e := range ents {
				if e.Name()[0] < '0' || e.Name()[0] > '9' {
					continue
				}
				b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				if err == nil && bytes.Contains(b, m) {
					hits = append(hits, "pid "+e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
				}
			}
			w.mu.Lock()
			w.samples++
			w.hits = append(w.hits, hits...)
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *cmdlineWatch) finish() (int, []string) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples, w.hits
}

type sendResult struct {
	out, errOut string
	code        int
	took        time.Duration
}

// sendStdin runs `agentctl send … ID -` with msg on stdin.
func sendStdin(t *testing.T, a *harness.Agentctl, msg string, args ...string) sendResult {
	t.Helper()
	cmd := exec.Command(a.Bin, append(append([]string{"send"}, args...), "--home", a.Home)...)
	cmd.Env = a.Env.List()
	cmd.Stdin = strings.NewReader(msg)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	r := sendResult{out: o.String(), errOut: e.String(), took: time.Since(start)}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentctl send: %v", err)
	}
	return r
}

// userRecords counts the transcript's user items whose text is msg.
func userRecords(t *testing.T, a *harness.Agentctl, id, msg string) int {
	t.Helper()
	var msgs []harness.Message
	a.JSON(t, &msgs, "peek", "-n", "0", id)
	n := 0
	for _, m := range msgs {
		if m.Kind == "user" && strings.TrimSpace(m.Text) == msg {
			n++
		}
	}
	return n
}

// sendChecked runs one send (do: sendStdin with --json, retried by the caller
// as it needs) while every argv is sampled, and holds it to what issue 35
// asks of every channel: exit 0; --json says delivered via via, for session
// id, with the message as its user record; at least two argv samples and the
// marker in none; the stub sees the message in a request. screen adds what the
// agent shows to a failure (nil: nothing).
func sendChecked(t *testing.T, srv *stub.Server, id, via, msg, marker string, screen func() string, do func() sendResult) sendResult {
	t.Helper()
	m := markNow(srv)
	w := watchCmdlines(marker)
	r := do()
	samples, hits := w.finish()
	if r.code != 0 {
		t.Fatalf("send: exit %d\nstdout: %s\nstderr: %s%s", r.code, r.out, r.errOut, shown(screen))
	}
	var got struct {
		ID, Via, Status string
		DeliveredAt     *time.Time `json:"delivered_at"`
		Record          struct{ Kind, Text string }
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("send --json: %v\n%s", err, r.out)
	}
	if got.ID != id || got.Via != via || got.Status != "delivered" || got.DeliveredAt == nil || got.Record.Kind != "user" || got.Record.Text != msg {
		t.Errorf("send --json = %s; want id %s via %s, delivered, a user record %q", r.out, id, via, msg)
	}
	t.Logf("send → delivered in %s; %d argv samples", r.took.Round(time.Millisecond), samples)
	enoughSamples(t, samples, r.took)
	for _, h := range hits {
		t.Errorf("the message's marker is in an argv: %s", h)
	}
	harness.Eventually(t, 120*time.Second, func() string {
		for _, e := range since(srv, m) {
			if strings.Contains(e.Request.LastUser, msg) {
				return ""
			}
		}
		return "the stub has not seen the message in a request"
	})
	return r
}

// enoughSamples: the argv sampler looks at once and then every 50 ms, so a
// send that took 100 ms or more must have been seen at least twice (a faster
// one, such as pi-rpc's 13 ms, may be seen once).
func enoughSamples(t *testing.T, samples int, took time.Duration) {
	t.Helper()
	if samples < 2 && took >= 100*time.Millisecond {
		t.Errorf("only %d argv samples during a send of %s", samples, took)
	}
}

func shown(screen func() string) string {
	if screen == nil {
		return ""
	}
	return "\nscreen:\n" + screen()
}

// timedSends sends ten messages to ref (each once ready says the session can
// take one), each of which must print "delivered <id>", and logs the median
// time from send to delivered for README "send" under label.
func timedSends(t *testing.T, a *harness.Agentctl, ref, id, marker, label string, ready func(when string), screen func() string, args ...string) {
	t.Helper()
	var took []time.Duration
	for i := 0; i < 10; i++ {
		ready("before a timed send")
		msg := "timed message " + itoa(i) + " " + marker
		r := sendStdin(t, a, msg, append(append([]string{}, args...), ref, "-")...)
		if r.code != 0 || strings.TrimSpace(r.out) != "delivered "+id {
			t.Fatalf("timed send %d: exit %d, %q %q%s", i, r.code, r.out, r.errOut, shown(screen))
		}
		took = append(took, r.took)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("%s: send → delivered median of 10 = %s (min %s, max %s)", label,
		((took[4] + took[5]) / 2).Round(time.Millisecond), took[0].Round(time.Millisecond), took[9].Round(time.Millisecond))
}

// issue 35: a Claude Code TUI running in a tmux pane takes a message from
// `agentctl send`: a bracketed paste and Enter, confirmed from the transcript.
// The message reaches the stub's next request, is recorded exactly once, and
// its marker is in no process's argv at any 50 ms sample. A session at a
// permission prompt is refused (the prompt stays); a message the agent never
// records (its process stopped) exits 1 with "not yet recorded" within
// --timeout. The median of 10 send→delivered times is logged for README "send".
func TestSendClaudeTUIInTmux(t *testing.T) {
	harness.Require(t)
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	dir := harness.WorkDir(t, "send")
	seedClaudeJSON(t, c, dir)
	id := uuid.NewString()
	// The pane runs a shell that runs claude: send must find the pane from a
	// descendant of its process. (It also keeps tmux from continuing claude
	// when step 4 stops it: tmux sends SIGCONT to a pane process that stops.)
	x := startTmux(t, c.Env, dir, "sh", "-c", `"$@"; echo "claude exited $?"; sleep 60`, "sh",
		c.Bin, "--session-id", id, "--permission-mode", "default")
	a := harness.NewAgentctl(t, c.Home)

	waitStatus := func(when, status string) harness.Session {
		t.Helper()
		var s harness.Session
		harness.Eventually(t, 30*time.Second, func() string {
			s = a.StatusOrMissing(t, id) // claude may not have started yet
			if s.Status != status || s.PID == 0 {
				return when + ": status " + s.Status + " (" + s.Evidence + ": " + s.EvidenceDetail + "), want " + status + "\nscreen:\n" + x.screen(t)
			}
			return ""
		})
		return s
	}
	s := waitStatus("started", "idle")
	if reg, err := os.ReadFile(c.Registry(s.PID)); err == nil {
		t.Logf("registry entry: %s", reg) // docs/agents/claude-code.md §11: tmux, messagingSocketPath
	}

	// can_send says tmux.
	var st struct {
		CanSend string `json:"can_send"`
	}
	a.JSON(t, &st, "status", id)
	if st.CanSend != "tmux" {
		t.Errorf("status --json can_send %q, want tmux", st.CanSend)
	}
	var ls []struct {
		ID      string `json:"id"`
		CanSend string `json:"can_send"`
	}
	a.JSON(t, &ls, "list")
	for _, l := range ls {
		if l.ID == id && l.CanSend != "tmux" {
			t.Errorf("list --json can_send %q, want tmux", l.CanSend)
		}
	}

	// 1. Delivered, confirmed from the transcript.
	marker := "SENDMARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	msg := "please note " + marker + " and reply"
	r := sendChecked(t, srv, id, "tmux", msg, marker, func() string { return x.screen(t) },
		func() sendResult { return sendStdin(t, a, msg, "--json", id, "-") })
	// The transcript had it when send said so (send's own confirmation).
	if n := userRecords(t, a, id, msg); n != 1 {
		t.Errorf("right after delivered: %d user records with the message, want 1", n)
	}
	waitStatus("after the reply", "idle")
	if n := userRecords(t, a, id, msg); n != 1 {
		t.Errorf("after the reply: %d user records with the message, want exactly 1", n)
	}

	// The journal has both events, via tmux, never the text.
	j, err := os.ReadFile(filepath.Join(a.State, "events.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"session.message_sent", "session.message_delivered"} {
		if !strings.Contains(string(j), `"type":"`+typ+`"`) {
			t.Errorf("journal has no %s:\n%s", typ, j)
		}
	}
	if !strings.Contains(string(j), `"via":"tmux"`) || strings.Contains(string(j), marker) {
		t.Errorf("journal: want via tmux and never the message:\n%s", j)
	}

	// 2. Ten more, timed: the README's median.
	timedSends(t, a, id, id, marker, "claude-code TUI via tmux", func(when string) { waitStatus(when, "idle") }, func() string { return x.screen(t) })
	waitStatus("after the timed sends", "idle")

	// 3. A permission prompt on screen: refused without --force, and the
	// prompt is still there, untouched.
	x.typeLine(t, "TOOLCMD: touch send-made-this")
	harness.Eventually(t, 20*time.Second, func() string {
		if !strings.Contains(x.screen(t), "Do you want to proceed?") {
			return "no permission prompt:\n" + x.screen(t)
		}
		return ""
	})
	waitStatus("at the permission prompt", "waiting")
	marker2 := "WAITMARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	r = sendStdin(t, a, "do not type this "+marker2, id, "-")
	if r.code != 1 || !strings.Contains(r.errOut, "is waiting, not idle") || !strings.Contains(r.errOut, "--force") {
		t.Errorf("send to a waiting session: exit %d, %q; want exit 1 naming waiting and --force", r.code, r.errOut)
	}
	time.Sleep(500 * time.Millisecond)
	if scr := x.screen(t); !strings.Contains(scr, "Do you want to proceed?") || strings.Contains(scr, marker2) {
		t.Errorf("after the refused send the prompt must still be there, untouched:\n%s", scr)
	}
	x.run(t, "send-keys", "-t", "send", "Escape")
	s = waitStatus("after rejecting the tool", "idle")
	if exists(filepath.Join(dir, "send-made-this")) {
		t.Errorf("the rejected tool ran")
	}

	// 4. An agent that never records the message (its process stopped): exit 1
	// within --timeout, never "delivered".
	if err := syscall.Kill(s.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(s.PID, syscall.SIGCONT)
	r = sendStdin(t, a, "never recorded "+marker2, "--timeout", "3s", id, "-")
	if r.code != 1 || !strings.Contains(r.errOut, "sent via tmux; not yet recorded by claude-code after 3s") || strings.Contains(r.out, "delivered") {
		t.Errorf("send to a stopped agent: exit %d, stdout %q, stderr %q; want exit 1, not yet recorded", r.code, r.out, r.errOut)
	}
	if r.took > 8*time.Second {
		t.Errorf("send --timeout 3s took %s", r.took)
	}
	_ = syscall.Kill(s.PID, syscall.SIGCONT)
}

// issue 35: a real `opencode serve` takes a message from `agentctl send`
// through its own API (POST /session/<id>/prompt_async, the text in the
// body): delivered once the store records it, the stub sees it, it is
// recorded exactly once, and its marker is in no argv at any 50 ms sample.
// At rest the session is reported stopped (nothing ties it to the server
// without asking), yet the server hosts it: send asks the servers first. The
// median of 10 send→delivered times is logged for README "send".
func TestSendOpenCodeServe(t *testing.T) {
	harness.Require(t)
	srv := stub.Start(t, nil)
	o := harness.NewOpenCode(t, srv)
	dir := harness.WorkDir(t, "send-oc")
	oc := startOCServe(t, o, dir, "opencode-serve-send")
	oc.waitHealthy(120 * time.Second)
	id := oc.newSession("first")
	a := harness.NewAgentctl(t, o.Home)
	atRest := func(when string) {
		t.Helper()
		eventually(t, 120*time.Second, func() (bool, string) {
			s := a.Status(t, id)
			return s.Status == "stopped" || s.Status == "idle", when + ": " + s.Status + " " + s.Evidence + " " + s.EvidenceDetail
		})
	}
	atRest("after the first turn")

	var st struct {
		CanSend string `json:"can_send"`
	}
	a.JSON(t, &st, "status", id)
	if st.CanSend != "opencode-api" {
		t.Errorf("status --json can_send %q, want opencode-api", st.CanSend)
	}

	marker := "OCMARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	msg := "please note " + marker + " and reply"
	// The store may say the first turn is over a moment before the server's own
	// session status does (its runner finishes after the last write): send
	// refuses a busy session, so ask again while the server still calls it busy.
	sendChecked(t, srv, id, "opencode-api", msg, marker, nil, func() sendResult {
		var r sendResult
		for start := time.Now(); ; {
			r = sendStdin(t, a, msg, "--json", "--timeout", "120s", id, "-")
			if r.code == 0 || !strings.Contains(r.errOut, "is running, not idle") || time.Since(start) > 60*time.Second {
				return r
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
	atRest("after the reply")
	if n := userRecords(t, a, id, msg); n != 1 {
		t.Errorf("after the reply: %d user records with the message, want exactly 1", n)
	}

	timedSends(t, a, id, id, marker, "opencode serve via opencode-api", func(when string) {
		atRest(when)
		// The server must be idle too: the store's turn closes a moment before.
		eventually(t, 60*time.Second, func() (bool, string) {
			var status map[string]any
			oc.get("/session/status", &status)
			_, busy := status[id]
			return !busy, fmt.Sprint(status)
		})
	}, nil, "--timeout", "120s")
}

// issue 35: a Codex TUI (the pinned CLI) that runs its thread itself
// (--disable daemon_auto_start: no app-server daemon, so no queue to send to;
// docs/agents/codex.md "Send") in a tmux pane takes a message through the
// tmux fallback: delivered once the rollout records it, the stub sees it,
// recorded exactly once, its marker in no argv at any 50 ms sample; the median
// of 10 is logged. TestSendCodexDaemonTUI covers the default TUI.
func TestSendCodexTUIInTmux(t *testing.T) {
	harness.Require(t)
	srv := stub.Start(t, nil)
	c := harness.NewCodex(t, srv)
	dir := harness.WorkDir(t, "send-codex")
	x, a, id, idle := codexTUIInTmux(t, c, dir, "--disable", "daemon_auto_start")
	var st struct {
		CanSend string `json:"can_send"`
	}
	a.JSON(t, &st, "status", id)
	if st.CanSend != "tmux" {
		t.Errorf("status --json can_send %q, want tmux", st.CanSend)
	}

	marker := "CXMARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	msg := "please note " + marker + " and reply"
	sendChecked(t, srv, id, "tmux", msg, marker, func() string { return x.screen(t) },
		func() sendResult { return sendStdin(t, a, msg, "--json", id, "-") })
	idle("after the reply")
	if n := userRecords(t, a, id, msg); n != 1 {
		t.Errorf("after the reply: %d user records with the message, want exactly 1", n)
	}

	timedSends(t, a, id, id, marker, "codex TUI via tmux", idle, func() string { return x.screen(t) })
}

// codexTUIInTmux runs the Codex TUI of c (args before the approval flags) in
// a tmux pane in dir, trusted, and once its composer takes keys types a
// first prompt; it returns the pane, an agentctl over c's home, the session's
// id once it is idle, and a wait for idle.
func codexTUIInTmux(t *testing.T, c *harness.Codex, dir string, args ...string) (*tmuxServer, *harness.Agentctl, string, func(string)) {
	t.Helper()
	trustCodexProject(t, c, dir)
	argv := append([]string{"sh", "-c", `"$@"; echo "codex exited $?"; sleep 60`, "sh", c.Bin}, args...)
	x := startTmux(t, c.Env.With("PWD", dir), dir, append(argv, "-a", "on-request", "-s", "read-only", "-C", dir)...)
	harness.Eventually(t, 120*time.Second, func() string {
		// The composer is drawn at once, but takes keys (they are buffered till
		// then) only once the footer names the model: 15-20 s under load.
		if scr := x.screen(t); !strings.Contains(scr, "Ask Codex") || !strings.Contains(scr, "fake-model") {
			return "no ready composer:\n" + scr
		}
		return ""
	})
	x.typeLine(t, "first")
	a := harness.NewAgentctl(t, c.Home)
	var id string
	harness.Eventually(t, 60*time.Second, func() string {
		for _, s := range a.ListAlive(t) {
			if s.Adapter == "codex" && s.Status == "idle" {
				id = s.ID
				return ""
			}
		}
		return "no idle codex session yet\nscreen:\n" + x.screen(t)
	})
	idle := func(when string) {
		t.Helper()
		harness.Eventually(t, 60*time.Second, func() string {
			if s := a.Status(t, id); s.Status != "idle" {
				return when + ": status " + s.Status + " (" + s.EvidenceDetail + ")\nscreen:\n" + x.screen(t)
			}
			return ""
		})
	}
	return x, a, id, idle
}

// issue 35: the Pi TUI (1.6.0) in a tmux pane takes a message through the
// tmux fallback (a pi that agentctl launches runs in print mode, its input
// closed: docs/agents/pi.md "Send"): delivered once the session file records
// it, the stub sees it, recorded exactly once, its marker in no argv; the
// median of 10 is logged.
func TestSendPiTUIInTmux(t *testing.T) {
	harness.Require(t)
	srv := stub.Start(t, nil)
	p := harness.NewPi(t, srv)
	dir := harness.WorkDir(t, "send-pi")
	x := startTmux(t, p.Env.With("PWD", dir), dir, "sh", "-c", `"$@"; echo "pi exited $?"; sleep 60`, "sh",
		p.Bin, "--provider", "fakeoai", "--model", "fake-model")
	harness.Eventually(t, 120*time.Second, func() string {
		if scr := x.screen(t); !strings.Contains(scr, "fake-model") {
			return "no ready editor:\n" + scr
		}
		return ""
	})
	time.Sleep(time.Second)
	x.typeLine(t, "first")
	a := harness.NewAgentctl(t, p.Home)
	var id string
	harness.Eventually(t, 60*time.Second, func() string {
		for _, s := range a.ListAlive(t) {
			if s.Adapter == "pi" && s.Status == "idle" {
				id = s.ID
				return ""
			}
		}
		return "no idle pi session yet\nscreen:\n" + x.screen(t)
	})
	idle := func(when string) {
		t.Helper()
		harness.Eventually(t, 60*time.Second, func() string {
			if s := a.Status(t, id); s.Status != "idle" {
				return when + ": status " + s.Status + " (" + s.EvidenceDetail + ")\nscreen:\n" + x.screen(t)
			}
			return ""
		})
	}
	var st struct {
		CanSend string `json:"can_send"`
	}
	a.JSON(t, &st, "status", id)
	if st.CanSend != "tmux" {
		t.Errorf("status --json can_send %q, want tmux", st.CanSend)
	}

	marker := "PIMARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	msg := "please note " + marker + " and reply"
	sendChecked(t, srv, id, "tmux", msg, marker, func() string { return x.screen(t) },
		func() sendResult { return sendStdin(t, a, msg, "--json", id, "-") })
	idle("after the reply")
	if n := userRecords(t, a, id, msg); n != 1 {
		t.Errorf("after the reply: %d user records with the message, want exactly 1", n)
	}

	timedSends(t, a, id, id, marker, "pi TUI via tmux", idle, func() string { return x.screen(t) })

	// --no-wait: "queued" once handed over, never "delivered"; the session
	// records it afterwards all the same, once.
	idle("before --no-wait")
	queued := "queued message " + marker
	r := sendStdin(t, a, queued, "--no-wait", id, "-")
	if r.code != 0 || strings.TrimSpace(r.out) != "queued "+id {
		t.Fatalf("send --no-wait: exit %d, %q %q; want queued %s", r.code, r.out, r.errOut, id)
	}
	harness.Eventually(t, 30*time.Second, func() string {
		if n := userRecords(t, a, id, queued); n != 1 {
			return fmt.Sprintf("%d user records of the queued message, want 1", n)
		}
		return ""
	})
}
