package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/gateway/gatewaytest"
)

// One HOME holding real sessions of Claude Code, Codex, OpenCode and Pi, all
// started in the same project directory, plus a real OpenClaw gateway with two
// sessions — one gateway for every OpenClaw check, since it takes 10–40 s to
// start. While the stub holds the replies of Claude, Codex, OpenCode and one
// gateway session, `list -a --json` must show every session exactly once, under
// its own adapter, each running on its own evidence (Claude's registry, Codex's
// thread-writer lock, the OpenCode process, the gateway) and the finished ones
// stopped; after the replies, all stopped with the tokens the stub sent. Then
// the gateway misconfigured three ways — down, wrong token, hanging — must each
// give a warning naming the cause while the other adapters' sessions still print
// with exit 0, and the hanging one must not hold `list` beyond --timeout.
func TestMixedHomeAndOpenClawGateway(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	home := filepath.Join(harness.TempDir(t), "home")

	cl := harness.NewClaude(t, harness.ClaudeNewest, srv)
	cl.Env = rehome(t, cl.Home, home, cl.Env)
	cl.Home = home
	cx := harness.NewCodex(t, srv)
	cx.Env = rehome(t, cx.Home, home, cx.Env)
	cx.Home = home
	oc := harness.NewOpenCode(t, srv)
	oc.Env = rehome(t, oc.Home, home, oc.Env)
	oc.Home = home
	pi := harness.NewPi(t, srv)
	pi.Env = rehome(t, pi.Home, home, pi.Env)
	pi.Home = home
	dir := harness.ProjectDir(t, home, "mono")

	// Prompts name their agent, so each agent's exchanges can be told apart.
	const (
		clPrompt   = "claude part HOLD=mix-claude"
		cxPrompt   = "codex part HOLD=mix-codex"
		ocPrompt   = "opencode part HOLD=mix-opencode"
		piPrompt   = "pi part, no hold"
		gwDone     = "gateway part one"
		gwBusy     = "gateway part two HOLD=mix-gateway"
		gwDoneKey  = "agent:main:e2e-mixed-done"
		gwBusyKey  = "agent:main:e2e-mixed-busy"
		gwModel    = "fakeoai/fake-model" // the gateway config's primary model
		gwInPrice  = 1                    // and its prices per million tokens
		gwOutPrice = 2
		gwEvidence = "gateway"
	)
	clID := uuid.NewString()
	clProc := cl.Print(t, dir, clPrompt, "--session-id", clID)
	cxProc := cx.Exec(t, dir, cxPrompt)
	ocProc := oc.Run(t, dir, ocPrompt)
	piProc := pi.Print(t, dir, piPrompt)

	// The gateway starts while the agents run.
	gw := harness.StartOpenClaw(t, srv)
	// Gateway calls may take minutes on a busy machine; the waits below follow
	// the gateway's progress, this only bounds a wedged connection.
	ctx, cancel := context.WithTimeout(context.Background(), harness.Patience)
	defer cancel()
	g, err := gw.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	gwSessionDone(t, ctx, gw, g, gwDoneKey, gwDone, srv)
	if _, err := g.Call(ctx, "sessions.create", map[string]any{"key": gwBusyKey, "message": gwBusy}); err != nil {
		t.Fatal(err)
	}

	for h, p := range map[string]*harness.Proc{"mix-claude": clProc, "mix-codex": cxProc, "mix-opencode": ocProc, "mix-gateway": gw.Proc} {
		waitHeldBy(t, srv, h, p)
	}
	waitExit(t, "pi -p", piProc)
	piID := harness.PiSessionID(piProc.Stdout())
	cxID := cxProc.WaitStdout(t, 30*time.Second, "thread.started", harness.CodexThreadID)
	waitRollout(t, cx, cxPrompt)
	ocID := openCodeSessionIn(t, oc, dir)
	clProc.WaitFor(t, "Claude's registry file", func() string {
		if !exists(cl.Registry(clProc.PID)) {
			return "no Claude registry file " + cl.Registry(clProc.PID)
		}
		return ""
	})

	a := harness.NewAgentctl(t, home)
	a.Env = a.Env.Merge(harness.Env{"OPENCLAW_GATEWAY_TOKEN": gw.Token, "OPENCLAW_GATEWAY_URL": gw.URL})

	// While held: each running on its own evidence, each exactly once.
	ds := mixedList(t, a, "while the replies are held")
	type live struct {
		id, adapter, evidence string
		inferred              bool
		p                     *harness.Proc
	}
	for _, l := range []live{
		{clID, "claude-code", "registry", false, clProc},
		{cxID, "codex", "registry", false, cxProc},
		{ocID, "opencode", "process", true, ocProc},
	} {
		what := "while held: " + l.adapter
		if d, ok := only(t, what, ds, l.id); ok {
			if d.Adapter != l.adapter {
				t.Errorf("%s: session %s listed under %q", what, l.id, d.Adapter)
			}
			checkLive(t, what, d, l.p, l.evidence, l.inferred)
		}
	}
	if d, ok := only(t, "while held: pi", ds, piID); ok {
		if d.Adapter != "pi" {
			t.Errorf("pi session listed under %q", d.Adapter)
		}
		checkStopped(t, "while held: pi (its run ended)", d)
	}
	for key, status := range map[string]string{gwBusyKey: "running", gwDoneKey: "stopped"} {
		if d, ok := only(t, "while held: openclaw", ds, key); ok {
			if d.Adapter != "openclaw" || d.Status != status || d.Evidence != gwEvidence || d.PID != 0 || d.Model != gwModel {
				t.Errorf("while held: %s: adapter %q status %q evidence %q pid %d model %q; want openclaw, %s on the gateway, no pid, %s",
					key, d.Adapter, d.Status, d.Evidence, d.PID, d.Model, status, gwModel)
			}
		}
	}
	if len(ds) != 6 {
		t.Errorf("while held: list -a shows %d sessions; want the 6 this test made", len(ds))
	}
	var alive []string
	for _, d := range listDetails(t, a) {
		alive = append(alive, d.ID)
	}
	if want := []string{clID, cxID, ocID, gwBusyKey}; !sameSet(alive, want) {
		t.Errorf("while held: list (alive only) shows %q; want %q", alive, want)
	}

	for _, h := range []string{"mix-claude", "mix-codex", "mix-opencode", "mix-gateway"} {
		srv.Release(h)
	}
	waitExit(t, "claude -p", clProc)
	waitExit(t, "codex exec", cxProc)
	waitExit(t, "opencode run", ocProc)
	gwWaitIdle(t, ctx, gw, g, gwBusyKey, srv)

	// After the replies: all stopped, with what the stub sent to each.
	ds = mixedList(t, a, "after the replies")
	for _, w := range []view{
		{ID: clID, Adapter: "claude-code", Status: "stopped", Cwd: dir, Prompt: clPrompt},
		{ID: cxID, Adapter: "codex", Status: "stopped", Cwd: dir, Prompt: cxPrompt},
		{ID: ocID, Adapter: "opencode", Status: "stopped", Cwd: dir, Prompt: ocPrompt},
		{ID: piID, Adapter: "pi", Status: "stopped", Cwd: dir, Prompt: piPrompt},
	} {
		ex := exchangesFor(srv, w.Prompt)
		if len(ex) != 1 || !ex[0].Completed {
			t.Errorf("%s: the stub saw %d completed turns; want one", w.Adapter, len(ex))
			continue
		}
		w.Model, w.Tokens = lastModel(ex), tokens(sent(ex))
		switch w.Adapter {
		case "opencode":
			w.Model = "fake/" + w.Model
		case "pi":
			w.Model = "fakeoai/" + w.Model
		}
		if d, ok := only(t, "after the replies", ds, w.ID); ok {
			checkSession(t, "after the replies: list -a "+w.Adapter, d.Session, w)
			checkStopped(t, "after the replies: "+w.Adapter, d)
		}
	}
	for key, prompt := range map[string]string{gwDoneKey: gwDone, gwBusyKey: gwBusy} {
		ex := exchangesFor(srv, prompt)
		want := view{ID: key, Adapter: "openclaw", Status: "stopped", Model: gwModel, Prompt: prompt, Tokens: tokens(sent(ex))}
		s := detailOf(t, a, key)
		checkSession(t, "after the replies: status "+key, s.Session, want)
		if s.Evidence != gwEvidence || s.PID != 0 {
			t.Errorf("status %s: evidence %q pid %d; want gateway, no pid", key, s.Evidence, s.PID)
		}
		checkCost(t, "status "+key, s, sent(ex), gwInPrice, gwOutPrice)
		checkPeek(t, "peek "+key, a.Peek(t, key), []string{prompt}, texts(ex))
	}
	if alive := listDetails(t, a); len(alive) != 0 {
		t.Errorf("after the replies: list (alive only) shows %d sessions; want none", len(alive))
	}

	// The gateway misconfigured: one warning naming the cause, exit 0, every
	// other adapter's sessions still listed.
	others := []string{clID, cxID, ocID, piID}
	t.Run("gateway down", func(t *testing.T) {
		url := fmt.Sprintf("ws://127.0.0.1:%d", closedPort(t))
		b := gatewayAt(a, url, gw.Token)
		errOut := listDegraded(t, b, others, "1s")
		wantWarning(t, errOut, "openclaw: cannot reach gateway "+url+": connection refused")
		if _, _, code := b.Run(t, "list", "-a", "--json", "--strict"); code != 1 {
			t.Errorf("list --strict with the gateway down: exit %d, want 1", code)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		errOut := listDegraded(t, gatewayAt(a, gw.URL, "not-"+gw.Token), others, "5s")
		wantWarning(t, errOut, "openclaw: gateway "+gw.URL+" rejected the token")
		wantWarning(t, errOut, "AUTH_TOKEN_MISMATCH")
	})
	t.Run("hanging gateway", func(t *testing.T) {
		url := silentGateway(t)
		start := time.Now()
		errOut := listDegraded(t, gatewayAt(a, url, gw.Token), others, "1s")
		if d := time.Since(start); d >= 3*time.Second {
			t.Errorf("list -a --timeout 1s took %s with a gateway that never answers; want < 3 s", d.Round(time.Millisecond))
		}
		wantWarning(t, errOut, "openclaw: gateway "+url+" did not answer within 1s")
	})
}

// mixedList runs `list -a --json` and requires exit 0 and no warning but the
// price table's (the stub echoes Claude's default model, which has no price):
// every adapter answered.
func mixedList(t *testing.T, a *harness.Agentctl, what string) []detail {
	t.Helper()
	out, errOut, code := a.Run(t, "list", "-a", "--json")
	var warnings []string
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if l != "" && !strings.Contains(l, "no price for model") {
			warnings = append(warnings, l)
		}
	}
	if code != 0 || len(warnings) > 0 {
		t.Errorf("%s: list -a --json: exit %d, warnings:\n%s", what, code, strings.Join(warnings, "\n"))
	}
	var ds []detail
	if err := json.Unmarshal([]byte(out), &ds); err != nil {
		t.Fatalf("%s: list -a --json is not a JSON array: %v\n%s", what, err, out)
	}
	return ds
}

