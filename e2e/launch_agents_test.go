package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// The launch lifecycle (README "Launch and supervision") against every real agent with a
// read side: launch with an on-complete hook and a signed webhook → `list`
// shows the session running on launch-record evidence (gateway for OpenClaw)
// while the stub holds the model reply → release → `wait` returns the agent's
// exit code → `status` shows it stopped with exit_code 0 → the hook ran once
// with AGENTCTL_EXIT_CODE and AGENTCTL_SESSION_ID, and the receiver got one
// delivery whose HMAC verifies over the exact body. Then, for the agents added
// here, resume (the same session grows) and stop of a real running turn.

// webhookReceiver is a 127.0.0.1 endpoint that records every delivery.
type webhookReceiver struct {
	URL, Secret string
	mu          sync.Mutex
	got         []webhookDelivery
}

type webhookDelivery struct {
	Header http.Header
	Body   []byte
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	t.Helper()
	b := make([]byte, 16)
	rand.Read(b)
	w := &webhookReceiver{Secret: hex.EncodeToString(b)}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost {
			t.Errorf("webhook %s, want POST", r.Method)
		}
		w.mu.Lock()
		w.got = append(w.got, webhookDelivery{Header: r.Header.Clone(), Body: body})
		w.mu.Unlock()
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	w.URL = srv.URL + "/hook"
	return w
}

func (w *webhookReceiver) deliveries() []webhookDelivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]webhookDelivery(nil), w.got...)
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// checkDelivery verifies the signatures over the exact body (computed here,
// independently of agentctl) and the payload of README "Hooks and webhooks".
func checkDelivery(t *testing.T, w *webhookReceiver, d webhookDelivery, want map[string]any) {
	t.Helper()
	m := hmac.New(sha256.New, []byte(w.Secret))
	m.Write(d.Body)
	sig := hex.EncodeToString(m.Sum(nil))
	for h, v := range map[string]string{"X-Agentctl-Signature": sig, "X-Hub-Signature-256": "sha256=" + sig, "X-Signature": "sha256=" + sig} {
		if got := d.Header.Get(h); got != v {
			t.Errorf("webhook %s = %q, want %q (HMAC-SHA256 of the body)", h, got, v)
		}
	}
	if id := d.Header.Get("X-Agentctl-Delivery"); !uuidRE.MatchString(id) {
		t.Errorf("X-Agentctl-Delivery %q is not a UUID", id)
	}
	if ts, err := strconv.ParseInt(d.Header.Get("X-Agentctl-Timestamp"), 10, 64); err != nil || time.Since(time.Unix(ts, 0)) > 10*time.Minute {
		t.Errorf("X-Agentctl-Timestamp %q", d.Header.Get("X-Agentctl-Timestamp"))
	}
	var p map[string]any
	if err := json.Unmarshal(d.Body, &p); err != nil {
		t.Fatalf("webhook body is not JSON: %v\n%s", err, d.Body)
	}
	var keys []string
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	wantKeys := []string{"adapter", "cwd", "duration_seconds", "exit_status", "hook_type", "meta", "session_id", "summary", "timestamp"}
	if diff := cmp.Diff(wantKeys, keys); diff != "" {
		t.Errorf("webhook payload keys (-want +got):\n%s\n%s", diff, d.Body)
	}
	if ts, ok := p["timestamp"].(string); !ok {
		t.Errorf("timestamp %v", p["timestamp"])
	} else if _, err := time.Parse(time.RFC3339, ts); err != nil || !strings.HasSuffix(ts, "Z") {
		t.Errorf("timestamp %q is not RFC 3339 UTC", ts)
	}
	if d, ok := p["duration_seconds"].(float64); !ok || d < 0 || d != float64(int64(d)) {
		t.Errorf("duration_seconds %v", p["duration_seconds"])
	}
	got := map[string]any{}
	for k := range want {
		got[k] = p[k]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("webhook payload (-want +got):\n%s\n%s", diff, d.Body)
	}
}

// hookLines reads what the on-complete hook appended ("<exit code> <session id>").
func hookLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// onComplete is a hook writing AGENTCTL_EXIT_CODE and AGENTCTL_SESSION_ID to out.
func onComplete(out string) string {
	return fmt.Sprintf(`printf '%%s %%s\n' "$AGENTCTL_EXIT_CODE" "$AGENTCTL_SESSION_ID" >> '%s'`, out)
}

