package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// newTUI is how one of the new agents' TUIs is started by hand for a test: its
// arguments (an approval mode that asks before a shell command), what its
// composer shows once it takes keys, and what its approval dialog says.
type newTUI struct {
	agent  *harness.NewAgent
	args   []string
	ready  string
	dialog string
}

// newTUIFor sets up name's TUI in dir. Gemini: dir is trusted beforehand
// (trustedFolders.json; a trust given in the dialog restarts the CLI under a
// new pid). Qwen: --approval-mode default (a fresh home's TUI starts in "Auto
// mode", where a classifier, not the user, approves).
func newTUIFor(t *testing.T, srv *stub.Server, name, dir string) newTUI {
	t.Helper()
	switch name {
	case "gemini":
		ag := harness.NewGemini(t, srv)
		writeJSONFile(t, filepath.Join(ag.Home, ".gemini", "trustedFolders.json"), map[string]string{dir: "TRUST_FOLDER"})
		return newTUI{agent: ag, ready: "Type your message", dialog: "Allow execution of"}
	case "qwen":
		return newTUI{agent: harness.NewQwen(t, srv), args: []string{"--approval-mode", "default"},
			ready: "Type your message", dialog: "Allow execution of"}
	}
	t.Fatalf("no TUI setup for %s", name)
	return newTUI{}
}

// typeSettled types text, waits until the terminal shows it, then 700 ms more,
// calls before and presses Enter. Gemini CLI takes typed text that arrives in
// one read as an untrusted paste and an Enter soon after it as a newline
// (docs/agents/gemini.md §7c): typeLine's Enter can come too early under load.
func typeSettled(t *testing.T, p *harness.PTY, text string, before func()) {
	t.Helper()
	from := p.Len()
	p.Type(t, text)
	p.WaitOutput(t, 10*time.Second, from, text)
	time.Sleep(700 * time.Millisecond)
	before()
	p.Type(t, "\r")
}

