package e2e

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// The OpenCode scenarios of the status accuracy benchmark (accuracy_test.go
// has the sampler and the scoring; README "Status accuracy").

// logWrong logs every sample that shows a state not true at its start or end,
// with the evidence agentctl gave for it (finish lists them only on failure); call it after finish.
func logWrong(t *testing.T, s *sampler, tr *truth) {
	t.Helper()
	for _, sm := range s.samples {
		if !tr.ok(sm.state, sm.start) && !tr.ok(sm.state, sm.end) {
			t.Logf("wrong sample %s–%s: %s (%s), true %s", sm.start.Format("15:04:05.000"), sm.end.Format("15:04:05.000"), sm.state, sm.detail, tr.at(sm.end))
		}
	}
}

// `opencode serve` with "bash": "ask", driven over its HTTP API as its TUI and
// web UI drive it: at rest with a session and no prompt, running while the
// reply is held, waiting while the server lists the permission request for the
// tool call, running while the approved command runs (3 s) and the reply to
// its output is held, at rest after it, stopped once the server exits
// (SIGTERM). At rest, a server's session is not tied to it: the server lists
// only busy sessions and can prompt any session of the store, so idle and
// stopped are one state there (docs/agents/opencode.md §4.3) and both count.
func TestStatusAccuracyOpenCodeServe(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, func(r *stub.Request) stub.Reply {
		rep := stub.Keywords(r)
		if r.ToolResult {
			rep.Hold = "osacc2"
		}
		return rep
	})
	o := harness.NewOpenCode(t, srv)
	o.AskBeforeBash(t)
	dir := harness.WorkDir(t, "acc")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p := harness.Start(t, harness.Spec{Path: o.Bin, Args: []string{"serve", "--hostname", "127.0.0.1", "--port", fmt.Sprint(port)},
		Dir: dir, Env: o.Env.With("PWD", dir), Name: "opencode-serve-acc"})
	oc := ocServer{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	deadline := time.Now().Add(120 * time.Second) // slow to start on a loaded machine
	for !oc.healthy() {
		if time.Now().After(deadline) {
			t.Fatal("opencode serve did not answer /global/health within 120 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	var sess struct {
		ID string `json:"id"`
	}
	oc.post("/session", `{}`, &sess)
	a := harness.NewAgentctl(t, o.Home)
	harness.Eventually(t, 60*time.Second, func() string {
		if _, _, code := a.Run(t, "status", sess.ID); code != 0 {
			return "the new session is not found yet"
		}
		return ""
	})
	const rest = "idle|stopped"
	var tr truth
	tr.set(rest)
	s := startSampler(t, a, sess.ID)
	time.Sleep(3 * time.Second)

	oc.post("/session/"+sess.ID+"/prompt_async",
		`{"model":{"providerID":"fake","modelID":"fake-model"},"parts":[{"type":"text","text":"HOLD=osacc TOOLCMD: sleep 3; touch acc-made-this"}]}`, nil)
	// From the prompt to the stub holding its request, the turn has started
	// at a moment the harness cannot see.
	tr.between(rest, "running")
	waitHeldFor(t, srv, "osacc", 180*time.Second)
	tr.set("running")
	time.Sleep(3 * time.Second)
	srv.Release("osacc")
	tr.setAt(toolSent(t, srv), "running|waiting")
	var reqID string
	deadline = time.Now().Add(120 * time.Second)
	for reqID == "" {
		var reqs []struct {
			ID        string `json:"id"`
			SessionID string `json:"sessionID"`
		}
		oc.get("/permission", &reqs)
		for _, r := range reqs {
			if r.SessionID == sess.ID {
				reqID = r.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no permission request within 120 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	tr.set("waiting")
	time.Sleep(3 * time.Second)
	oc.post("/permission/"+reqID+"/reply", `{"reply":"once"}`, nil)
	tr.set("running")
	waitHeldFor(t, srv, "osacc2", 60*time.Second)
	time.Sleep(3 * time.Second)
	srv.Release("osacc2")
	var sent time.Time
	harness.Eventually(t, 60*time.Second, func() string {
		es := srv.ModelExchanges(func(e stub.Exchange) bool { return e.Request.ToolResult && e.Completed })
		if len(es) == 0 {
			return "the reply to the approved call was not sent"
		}
		sent = es[0].Done
		return ""
	})
	tr.setAt(sent, "running|"+rest)
	time.Sleep(time.Until(sent.Add(2 * time.Second)))
	tr.set(rest)
	time.Sleep(3 * time.Second)

	tr.between(rest, "stopped")
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.Wait(t, 30*time.Second)
	tr.set("stopped")
	time.Sleep(3 * time.Second)
	s.finish(t, "OpenCode 1.18.33 serve (HTTP API): idle, held reply, permission request, approve, 3 s command, held reply, reply, SIGTERM", &tr)
	logWrong(t, s, &tr)
}

// The OpenCode TUI (`opencode` with no subcommand) on a pty, with "bash":
// "ask": at rest after a first reply (the TUI writes the session only at the
// first prompt), running while a reply is held, waiting while it asks to run
// the tool call, running while the approved command runs (3 s) and the reply
// to its output is held, at rest after it; then a prompt the provider answers
// 401, which OpenCode retries (6 requests over ~75 s) before it records the
// error: running until then, blocked on auth after; /exit leaves the session
// failed and blocked (its last turn is the error). The TUI keeps a pending
// permission in its own memory: it is readable only over the TUI's HTTP API,
// which it serves with --port (docs/agents/opencode.md §4.1 (2)), so the TUI
// runs with --port here; without it the ask is shown running. At rest, as
// for serve, idle and stopped are one state: a session whose turn is closed
// is not tied to the TUI (docs/agents/opencode.md §4.3).
func TestStatusAccuracyOpenCodeTUI(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, func(r *stub.Request) stub.Reply {
		rep := stub.Keywords(r)
		if r.ToolResult {
			rep.Hold = "otui2"
		}
		return rep
	})
	o := harness.NewOpenCode(t, srv)
	o.AskBeforeBash(t)
	dir := harness.WorkDir(t, "acc")
	port := freePort(t)
	p, id := startOpenCodeTUI(t, o, dir, "--hostname", "127.0.0.1", "--port", fmt.Sprint(port))
	oc := ocServer{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	a := harness.NewAgentctl(t, o.Home)

	const rest = "idle|stopped"
	var tr truth
	tr.set(rest)
	s := startSampler(t, a, id)
	time.Sleep(3 * time.Second)

	tr.between(rest, "running")
	typeLine(t, p, "HOLD=otui TOOLCMD: sleep 3; touch acc-made-this")
	waitHeldFor(t, srv, "otui", 120*time.Second)
	tr.set("running")
	time.Sleep(3 * time.Second)
	srv.Release("otui")
	tr.setAt(toolSent(t, srv), "running|waiting")
	reqID := ocPermission(t, oc, id)
	tr.set("waiting")
	time.Sleep(3 * time.Second)
	// Approved through the TUI's API, as its dialog does.
	oc.post("/permission/"+reqID+"/reply", `{"reply":"once"}`, nil)
	tr.set("running")
	waitHeldFor(t, srv, "otui2", 60*time.Second)
	time.Sleep(3 * time.Second)
	srv.Release("otui2")
	sent := replySent(t, srv, func(e stub.Exchange) bool { return e.Request.ToolResult })
	tr.setAt(sent, "running|"+rest)
	time.Sleep(time.Until(sent.Add(2 * time.Second)))
	tr.set(rest)
	time.Sleep(3 * time.Second)

	// A rejected key: OpenCode retries the 401 (running), then records the
	// error on the turn, at a moment the stub cannot see: from the last 401
	// on, running and blocked both count.
	const blocked = "idle!auth|failed!auth"
	tr.between(rest, "running")
	typeLine(t, p, "accuracy auth STATUS=401")
	errs := func() []stub.Exchange {
		return srv.ModelExchanges(func(e stub.Exchange) bool { return e.Status == 401 && e.Completed })
	}
	harness.Eventually(t, 60*time.Second, func() string {
		if len(errs()) == 0 {
			return "no 401 sent yet"
		}
		return ""
	})
	tr.set("running")
	const tries = 6 // what 1.18.33 sends (TestStatusAccuracyOpenCodeRunAuth)
	harness.Eventually(t, 240*time.Second, func() string {
		if n := len(errs()); n < tries {
			return fmt.Sprintf("%d of %d HTTP 401 replies sent", n, tries)
		}
		return ""
	})
	last := errs()[tries-1].Done
	tr.setAt(last, "running|"+blocked)
	time.Sleep(time.Until(last.Add(3 * time.Second)))
	tr.set(blocked)
	time.Sleep(3 * time.Second)
	if n := len(errs()); n != tries {
		t.Fatalf("OpenCode sent %d HTTP 401 replies, the scenario expects it to give up after %d", n, tries)
	}

	tr.between(blocked, "failed!auth")
	typeLine(t, p, "/exit")
	p.Wait(t, 60*time.Second)
	tr.set("failed!auth")
	time.Sleep(3 * time.Second)
	s.finish(t, "OpenCode 1.18.33 TUI (pty, --port): idle, held reply, permission request, approve, 3 s command, held reply, reply, 401 (6 sent), /exit", &tr)
	logWrong(t, s, &tr)
}

// freePort is a loopback TCP port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ocPermission waits for the OpenCode server at oc to list a permission request
// of session id and returns its id.
func ocPermission(t *testing.T, oc ocServer, id string) string {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		var reqs []struct {
			ID        string `json:"id"`
			SessionID string `json:"sessionID"`
		}
		oc.get("/permission", &reqs)
		for _, r := range reqs {
			if r.SessionID == id {
				return r.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no permission request within 120 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replySent is the stub's send time of the first completed reply to a request
// that keep selects.
func replySent(t *testing.T, srv *stub.Server, keep func(stub.Exchange) bool) time.Time {
	t.Helper()
	var sent time.Time
	harness.Eventually(t, 60*time.Second, func() string {
		es := srv.ModelExchanges(func(e stub.Exchange) bool { return keep(e) && e.Completed })
		if len(es) == 0 {
			return "the reply was not sent"
		}
		sent = es[0].Done
		return ""
	})
	return sent
}

// The OpenCode TUI as users start it, without --port: it listens nowhere, so
// its sessions rest on the process (a TUI in the session's directory, started
// before the prompt): running while a reply is held, at rest after it,
// stopped after /exit. What it cannot show (a permission it asks for) is
// left out here and covered with --port above.
func TestStatusAccuracyOpenCodeTUINoPort(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	o := harness.NewOpenCode(t, srv)
	dir := harness.WorkDir(t, "acc")
	p, id := startOpenCodeTUI(t, o, dir)
	a := harness.NewAgentctl(t, o.Home)

	const rest = "idle|stopped"
	var tr truth
	tr.set(rest)
	s := startSampler(t, a, id)
	time.Sleep(3 * time.Second)

	tr.between(rest, "running")
	typeLine(t, p, "accuracy HOLD=otuin")
	waitHeldFor(t, srv, "otuin", 120*time.Second)
	tr.set("running")
	time.Sleep(3 * time.Second)
	srv.Release("otuin")
	sent := replySent(t, srv, func(e stub.Exchange) bool { return e.Reply.Hold == "otuin" })
	tr.setAt(sent, "running|"+rest)
	time.Sleep(time.Until(sent.Add(2 * time.Second)))
	tr.set(rest)
	time.Sleep(3 * time.Second)

	tr.between(rest, "stopped")
	typeLine(t, p, "/exit")
	p.Wait(t, 60*time.Second)
	tr.set("stopped")
	time.Sleep(3 * time.Second)
	s.finish(t, "OpenCode 1.18.33 TUI (pty, no --port): idle, held reply, reply, /exit", &tr)
	logWrong(t, s, &tr)
}

// startOpenCodeTUI starts the OpenCode TUI on a pty in dir with args, gets one
// reply to a first prompt (so the session exists) and returns the TUI and the
// session's id. Its first screen can take a minute on a loaded machine; keys
// typed before it are lost.
func startOpenCodeTUI(t *testing.T, o *harness.OpenCode, dir string, args ...string) (*harness.PTY, string) {
	t.Helper()
	p := harness.StartPTY(t, harness.Spec{Path: o.Bin, Args: args, Dir: dir, Env: o.Env.With("PWD", dir).With("TERM", "xterm-256color"), Name: "opencode-tui-acc"})
	p.WaitOutput(t, 300*time.Second, 0, "Ask anything")
	time.Sleep(2 * time.Second)
	from := p.Len()
	typeLine(t, p, "first")
	p.WaitOutput(t, 120*time.Second, from, "FAKE-REPLY")
	return p, openCodeSessionIn(t, o, dir)
}