// listDegraded runs `list -a --json --timeout d` against a broken gateway: exit
// 0, a JSON array still holding every id in want (stopped), no OpenClaw session.
// It returns stderr.
func listDegraded(t *testing.T, a *harness.Agentctl, want []string, d string) string {
	t.Helper()
	out, errOut, code := a.Run(t, "list", "-a", "--json", "--timeout", d)
	if code != 0 {
		t.Errorf("exit %d; a failing adapter must not change list's exit code\nstderr:\n%s", code, errOut)
	}
	var ds []detail
	if err := json.Unmarshal([]byte(out), &ds); err != nil {
		t.Fatalf("list -a --json is not a JSON array: %v\n%s", err, out)
	}
	var got []string
	for _, s := range ds {
		got = append(got, s.ID)
		if s.Adapter == "openclaw" {
			t.Errorf("openclaw session %s listed although its gateway failed", s.ID)
		}
		if s.Status != "stopped" {
			t.Errorf("%s session %s is %q; the gateway's failure must not change it (stopped)", s.Adapter, s.ID, s.Status)
		}
	}
	if !sameSet(got, want) {
		t.Errorf("listed %q; want the other adapters' sessions %q", got, want)
	}
	t.Logf("stderr:\n%s", errOut)
	return errOut
}

func wantWarning(t *testing.T, stderr, want string) {
	t.Helper()
	if !strings.Contains(stderr, "agentctl: ") || !strings.Contains(stderr, want) {
		t.Errorf("stderr has no warning containing %q:\n%s", want, stderr)
	}
}