// waitAnswered waits for the stub to have answered prompt in full (a TUI's
// spinner redraws can split the reply's text in the terminal's byte stream).
// The prompt is within the request's last user message: Qwen and Copilot put
// their own context around it.
func waitAnswered(t *testing.T, srv *stub.Server, prompt string) {
	t.Helper()
	harness.Eventually(t, 2*time.Minute, func() string {
		for _, e := range srv.Exchanges() {
			if e.Completed && e.Status == 200 && strings.Contains(e.Request.LastUser, prompt) {
				return ""
			}
		}
		return "the stub has not answered " + prompt
	})
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Gemini CLI's and Qwen Code's TUIs under a pty (issue 33): idle after an
// answered prompt; at the approval dialog of a shell command, waiting (both
// infer it: the model's call is on disk and no process has started to run
// it; docs/agents/{gemini,qwen}.md) and `wait --until waiting` returns, the
// command not run; idle again once the dialog is answered and the command has
// run; SIGKILLed, no longer live (Qwen's sessions/<pid>.json, left behind, is
// stale).
func TestGeminiTUIWaiting(t *testing.T) { newAgentTUIWaiting(t, "gemini") }
func TestQwenTUIWaiting(t *testing.T)   { newAgentTUIWaiting(t, "qwen") }

func newAgentTUIWaiting(t *testing.T, name string) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	dir := harness.WorkDir(t, "webapp")
	tui := newTUIFor(t, srv, name, dir)
	ag := tui.agent
	env := ag.Env.Merge(harness.Env{"PWD": dir, "TERM": "xterm-256color"})
	p := harness.StartPTY(t, harness.Spec{Path: ag.Bin, Args: tui.args, Dir: dir, Env: env, Name: name + "-tui"})
	p.WaitOutput(t, 3*time.Minute, 0, tui.ready)
	time.Sleep(2 * time.Second) // the composer takes keys a moment after it is drawn
	typeSettled(t, p, "hello WORDS=3", func() {})
	waitAnswered(t, srv, "hello WORDS=3")

	a := harness.NewAgentctl(t, ag.Home)
	var id string
	status := func(when, want string) newSession {
		t.Helper()
		var st newSession
		harness.Eventually(t, 60*time.Second, func() string {
			a.JSON(t, &st, "status", id)
			if st.Status != want {
				return fmt.Sprintf("%s: %s is %s (evidence %s), want %s\nscreen:\n%s", when, id, st.Status, st.Evidence, want,
					harness.Tail(harness.StripANSI(p.Output()), 30))
			}
			return ""
		})
		return st
	}
	harness.Eventually(t, 60*time.Second, func() string {
		ss := listNew(t, a, ag.Name)
		if len(ss) != 1 {
			return fmt.Sprintf("%d live %s sessions listed, want 1", len(ss), ag.Name)
		}
		id = ss[0].ID
		return ""
	})
	status("after the first reply", "idle")
	var full harness.Session
	a.JSON(t, &full, "status", id)
	if full.PID == 0 {
		t.Fatalf("the idle TUI session has no pid: %+v", full)
	}

	from := p.Len()
	typeSettled(t, p, "now TOOLCMD: touch approval-probe.txt", func() {})
	p.WaitOutput(t, 2*time.Minute, from, tui.dialog)
	out, errOut, code := a.Run(t, "wait", "--until", "waiting", "--timeout", "25s", "--json", id)
	if code != 0 || !strings.Contains(out, `"status":"waiting"`) && !strings.Contains(out, `"status": "waiting"`) {
		t.Errorf("wait --until waiting at the approval dialog: exit %d\n%s%s", code, out, errOut)
	}
	w := status("at the approval dialog", "waiting")
	t.Logf("at the dialog: %s (%s)", w.Status, w.Evidence)
	probe := filepath.Join(dir, "approval-probe.txt")
	if exists(probe) {
		t.Error("the command ran without approval")
	}

	// Answer: the first choice allows it once.
	from = p.Len()
	p.Type(t, "\r")
	p.WaitOutput(t, 2*time.Minute, from, "tool said")
	if !exists(probe) {
		t.Error("the approved command did not run")
	}
	status("after answering the dialog", "idle")

	var reg []string
	if name == "qwen" {
		reg, _ = filepath.Glob(filepath.Join(ag.Home, ".qwen", "sessions", "*.json"))
	}
	syscall.Kill(-p.PID, syscall.SIGKILL)
	p.Wait(t, 20*time.Second)
	var dead newSession
	harness.Eventually(t, 30*time.Second, func() string {
		a.JSON(t, &dead, "status", id)
		if dead.Status == "running" || dead.Status == "idle" || dead.Status == "waiting" {
			return fmt.Sprintf("after SIGKILL: %+v; want it no longer live", dead)
		}
		return ""
	})
	if dead.Status != "stopped" {
		t.Errorf("killed at rest after an answered turn: %s, want stopped (%+v)", dead.Status, dead)
	}
	if name == "qwen" {
		left, _ := filepath.Glob(filepath.Join(ag.Home, ".qwen", "sessions", "*.json"))
		if len(reg) != 1 || len(left) != 1 {
			t.Errorf("registry records: %v while alive, %v after SIGKILL; want the one left behind", reg, left)
		}
		if dead.Evidence != "stale-registry" {
			t.Errorf("after SIGKILL: evidence %s, want stale-registry (the record left behind)", dead.Evidence)
		}
	}
}

