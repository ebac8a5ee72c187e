package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// follower is a running `agentctl events --follow`.
type follower struct {
	mu  sync.Mutex
	out bytes.Buffer
	err bytes.Buffer
	cmd *exec.Cmd
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func follow(t *testing.T, a *harness.Agentctl, args ...string) *follower {
	t.Helper()
	f := &follower{}
	args = append([]string{"events", "--follow", "--interval", "300ms", "--json", "--home", a.Home}, args...)
	f.cmd = exec.Command(a.Bin, args...)
	f.cmd.Env = a.Env.List()
	f.cmd.Stdout = lockedWriter{&f.mu, &f.out}
	f.cmd.Stderr = lockedWriter{&f.mu, &f.err}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- f.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("events --follow after SIGINT: %v (want exit 0)\nstderr:\n%s", err, f.stderr())
			}
		case <-time.After(10 * time.Second):
			_ = f.cmd.Process.Kill()
			t.Errorf("events --follow did not stop on SIGINT")
		}
	})
	return f
}

func (f *follower) stderr() string { f.mu.Lock(); defer f.mu.Unlock(); return f.err.String() }

type eventJSON struct {
	Type      string            `json:"type"`
	Adapter   string            `json:"adapter"`
	SessionID string            `json:"session_id"`
	Timestamp time.Time         `json:"timestamp"`
	Session   map[string]any    `json:"session"`
	Meta      map[string]string `json:"meta"`
}

// events returns the events printed so far for session id.
func (f *follower) events(t *testing.T, id string) []eventJSON {
	t.Helper()
	f.mu.Lock()
	text := f.out.String()
	f.mu.Unlock()
	var out []eventJSON
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		var ev eventJSON
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("events --follow printed a line that is not JSON: %q", line)
		}
		if ev.SessionID == id {
			out = append(out, ev)
		}
	}
	return out
}

func types(evs []eventJSON) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

// waitFor waits until the session's events include want, in this order.
func (f *follower) waitFor(t *testing.T, id string, timeout time.Duration, want ...string) []eventJSON {
	t.Helper()
	var evs []eventJSON
	harness.Eventually(t, timeout, func() string {
		evs = f.events(t, id)
		i := 0
		for _, ev := range evs {
			if i < len(want) && ev.Type == want[i] {
				i++
			}
		}
		if i < len(want) {
			return "events of " + id + ": " + strings.Join(types(evs), ", ") + "; want " + strings.Join(want, " … ") +
				"\nstderr:\n" + f.stderr()
		}
		return ""
	})
	return evs
}

// A Claude Code TUI that agentctl did not launch, seen only through polling:
// session.started, session.waiting at its permission prompt, session.stopped
// after /exit — each once, from `events --follow`.
func TestEventsFollowClaudeTUI(t *testing.T) {
	harness.Require(t)
	v := claudeVersions[len(claudeVersions)-1]
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, v, srv)
	dir := harness.WorkDir(t, "events-tui")
	seedClaudeJSON(t, c, dir)
	a := harness.NewAgentctl(t, c.Home)
	f := follow(t, a)
	time.Sleep(time.Second) // the first poll is the baseline

	id := uuid.NewString()
	p := harness.StartPTY(t, harness.Spec{Path: c.Bin, Args: []string{"--session-id", id, "--permission-mode", "default"},
		Dir: dir, Env: c.Env, Name: "claude-events-tui"})
	evs := f.waitFor(t, id, 30*time.Second, "session.started")
	if evs[0].Adapter != "claude-code" || evs[0].Session["cwd"] != dir || evs[0].Session["id"] != id {
		t.Errorf("session.started: %+v", evs[0])
	}
	// session.started comes from the process's argv, before the TUI takes
	// keys: its registry entry says it is up.
	harness.Eventually(t, 30*time.Second, func() string {
		if !exists(c.Registry(p.PID)) {
			return "no registry file yet"
		}
		return ""
	})
	time.Sleep(2 * time.Second) // the TUI takes keys a moment after it registers

	from := p.Len()
	typeLine(t, p, "TOOLCMD: touch events-made-this")
	p.WaitOutput(t, 30*time.Second, from, harness.ClaudePermissionPrompt)
	f.waitFor(t, id, 20*time.Second, "session.started", "session.waiting")
	p.Type(t, "\x1b")
	f.waitFor(t, id, 20*time.Second, "session.started", "session.waiting", "session.idle")

	typeLine(t, p, "/exit")
	if code := p.Wait(t, 20*time.Second); code != 0 {
		t.Fatalf("claude TUI exited %d after /exit", code)
	}
	f.waitFor(t, id, 20*time.Second, "session.started", "session.waiting", "session.idle", "session.stopped")
	time.Sleep(time.Second) // nothing more may follow
	evs = f.events(t, id)
	count := map[string]int{}
	for _, ev := range evs {
		count[ev.Type]++
	}
	if count["session.started"] != 1 || count["session.stopped"] != 1 || count["session.waiting"] != 1 {
		t.Errorf("events of the TUI session: %v; want one started, one waiting, one stopped", types(evs))
	}
	if last := evs[len(evs)-1]; last.Type != "session.stopped" || last.Session["status"] != "stopped" {
		t.Errorf("last event %+v, want session.stopped with status stopped", last)
	}
}

// A session agentctl launched: the journal's session.launched … session.stopped,
// both with the launch's meta, and no polled duplicates.
func TestEventsFollowLaunch(t *testing.T) {
	harness.Require(t)
	v := claudeVersions[len(claudeVersions)-1]
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, v, srv)
	a := launcher(t, c)
	dir := harness.WorkDir(t, "events-launch")
	f := follow(t, a, "--type", "session")
	time.Sleep(time.Second)

	l := launchClaude(t, a, dir, "launched for events HOLD=ev", "--callback-session", "cb-key-1")
	waitHeld(t, srv, "ev")
	f.waitFor(t, l.ID, 20*time.Second, "session.launched")
	srv.Release("ev")
	f.waitFor(t, l.ID, 30*time.Second, "session.launched", "session.stopped")
	time.Sleep(time.Second)
	evs := f.events(t, l.ID)
	if got := strings.Join(types(evs), ","); got != "session.launched,session.stopped" {
		t.Errorf("events of the launched session: %s; want session.launched,session.stopped", got)
	}
	for _, ev := range evs {
		if ev.Meta["callback_session_key"] != "cb-key-1" || ev.Adapter != "claude-code" || ev.Session["launch_id"] != l.LaunchID {
			t.Errorf("%s: meta %v adapter %q session %v", ev.Type, ev.Meta, ev.Adapter, ev.Session)
		}
	}
	if last := evs[len(evs)-1]; last.Session["exit_code"] != float64(0) {
		t.Errorf("session.stopped exit_code = %v, want 0", last.Session["exit_code"])
	}
}