// killLaunched stops, in cleanup, every agent and supervisor agentctl started
// from state (launched agents are detached on purpose; none may outlive the
// test). Only processes whose start time matches the record are signalled.
func killLaunched(t *testing.T, state string) {
	t.Cleanup(func() {
		recs, _ := meta.NewStore(state).ReadLaunches()
		for _, r := range recs {
			if p, err := proc.Lookup(r.PID); r.PID > 0 && err == nil && p.StartTicks == r.StartTicks {
				syscall.Kill(-r.PGID, syscall.SIGKILL)
			}
			if p, err := proc.Lookup(r.SupervisorPID); r.SupervisorPID > 0 && err == nil && p.StartTicks == r.SupervisorStart {
				syscall.Kill(r.SupervisorPID, syscall.SIGKILL)
			}
		}
	})
}

// agentCase is one agent set up for the lifecycle.
type agentCase struct {
	adapter string
	a       *harness.Agentctl
	srv     *stub.Server
	cwd     string   // "" for OpenClaw (the gateway's workspace)
	args    []string // extra launch flags (--model …)
	// gateway, for OpenClaw, is the gateway process whose progress the wait for
	// a held request follows (nil: a fixed deadline).
	gateway *harness.Proc
	// unwritten, when set, proves while the reply is held that the agent has
	// not written its session yet ("" when it has not).
	unwritten func(id string) string
}

// waitHeld waits for the request held under name: while the gateway makes
// progress for OpenClaw, else within waitHeld's deadline.
func (ac *agentCase) waitHeld(t *testing.T, name string) {
	t.Helper()
	if ac.gateway != nil {
		waitHeldBy(t, ac.srv, name, ac.gateway)
		return
	}
	waitHeld(t, ac.srv, name)
}

func (ac *agentCase) launch(t *testing.T, a *harness.Agentctl, prompt string, args ...string) launchedJSON {
	t.Helper()
	argv := []string{"launch", ac.adapter, "--json", "-p", prompt}
	if ac.cwd != "" {
		argv = append(argv, "--cwd", ac.cwd)
	}
	argv = append(append(argv, ac.args...), args...)
	start := time.Now()
	out, errOut, code := a.Run(t, argv...)
	if code != 0 {
		t.Fatalf("launch %s: exit %d\n%s\n%s", ac.adapter, code, errOut, readLog(a.State))
	}
	var l []launchedJSON
	if err := json.Unmarshal([]byte(out), &l); err != nil || len(l) != 1 || l[0].ID == "" {
		t.Fatalf("launch --json: %v\n%s", err, out)
	}
	t.Logf("%s launched %s in %s", ac.adapter, l[0].ID, time.Since(start).Round(time.Millisecond))
	return l[0]
}

