package e2e

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// sendTUI is one new agent's TUI as a user runs it in a tmux pane: its
// arguments, how to get it to take keys, and its approval dialog.
type sendTUI struct {
	agent  *harness.NewAgent
	args   []string
	ready  func(t *testing.T, x *tmuxServer) // returns once the composer takes keys
	dialog string                            // on screen while it asks to run a command
}

func sendTUIFor(t *testing.T, srv *stub.Server, name, dir string) sendTUI {
	t.Helper()
	waitScreen := func(what string, d time.Duration) func(t *testing.T, x *tmuxServer) {
		return func(t *testing.T, x *tmuxServer) {
			t.Helper()
			harness.Eventually(t, d, func() string {
				if scr := x.screen(t); !strings.Contains(scr, what) {
					return "no " + what + " on screen:\n" + scr
				}
				return ""
			})
			time.Sleep(2 * time.Second) // the composer takes keys a moment after it is drawn
		}
	}
	switch name {
	case "gemini", "qwen":
		tui := newTUIFor(t, srv, name, dir)
		return sendTUI{agent: tui.agent, args: tui.args, ready: waitScreen("Type your message", 3*time.Minute), dialog: tui.dialog}
	case "copilot":
		ag := harness.NewCopilot(t, srv)
		return sendTUI{agent: ag, dialog: "Do you want to run this command?", ready: func(t *testing.T, x *tmuxServer) {
			t.Helper()
			// The first start unpacks Copilot's runtime (7 s idle, longer when loaded).
			waitScreen("Do you trust the files in this folder?", 3*time.Minute)(t, x)
			x.run(t, "send-keys", "-t", "send", "Enter")
			waitScreen("Interactive", time.Minute)(t, x)
		}}
	}
	t.Fatalf("no TUI setup for %s", name)
	return sendTUI{}
}

// typeSettledTmux is x.typeLine with Enter 700 ms after the text shows (see
// typeSettled).
func typeSettledTmux(t *testing.T, x *tmuxServer, text string) {
	t.Helper()
	x.run(t, "send-keys", "-t", "send", "-l", text)
	harness.Eventually(t, 10*time.Second, func() string {
		if !strings.Contains(x.screen(t), text) {
			return "typed text not on screen:\n" + x.screen(t)
		}
		return ""
	})
	time.Sleep(700 * time.Millisecond)
	x.run(t, "send-keys", "-t", "send", "Enter")
}

// issue 35 for Gemini CLI, Qwen Code and Copilot CLI: none has a channel of
// its own into a running TUI session on the pinned versions (docs/agents/
// {gemini,qwen,copilot}.md "Send"), so a TUI in a tmux pane takes a message
// through the tmux fallback: delivered once the agent's own transcript (Gemini's
// chat JSONL, Qwen's chat JSONL, Copilot's events.jsonl) records it, the stub
// sees it in the next request, it is recorded exactly once, and its marker is in
// no argv at any 50 ms sample. At the approval dialog the session is refused
// without --force and the dialog is still there, untouched. The median of 10
// send→delivered times is logged for README "Send".
func TestSendGeminiTUIInTmux(t *testing.T)  { sendNewAgentTUI(t, "gemini") }
func TestSendQwenTUIInTmux(t *testing.T)    { sendNewAgentTUI(t, "qwen") }
func TestSendCopilotTUIInTmux(t *testing.T) { sendNewAgentTUI(t, "copilot") }