// The status-accuracy benchmark's TUI rows for Gemini CLI, Qwen Code and
// Copilot CLI (issue 33), each under a pty: idle, a held reply (running), the
// reply (idle), a held tool call, its approval dialog (waiting), approved (the
// command runs, its result is answered: idle), SIGKILL (stopped). Ground truth
// from the stub (held, sent) and the screen (the dialog shown), sampled every
// 250 ms as in accuracy_test.go.
func TestStatusAccuracyNewAgentsTUI(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	for _, name := range []string{"gemini", "qwen", "copilot"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := stub.Start(t, nil)
			dir := harness.WorkDir(t, "acc")
			var tui newTUI
			if name == "copilot" {
				tui = newTUI{agent: harness.NewCopilot(t, srv), ready: "Interactive", dialog: "Do you want to run this command?"}
			} else {
				tui = newTUIFor(t, srv, name, dir)
			}
			ag := tui.agent
			p := harness.StartPTY(t, harness.Spec{Path: ag.Bin, Args: tui.args, Dir: dir,
				Env: ag.Env.Merge(harness.Env{"PWD": dir, "TERM": "xterm-256color"}), Name: name + "-tui-acc"})
			if name == "copilot" {
				p.WaitOutput(t, 3*time.Minute, 0, "Do you trust the files in this folder?")
				p.Type(t, "\r")
			}
			p.WaitOutput(t, 3*time.Minute, 0, tui.ready)
			time.Sleep(2 * time.Second)
			typeSettled(t, p, "hello WORDS=3", func() {})
			waitAnswered(t, srv, "hello WORDS=3")
			a := harness.NewAgentctl(t, ag.Home)
			var id string
			harness.Eventually(t, 60*time.Second, func() string {
				ss := listNew(t, a, ag.Name)
				if len(ss) != 1 || ss[0].Status != "idle" {
					return fmt.Sprintf("live %s sessions: %+v, want one idle", ag.Name, ss)
				}
				id = ss[0].ID
				return ""
			})
			var tr truth
			tr.set("idle")
			s := startSampler(t, a, id)
			time.Sleep(3 * time.Second)

			// replied waits for the stub to complete a matching request made
			// after the first n exchanges (Qwen's memory extractor also sends
			// tool results, after the first turn).
			replied := func(what string, n int, match func(stub.Exchange) bool) {
				t.Helper()
				var sent time.Time
				harness.Eventually(t, 60*time.Second, func() string {
					for _, e := range srv.Exchanges()[n:] {
						if e.Request.API != "" && match(e) && e.Completed {
							sent = e.Done
							return ""
						}
					}
					return what + " was not sent\nscreen:\n" + harness.Tail(harness.StripANSI(p.Output()), 30)
				})
				// The TUI ends its turn once the reply was sent, a moment the
				// ground truth cannot see: both states count for 2 s.
				tr.setAt(sent, "running|idle")
				time.Sleep(time.Until(sent.Add(2 * time.Second)))
				tr.set("idle")
				time.Sleep(3 * time.Second)
			}

			hold := name + "acc"
			typeSettled(t, p, "accuracy HOLD="+hold, func() { tr.between("idle", "running") })
			waitHeldFor(t, srv, hold, 60*time.Second)
			tr.set("running")
			time.Sleep(3 * time.Second)
			srv.Release(hold)
			replied("the held reply", 0, func(e stub.Exchange) bool { return strings.Contains(e.Request.LastUser, "HOLD="+hold) })

			hold2 := name + "acc2"
			from := p.Len()
			typeSettled(t, p, "HOLD="+hold2+" TOOLCMD: touch acc-made-this", func() { tr.between("idle", "running") })
			waitHeldFor(t, srv, hold2, 60*time.Second)
			tr.set("running")
			time.Sleep(3 * time.Second)
			srv.Release(hold2)
			// The agent asks once it has read the tool call: the moment lies
			// between the stub sending the call and the dialog on screen.
			tr.setAt(toolSent(t, srv), "running|waiting")
			p.WaitOutput(t, 60*time.Second, from, tui.dialog)
			tr.set("waiting")
			time.Sleep(4 * time.Second)
			n := len(srv.Exchanges())
			p.Type(t, "\r") // the first choice: allow once
			tr.between("waiting", "running")
			replied("the answer to the tool result", n, func(e stub.Exchange) bool { return e.Request.ToolResult })
			if !exists(filepath.Join(dir, "acc-made-this")) {
				t.Error("the approved command did not run")
			}

			tr.between("idle", "stopped")
			syscall.Kill(-p.PID, syscall.SIGKILL)
			p.Wait(t, 20*time.Second)
			time.Sleep(2 * time.Second) // Copilot's native child takes a moment to die
			tr.set("stopped")
			time.Sleep(3 * time.Second)
			s.finish(t, ag.Name+" "+agentVersion(name)+" TUI: idle, held reply, reply, held tool call, approval dialog, approve, SIGKILL", &tr)
		})
	}
}