func (ac *agentCase) lifecycle(t *testing.T) launchedJSON {
	t.Helper()
	rcv := newWebhookReceiver(t)
	a := *ac.a
	a.Env = a.Env.Merge(harness.Env{"AGENTCTL_WEBHOOK_URL": rcv.URL, "AGENTCTL_WEBHOOK_SECRET": rcv.Secret})
	hookOut := filepath.Join(t.TempDir(), "on-complete.out")
	hold := ac.adapter + "-lifecycle"
	prompt := "lifecycle run HOLD=" + hold + " WORDS=3"
	l := ac.launch(t, &a, prompt, "--on-complete", onComplete(hookOut), "--callback-session", "cb-"+ac.adapter)
	ac.waitHeld(t, hold)

	if ac.unwritten != nil {
		if why := ac.unwritten(l.ID); why != "" {
			t.Errorf("while the reply is held: %s", why)
		}
	}
	wantEvidence, wantPID := "launch-record", l.PID
	if ac.cwd == "" {
		wantEvidence, wantPID = "gateway", 0 // no local process (docs/agents/openclaw.md §1)
	}
	s, ok := harness.Find(a.ListAlive(t), l.ID)
	if !ok || s.Status != "running" || s.Evidence != wantEvidence || s.PID != wantPID {
		t.Errorf("list while the reply is held: %+v (found %v); want running on %s, pid %d", s, ok, wantEvidence, wantPID)
	}
	if _, _, code := a.Run(t, "wait", "--timeout", "300ms", l.ID); code != 124 {
		t.Errorf("wait --timeout on a running session: exit %d, want 124", code)
	}
	if got := hookLines(hookOut); len(got) != 0 || len(rcv.deliveries()) != 0 {
		t.Errorf("on-complete %q / %d webhooks before the agent ended", got, len(rcv.deliveries()))
	}

	ac.srv.Release(hold)
	out, errOut, code := a.Run(t, "wait", "--timeout", "25s", l.ID)
	if code != 0 || out != l.ID+" stopped (exit 0)\n" {
		t.Fatalf("wait: exit %d %q\n%s\n%s", code, out, errOut, readLog(a.State))
	}
	st := statusOf(t, &a, l.ID)
	if st.Status != "stopped" || st.ExitCode == nil || *st.ExitCode != 0 || st.Cwd != ac.cwd || st.LaunchID != l.LaunchID || st.PID != 0 {
		t.Errorf("status after the end: %+v", st)
	}
	// The supervisor records the end first, then runs the hook and the webhook.
	harness.Eventually(t, 20*time.Second, func() string {
		if n, m := len(hookLines(hookOut)), len(rcv.deliveries()); n == 0 || m == 0 {
			return fmt.Sprintf("%d on-complete runs, %d webhook deliveries", n, m)
		}
		return ""
	})
	// Another command, and time: nothing fires twice.
	a.List(t)
	time.Sleep(time.Second)
	if got := hookLines(hookOut); len(got) != 1 || got[0] != "0 "+l.ID {
		t.Errorf("on-complete output %q; want exactly one line %q", got, "0 "+l.ID)
	}
	ds := rcv.deliveries()
	if len(ds) != 1 {
		t.Fatalf("%d webhook deliveries, want exactly 1", len(ds))
	}
	checkDelivery(t, rcv, ds[0], map[string]any{"hook_type": "session.stopped", "session_id": l.ID, "adapter": ac.adapter,
		"cwd": ac.cwd, "exit_status": float64(0), "summary": prompt, "meta": map[string]any{"callback_session_key": "cb-" + ac.adapter}})
	return l
}

// stopRunning launches a turn the stub holds and stops it with `agentctl stop`.
func (ac *agentCase) stopRunning(t *testing.T, wantOut func(id string) string) launchedJSON {
	t.Helper()
	hold := ac.adapter + "-stop"
	l := ac.launch(t, ac.a, "never answered HOLD="+hold)
	ac.waitHeld(t, hold)
	start := time.Now()
	out, errOut, code := ac.a.Run(t, "stop", l.ID)
	if code != 0 || !regexp.MustCompile(wantOut(l.ID)).MatchString(out) {
		t.Fatalf("stop: exit %d %q (want %s)\n%s\n%s", code, out, wantOut(l.ID), errOut, readLog(ac.a.State))
	}
	t.Logf("%s stop took %s", ac.adapter, time.Since(start).Round(time.Millisecond))
	if l.PID > 0 {
		if p, err := proc.Lookup(l.PID); err == nil && p.StartTicks > 0 {
			t.Errorf("pid %d is still alive after stop", l.PID)
		}
	}
	harness.Eventually(t, 15*time.Second, func() string {
		if st := statusOf(t, ac.a, l.ID); st.Status != "stopped" || st.PID != 0 {
			return fmt.Sprintf("status %s pid %d", st.Status, st.PID)
		}
		return ""
	})
	return l
}

func (ac *agentCase) resume(t *testing.T, id string) {
	t.Helper()
	out, errOut, code := ac.a.Run(t, "resume", id, "second turn WORDS=2")
	if code != 0 || !strings.HasPrefix(out, "resumed "+id+" ("+ac.adapter) {
		t.Fatalf("resume: exit %d %q\n%s\n%s", code, out, errOut, readLog(ac.a.State))
	}
	if out, errOut, code := ac.a.Run(t, "wait", "--timeout", "25s", id); code != 0 || out != id+" stopped (exit 0)\n" {
		t.Fatalf("wait after resume: exit %d %q\n%s\n%s", code, out, errOut, readLog(ac.a.State))
	}
}