func sendNewAgentTUI(t *testing.T, name string) {
	harness.Require(t)
	srv := stub.Start(t, nil)
	dir := harness.WorkDir(t, "send-"+name)
	tui := sendTUIFor(t, srv, name, dir)
	ag := tui.agent
	x := startTmux(t, ag.Env.With("PWD", dir), dir, append([]string{"sh", "-c", `"$@"; echo "agent exited $?"; sleep 60`, "sh", ag.Bin}, tui.args...)...)
	// Killed before tmux's own cleanup: a TUI that tmux only hangs up on keeps
	// writing into its home while the test's temp dirs are removed.
	pane, err := strconv.Atoi(strings.TrimSpace(x.run(t, "display", "-p", "-t", "send", "#{pane_pid}")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-pane, syscall.SIGKILL)
		for i := 0; i < 100 && syscall.Kill(-pane, 0) == nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	tui.ready(t, x)
	typeSettledTmux(t, x, "first WORDS=2")
	a := harness.NewAgentctl(t, ag.Home)
	var id string
	harness.Eventually(t, 2*time.Minute, func() string {
		for _, s := range a.ListAlive(t) {
			if s.Adapter == ag.Name && s.Status == "idle" {
				id = s.ID
				return ""
			}
		}
		return "no idle " + ag.Name + " session yet\nscreen:\n" + x.screen(t)
	})
	waitStatus := func(when, status string) {
		t.Helper()
		harness.Eventually(t, 60*time.Second, func() string {
			if s := a.Status(t, id); s.Status != status {
				return when + ": status " + s.Status + " (" + s.EvidenceDetail + "), want " + status + "\nscreen:\n" + x.screen(t)
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

	// 1. Delivered, confirmed from the agent's own transcript.
	marker := strings.ToUpper(name[:2]) + "MARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	msg := "please note " + marker + " and reply"
	m := markNow(srv)
	w := watchCmdlines(marker)
	r := sendStdin(t, a, msg, "--json", id, "-")
	samples, hits := w.finish()
	if r.code != 0 {
		t.Fatalf("send: exit %d\nstdout: %s\nstderr: %s\nscreen:\n%s", r.code, r.out, r.errOut, x.screen(t))
	}
	var got struct {
		ID, Adapter, Via, Status string
		DeliveredAt              *time.Time `json:"delivered_at"`
		Record                   struct{ Kind, Text string }
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("send --json: %v\n%s", err, r.out)
	}
	if got.ID != id || got.Adapter != ag.Name || got.Via != "tmux" || got.Status != "delivered" || got.DeliveredAt == nil ||
		got.Record.Kind != "user" || got.Record.Text != msg {
		t.Errorf("send --json = %s; want id %s, %s, via tmux, delivered, a user record %q", r.out, id, ag.Name, msg)
	}
	t.Logf("send → delivered in %s; %d argv samples", r.took.Round(time.Millisecond), samples)
	enoughSamples(t, samples, r.took)
	for _, h := range hits {
		t.Errorf("the message's marker is in an argv: %s", h)
	}
	if n := userRecords(t, a, id, msg); n != 1 {
		t.Errorf("right after delivered: %d user records with the message, want 1", n)
	}
	harness.Eventually(t, 60*time.Second, func() string {
		for _, e := range since(srv, m) {
			if strings.Contains(e.Request.LastUser, msg) {
				return ""
			}
		}
		return "the stub has not seen the message in a request"
	})
	waitStatus("after the reply", "idle")
	if n := userRecords(t, a, id, msg); n != 1 {
		t.Errorf("after the reply: %d user records with the message, want exactly 1", n)
	}

	// 2. Ten more, timed: the README's median.
	var took []time.Duration
	for i := 0; i < 10; i++ {
		waitStatus("before a timed send", "idle")
		msg := "timed message " + itoa(i) + " " + marker
		r := sendStdin(t, a, msg, id, "-")
		if r.code != 0 || strings.TrimSpace(r.out) != "delivered "+id {
			t.Fatalf("timed send %d: exit %d, %q %q\nscreen:\n%s", i, r.code, r.out, r.errOut, x.screen(t))
		}
		took = append(took, r.took)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("%s TUI via tmux: send → delivered median of 10 = %s (min %s, max %s)", ag.Name,
		((took[4] + took[5]) / 2).Round(time.Millisecond), took[0].Round(time.Millisecond), took[9].Round(time.Millisecond))
	waitStatus("after the timed sends", "idle")

	// 3. The approval dialog on screen: refused without --force, the dialog
	// still there, untouched; the command never runs.
	typeSettledTmux(t, x, "TOOLCMD: touch send-made-this")
	harness.Eventually(t, 2*time.Minute, func() string {
		if !strings.Contains(x.screen(t), tui.dialog) {
			return "no approval dialog:\n" + x.screen(t)
		}
		return ""
	})
	waitStatus("at the approval dialog", "waiting")
	marker2 := "WAITMARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	r = sendStdin(t, a, "do not type this "+marker2, id, "-")
	if r.code != 1 || !strings.Contains(r.errOut, "is waiting, not idle") || !strings.Contains(r.errOut, "--force") {
		t.Errorf("send to a waiting session: exit %d, %q; want exit 1 naming waiting and --force", r.code, r.errOut)
	}
	time.Sleep(500 * time.Millisecond)
	if scr := x.screen(t); !strings.Contains(scr, tui.dialog) || strings.Contains(scr, marker2) {
		t.Errorf("after the refused send the dialog must still be there, untouched:\n%s", scr)
	}
	if n := userRecords(t, a, id, "do not type this "+marker2); n != 0 {
		t.Errorf("the refused message was recorded %d times", n)
	}
	if exists(filepath.Join(dir, "send-made-this")) {
		t.Errorf("the command ran without approval")
	}
}