// gatewayAt is a copy of a configured for the gateway at url with token.
func gatewayAt(a *harness.Agentctl, url, token string) *harness.Agentctl {
	b := *a
	b.Env = a.Env.Merge(harness.Env{"OPENCLAW_GATEWAY_URL": url, "OPENCLAW_GATEWAY_TOKEN": token})
	return &b
}

// gwSessionDone creates a gateway session with one prompt and waits, by the
// gateway's own account, until its run finished with the model's reply.
func gwSessionDone(t *testing.T, ctx context.Context, gw *harness.OpenClaw, g *harness.GatewayConn, key, prompt string, srv *stub.Server) {
	t.Helper()
	raw, err := g.Call(ctx, "sessions.create", map[string]any{"key": key, "message": prompt})
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Key        string
		RunStarted bool
	}
	json.Unmarshal(raw, &created)
	if created.Key != key || !created.RunStarted {
		t.Fatalf("sessions.create answered %s", raw)
	}
	gwWaitIdle(t, ctx, gw, g, key, srv)
}

// gwWaitIdle waits until the gateway lists key with no active run and the stub
// completed a reply to that session's prompt, for as long as the gateway makes
// progress.
func gwWaitIdle(t *testing.T, ctx context.Context, gw *harness.OpenClaw, g *harness.GatewayConn, key string, srv *stub.Server) {
	t.Helper()
	gw.Proc.WaitFor(t, "gateway session "+key+" idle", func() string {
		raw, err := g.Call(ctx, "sessions.list", map[string]any{"search": key})
		if err != nil {
			return err.Error()
		}
		var l struct {
			Sessions []struct {
				Key, Status  string
				HasActiveRun bool
			}
		}
		json.Unmarshal(raw, &l)
		for _, s := range l.Sessions {
			if s.Key == key && !s.HasActiveRun && s.Status == "done" {
				return ""
			}
		}
		return "gateway session " + key + " not done yet: " + string(raw)
	})
}

// exchangesFor are the agent turns (requests with tools) whose last user
// message carries prompt.
func exchangesFor(srv *stub.Server, prompt string) []stub.Exchange {
	return srv.ModelExchanges(func(e stub.Exchange) bool {
		return len(e.Request.Tools) > 0 && strings.Contains(e.Request.LastUser, prompt)
	})
}

func sameSet(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	seen := map[string]int{}
	for _, s := range want {
		seen[s]++
	}
	for _, s := range got {
		if seen[s] == 0 {
			return false
		}
		seen[s]--
	}
	return true
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// silentGateway accepts TCP connections and never answers a byte; closed in
// cleanup. It returns its ws:// URL.
func silentGateway(t *testing.T) string { return gatewaytest.SilentListener(t) }