// agentctlFor is agentctl set up to launch one agent: the agent's own
// environment (its stub config, HOME, XDG dirs) is agentctl's, which hands it on.
func agentctlFor(t *testing.T, home string, env harness.Env, extra harness.Env) *harness.Agentctl {
	a := harness.NewAgentctl(t, home)
	a.Env = env.Merge(harness.Env{"AGENTCTL_HOME": a.State, "NO_COLOR": "1"}).Merge(extra)
	killLaunched(t, a.State)
	return a
}

// Claude Code and Codex: launch_test.go covers launch/wait/status/stop/resume;
// these add the hooks and the webhook (one Claude version is enough).
func TestLaunchLifecycleClaude(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	a := agentctlFor(t, c.Home, c.Env, harness.Env{"AGENTCTL_CLAUDE_BIN": c.Bin})
	ac := &agentCase{adapter: "claude-code", a: a, srv: srv, cwd: harness.WorkDir(t, "webapp")}
	ac.lifecycle(t)
}

func TestLaunchLifecycleCodex(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewCodex(t, srv)
	a := agentctlFor(t, c.Home, c.Env, harness.Env{"AGENTCTL_CODEX_BIN": c.Bin})
	ac := &agentCase{adapter: "codex", a: a, srv: srv, cwd: harness.WorkDir(t, "billing")}
	ac.lifecycle(t)
}

// OpenCode: the session is confirmed from its own database (its events name the
// session only with the first model output, which the stub holds), titled with
// the launch's tag, in the launch dir even though agentctl's own PWD is elsewhere
// (OpenCode trusts $PWD); resume with --session grows the same session; stop
// sends SIGTERM (run ignores SIGINT).
func TestLaunchLifecycleOpenCode(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	oc := harness.NewOpenCode(t, srv)
	a := agentctlFor(t, oc.Home, oc.Env, harness.Env{"AGENTCTL_OPENCODE_BIN": oc.Bin, "PWD": oc.Home})
	dir := harness.WorkDir(t, "frontend")
	ac := &agentCase{adapter: "opencode", a: a, srv: srv, cwd: dir, args: []string{"--model", "fake/fake-model"}}
	db := func() *sql.DB {
		d, err := sql.Open("sqlite", "file:"+oc.DB()+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	ac.unwritten = func(id string) string {
		// The row exists (that is how the launch was confirmed: the event stream
		// names the session only with the first model output); its title is the
		// prompt's first 40 characters and the launch's tag; the turn has no
		// assistant output yet.
		var title, gotDir string
		if err := db().QueryRow(`SELECT title, directory FROM session WHERE id = ?`, id).Scan(&title, &gotDir); err != nil {
			return fmt.Sprintf("session row %s: %v", id, err)
		}
		if gotDir != dir || !regexp.MustCompile(`^agentctl-[0-9a-f]{8}$`).MatchString(title) {
			return fmt.Sprintf("session row directory %q title %q", gotDir, title)
		}
		var n int
		db().QueryRow(`SELECT count(*) FROM part WHERE session_id = ? AND json_extract(data, '$.type') = 'text' AND message_id IN (SELECT id FROM message WHERE json_extract(data, '$.role') = 'assistant')`, id).Scan(&n)
		if n != 0 {
			return fmt.Sprintf("%d assistant text parts already", n)
		}
		return ""
	}
	l := ac.lifecycle(t)
	if !regexp.MustCompile(`^ses_[0-9A-Za-z]{26}$`).MatchString(l.ID) {
		t.Errorf("launched id %q is not an OpenCode session id", l.ID)
	}
	count := func() int {
		var n int
		if err := db().QueryRow(`SELECT count(*) FROM message WHERE session_id = ?`, l.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	ac.resume(t, l.ID)
	if after := count(); after < before+2 {
		t.Errorf("resume did not add a turn to %s (%d messages before, %d after)", l.ID, before, after)
	}
	ac.stopRunning(t, func(id string) string { return "^stopped " + regexp.QuoteMeta(id) + ` \(exit observed\)\n$` })
}

// Pi: the id is stdout line 1 (the header); no session file exists while the
// first reply is held, yet list shows it running from the launch record;
// resume opens the file by path and appends to it; stop sends SIGTERM.
func TestLaunchLifecyclePi(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	pi := harness.NewPi(t, srv)
	a := agentctlFor(t, pi.Home, pi.Env, harness.Env{"AGENTCTL_PI_BIN": pi.Bin})
	ac := &agentCase{adapter: "pi", a: a, srv: srv, cwd: harness.WorkDir(t, "api-server"), args: []string{"--model", "fakeoai/fake-model"}}
	// pi 0.73.1 writes its session file with the first assistant message, so
	// while the reply is held the launch record alone lists it; pi 1.6 writes
	// it when it sends the first user message (docs/agents/pi.md §1): header
	// and prompt, no assistant entry yet.
	ac.unwritten = func(id string) string {
		files := pi.Sessions()
		if pi.Version == harness.PiOlder {
			if len(files) != 0 {
				return fmt.Sprintf("pi %s already wrote %v", pi.Version, files)
			}
			return ""
		}
		if len(files) != 1 || !strings.HasSuffix(files[0], "_"+id+".jsonl") {
			return fmt.Sprintf("pi %s: session files %v, want one named after %s as soon as the prompt is sent", pi.Version, files, id)
		}
		b, _ := os.ReadFile(files[0])
		// 1.6 records the system prompt and tool loadout as a "system" message
		// before the prompt.
		roles := regexp.MustCompile(`"role":"(\w+)"`).FindAllString(string(b), -1)
		if strings.Count(string(b), `"role":"user"`) != 1 || strings.Contains(string(b), `"role":"assistant"`) {
			return fmt.Sprintf("pi %s: while the reply is held the file holds roles %v, want one user message and no assistant:\n%s", pi.Version, roles, b)
		}
		return ""
	}
	l := ac.lifecycle(t)
	files := pi.Sessions()
	if len(files) != 1 || !strings.HasSuffix(files[0], "_"+l.ID+".jsonl") {
		t.Fatalf("session files %v; want one named after %s", files, l.ID)
	}
	before := countLines(t, files[0])
	ac.resume(t, l.ID)
	if after := countLines(t, files[0]); after < before+2 || len(pi.Sessions()) != 1 {
		t.Errorf("resume did not append to %s (%d → %d lines, %d files)", files[0], before, after, len(pi.Sessions()))
	}
	s := ac.stopRunning(t, func(id string) string { return "^stopped " + regexp.QuoteMeta(id) + ` \(exit observed\)\n$` })
	// stop returns once it saw the exit and stopRunning waits for the status
	// only; the exit code is recorded by the detached supervisor when it reaps
	// pi, a moment later under load.
	harness.Eventually(t, 15*time.Second, func() string {
		if st := statusOf(t, a, s.ID); st.ExitCode == nil || *st.ExitCode != 143 {
			code := "none"
			if st.ExitCode != nil {
				code = strconv.Itoa(*st.ExitCode)
			}
			return "stopped pi: exit code " + code + ", want 143 (SIGTERM, handled)"
		}
		return ""
	})
}

// OpenClaw: no local process; the key is pre-assigned and confirmed by the
// gateway's ack, the run waited for with agent.wait, resumed with
// sessions.send and stopped with sessions.abort from a new agentctl process
// (the device identity in agentctl's state dir owns the run).
func TestLaunchLifecycleOpenClaw(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	gw := harness.StartOpenClaw(t, srv)
	a := agentctlFor(t, gw.Home, gw.Env, harness.Env{"OPENCLAW_GATEWAY_TOKEN": gw.Token, "OPENCLAW_GATEWAY_URL": gw.URL,
		"AGENTCTL_ADAPTER_TIMEOUT": "30s"}) // a loaded gateway answers slowly (as in budget_test.go)
	ac := &agentCase{adapter: "openclaw", a: a, srv: srv, gateway: gw.Proc}
	l := ac.lifecycle(t)
	if !regexp.MustCompile(`^agent:main:l-[0-9a-f]{12}$`).MatchString(l.ID) || l.LaunchID != strings.TrimPrefix(l.ID, "agent:main:") {
		t.Errorf("launched key %q (launch %s); want agent:main:<launch id>", l.ID, l.LaunchID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := gw.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	history := func() int {
		raw, err := g.Call(ctx, "chat.history", map[string]any{"sessionKey": l.ID, "limit": 100})
		if err != nil {
			t.Fatal(err)
		}
		var h struct{ TotalMessages int }
		json.Unmarshal(raw, &h)
		return h.TotalMessages
	}
	before := history()
	ac.resume(t, l.ID)
	if after := history(); after < before+2 {
		t.Errorf("resume did not add a turn to %s (%d messages before, %d after)", l.ID, before, after)
	}
	s := ac.stopRunning(t, func(id string) string { return "^stopped " + regexp.QuoteMeta(id) + ` \(run \S+ aborted\)\n$` })
	if out, errOut, code := a.Run(t, "stop", s.ID); code != 0 || !strings.Contains(out, "already stopped "+s.ID) { // stop is idempotent
		t.Errorf("second stop: exit %d %q %q", code, out, errOut)
	}

	// A run started by OpenClaw's own CLI belongs to the CLI's device: stop
	// refuses it without --force, and aborts it with operator.admin with it.
	const cliKey = "agent:main:cli-run"
	cli := gw.CLI(t, "agent", "--session-key", cliKey, "--message", "cli run HOLD=openclaw-cli", "--json")
	waitHeld(t, srv, "openclaw-cli")
	if out, errOut, code := a.Run(t, "stop", cliKey); code != 1 || !strings.Contains(errOut, "--force") {
		t.Errorf("stop of a run agentctl did not start: exit %d %q %q; want a refusal naming --force", code, out, errOut)
	}
	if out, errOut, code := a.Run(t, "stop", "--force", cliKey); code != 0 || !regexp.MustCompile(`^stopped `+cliKey+` \(run \S+ aborted\)\n$`).MatchString(out) {
		t.Errorf("stop --force: exit %d %q\n%s", code, out, errOut)
	}
	if st := a.Status(t, cliKey); st.Status == "running" {
		t.Errorf("CLI run still running after stop --force: %+v", st)
	}
	select {
	case <-cli.Done():
	case <-time.After(20 * time.Second):
		t.Errorf("openclaw agent CLI still waiting 20 s after its run was aborted")
	}

	// No process to see die: with its supervisor killed, an OpenClaw launch is
	// finalised lazily from what the gateway says about the run (exit 0: done).
	hookOut := filepath.Join(t.TempDir(), "on-complete.out")
	d := ac.launch(t, a, "drift HOLD=openclaw-drift", "--on-complete", onComplete(hookOut))
	waitHeld(t, srv, "openclaw-drift")
	recs, _ := meta.NewStore(a.State).ReadLaunches()
	var r meta.Launch
	for _, x := range recs {
		if x.ID == d.LaunchID {
			r = x
		}
	}
	if p, err := proc.Lookup(r.SupervisorPID); r.SupervisorPID == 0 || err != nil || p.StartTicks != r.SupervisorStart {
		t.Fatalf("supervisor of %s not alive: %+v", d.ID, r)
	}
	syscall.Kill(r.SupervisorPID, syscall.SIGKILL)
	if st, ok := harness.Find(a.ListAlive(t), d.ID); !ok || st.Status != "running" || st.Evidence != "gateway" {
		t.Errorf("list after the supervisor died: %+v (found %v); want running on gateway", st, ok)
	}
	srv.Release("openclaw-drift")
	harness.Eventually(t, 20*time.Second, func() string {
		if st, ok := harness.Find(a.List(t), d.ID); !ok || st.Status != "stopped" {
			return fmt.Sprintf("status %+v", st)
		}
		return ""
	})
	a.List(t)
	// The gateway's answer is asked by the detached `agentctl __finalise` a
	// listing starts (reading never waits on it): the exit code and the hook
	// follow shortly after the listing, later under load.
	harness.Eventually(t, 20*time.Second, func() string {
		if st := statusOf(t, a, d.ID); st.ExitCode == nil || *st.ExitCode != 0 {
			return fmt.Sprintf("lazily finalised gateway run: exit code %v, want 0 (the gateway says done)", st.ExitCode)
		}
		if hl := hookLines(hookOut); len(hl) == 0 {
			return "on-complete has not run"
		}
		return ""
	})
	time.Sleep(500 * time.Millisecond) // a second, wrong run of the hook would show by now
	if hl := hookLines(hookOut); len(hl) != 1 || hl[0] != "0 "+d.ID {
		t.Errorf("on-complete output %q; want exactly %q", hl, "0 "+d.ID)
	}
}

// Drift (README "Launch and supervision"), with the fastest real agent (pi): a supervisor
// killed mid-run changes nothing — the session stays running on the launch
// record while the agent lives; once the agent ended, the next `list`
// finalises it (exit code unknown), and the hook and the webhook fire exactly
// once. A launching shell killed mid-run changes nothing either.
func TestLaunchDriftPi(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	pi := harness.NewPi(t, srv)
	rcv := newWebhookReceiver(t)
	a := agentctlFor(t, pi.Home, pi.Env, harness.Env{"AGENTCTL_PI_BIN": pi.Bin,
		"AGENTCTL_WEBHOOK_URL": rcv.URL, "AGENTCTL_WEBHOOK_SECRET": rcv.Secret})
	ac := &agentCase{adapter: "pi", a: a, srv: srv, cwd: harness.WorkDir(t, "drift"), args: []string{"--model", "fakeoai/fake-model"}}
	record := func(launchID string) meta.Launch {
		recs, err := meta.NewStore(a.State).ReadLaunches()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.ID == launchID {
				return r
			}
		}
		t.Fatalf("no launch record %s", launchID)
		return meta.Launch{}
	}
	alive := func(pid int, start uint64) bool {
		p, err := proc.Lookup(pid)
		return err == nil && p.StartTicks == start
	}

	t.Run("supervisor SIGKILLed", func(t *testing.T) {
		hookOut := filepath.Join(t.TempDir(), "on-complete.out")
		prompt := "drift HOLD=drift-kill WORDS=2"
		l := ac.launch(t, a, prompt, "--on-complete", onComplete(hookOut))
		waitHeld(t, srv, "drift-kill")
		r := record(l.LaunchID)
		if !alive(r.SupervisorPID, r.SupervisorStart) {
			t.Fatalf("supervisor %d not alive", r.SupervisorPID)
		}
		syscall.Kill(r.SupervisorPID, syscall.SIGKILL)
		harness.Eventually(t, 5*time.Second, func() string {
			if alive(r.SupervisorPID, r.SupervisorStart) {
				return "supervisor still alive"
			}
			return ""
		})
		s, ok := harness.Find(a.ListAlive(t), l.ID)
		if !ok || s.Status != "running" || s.Evidence != "launch-record" || s.PID != l.PID {
			t.Errorf("list after the supervisor died: %+v (found %v); want running on launch-record, pid %d", s, ok, l.PID)
		}
		srv.Release("drift-kill")
		harness.Eventually(t, 20*time.Second, func() string {
			if alive(r.PID, r.StartTicks) {
				return "pi still running"
			}
			return ""
		})
		// Nobody has looked yet: nothing was finalised, nothing fired.
		if got := record(l.LaunchID); got.FinalisedAt != nil || len(hookLines(hookOut)) != 0 || len(rcv.deliveries()) != 0 {
			t.Fatalf("finalised before any command looked: %+v, hook %q, %d webhooks", got.FinalisedAt, hookLines(hookOut), len(rcv.deliveries()))
		}
		all := a.List(t) // the next list finalises it
		s, ok = harness.Find(all, l.ID)
		if !ok || s.Status != "stopped" || s.PID != 0 {
			t.Errorf("list after the agent ended: %+v (found %v); want stopped", s, ok)
		}
		got := record(l.LaunchID)
		if got.FinalisedAt == nil || got.EndedAt == nil || got.ExitCode != nil {
			t.Errorf("record after lazy finalisation: finalised %v ended %v exit %v; want finalised, exit code unknown", got.FinalisedAt, got.EndedAt, got.ExitCode)
		}
		// More commands, concurrently: still exactly once.
		var wg sync.WaitGroup
		for i := 0; i < 3; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); a.Run(t, "list", "-a") }()
		}
		wg.Wait()
		a.Run(t, "sweep")
		// The list that finalised it handed on-complete and the webhook to a
		// detached `agentctl __finalise` (reading never waits on it; sweep runs
		// them itself only when nobody alive holds them): they follow shortly,
		// later under load.
		harness.Eventually(t, 20*time.Second, func() string {
			if n, m := len(hookLines(hookOut)), len(rcv.deliveries()); n == 0 || m == 0 {
				return fmt.Sprintf("%d on-complete runs, %d webhook deliveries after the lazy finalisation", n, m)
			}
			return ""
		})
		time.Sleep(500 * time.Millisecond) // a second run of either would show by now
		if hl := hookLines(hookOut); len(hl) != 1 || hl[0] != " "+l.ID {
			t.Errorf("on-complete output %q; want exactly one line with no exit code: %q", hl, " "+l.ID)
		}
		ds := rcv.deliveries()
		if len(ds) != 1 {
			t.Fatalf("%d webhook deliveries, want exactly 1", len(ds))
		}
		checkDelivery(t, rcv, ds[0], map[string]any{"session_id": l.ID, "adapter": "pi", "cwd": ac.cwd, "exit_status": nil, "summary": prompt})
	})

	t.Run("launching shell SIGTERMed", func(t *testing.T) {
		before := len(rcv.deliveries())
		hookOut := filepath.Join(t.TempDir(), "on-complete.out")
		jsonOut := filepath.Join(t.TempDir(), "launch.json")
		script := fmt.Sprintf(`'%s' launch pi --json -p 'shell HOLD=drift-shell WORDS=2' --cwd '%s' --model fakeoai/fake-model --on-complete "$HOOK" --home '%s' > '%s'; sleep 300`,
			a.Bin, ac.cwd, a.Home, jsonOut)
		sh := harness.Start(t, harness.Spec{Path: "/bin/sh", Args: []string{"-c", script}, Dir: a.Home, Env: a.Env.With("HOOK", onComplete(hookOut)), Name: "launch-shell"})
		waitHeld(t, srv, "drift-shell")
		var l []launchedJSON
		harness.Eventually(t, 10*time.Second, func() string {
			b, _ := os.ReadFile(jsonOut)
			if err := json.Unmarshal(b, &l); err != nil || len(l) != 1 {
				return fmt.Sprintf("launch output %q", b)
			}
			return ""
		})
		r := record(l[0].LaunchID)
		// The whole job, as a closing terminal would.
		syscall.Kill(-sh.PID, syscall.SIGTERM)
		select {
		case <-sh.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the launching shell survived SIGTERM")
		}
		if !alive(r.PID, r.StartTicks) || !alive(r.SupervisorPID, r.SupervisorStart) {
			t.Fatalf("agent alive %v, supervisor alive %v after the shell died; want both", alive(r.PID, r.StartTicks), alive(r.SupervisorPID, r.SupervisorStart))
		}
		s, ok := harness.Find(a.ListAlive(t), l[0].ID)
		if !ok || s.Status != "running" || s.Evidence != "launch-record" || s.PID != r.PID {
			t.Errorf("list after the shell died: %+v (found %v)", s, ok)
		}
		srv.Release("drift-shell")
		if out, errOut, code := a.Run(t, "wait", "--timeout", "25s", l[0].ID); code != 0 || out != l[0].ID+" stopped (exit 0)\n" {
			t.Fatalf("wait: exit %d %q\n%s", code, out, errOut)
		}
		harness.Eventually(t, 20*time.Second, func() string {
			if len(hookLines(hookOut)) == 0 || len(rcv.deliveries()) == before {
				return "no on-complete or webhook yet"
			}
			return ""
		})
		a.List(t)
		time.Sleep(500 * time.Millisecond)
		if hl := hookLines(hookOut); len(hl) != 1 || hl[0] != "0 "+l[0].ID {
			t.Errorf("on-complete output %q; want exactly %q", hl, "0 "+l[0].ID)
		}
		if ds := rcv.deliveries(); len(ds) != before+1 {
			t.Errorf("%d new webhook deliveries, want 1", len(ds)-before)
		} else {
			checkDelivery(t, rcv, ds[before], map[string]any{"session_id": l[0].ID, "exit_status": float64(0)})
		}
	})
}
