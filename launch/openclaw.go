package launch

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/gateway"
	"github.com/agentctl/agentctl/meta"
)

// OpenClaw launches turns on an OpenClaw gateway (docs/agents/openclaw.md §6): there
// is no local process. The supervisor pre-assigns the session key
// agent:main:<launch-id>, sends `sessions.create {key, message, idempotencyKey}`
// (`sessions.send` to resume) over the gateway's WebSocket with agentctl's own
// device identity — the gateway lets only the device that started a run abort
// it — and then waits for the run with `agent.wait`, finalising with exit 0
// for a run that ended `done` and 1 otherwise. Directory locks, --cwd and
// worktrees do not apply: the turn runs in the gateway's agent workspace.
type OpenClaw struct{}

// OpenClawConfirmTimeout bounds the handshake plus the create/send ack (~0.2 s
// on loopback; a gateway still starting retries within it).
const OpenClawConfirmTimeout = 30 * time.Second

func (OpenClaw) Name() string { return "openclaw" }

var openclawKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^agent:[^:\s]+:\S+$`) })

// OpenClawKey is the key agentctl pre-assigns to a launch (the gateway accepts
// client-chosen keys, like Claude's --session-id).
func OpenClawKey(launchID string) string { return "agent:main:" + launchID }

// Plan checks what can be checked without the gateway. The prompt travels in
// the RPC frame, never in argv; there is no binary.
func (OpenClaw) Plan(req *Request) (*Plan, error) {
	switch {
	case req.PermissionMode != "":
		return nil, &InputError{"--permission-mode: openclaw runs turns under its gateway's own policy"}
	case req.AppendSystemPrompt != "":
		return nil, &InputError{"--append-system-prompt is not supported for openclaw; put the instructions in the prompt"}
	case len(req.UserEnv) > 0:
		return nil, &InputError{"--env: openclaw runs turns inside its gateway; there is no agent process to pass variables to"}
	}
	env := configEnv(req, "openclaw")
	p := &Plan{Env: env.vars, EnvNames: env.names(), ConfirmTimeout: OpenClawConfirmTimeout}
	switch req.Kind {
	case KindResume:
		if !openclawKeyRE().MatchString(req.SessionID) {
			return nil, &InputError{fmt.Sprintf("openclaw resumes a session by its key (agent:<agent>:<name>), not %q", req.SessionID)}
		}
		p.SessionID = req.SessionID
	default:
		if req.LaunchID != "" {
			p.SessionID = OpenClawKey(req.LaunchID)
		}
	}
	return p, nil
}

// Confirm: only the gateway's ack confirms an OpenClaw session (see
// superviseGateway); there are no output lines.
func (OpenClaw) Confirm([][]byte, string) (string, *meta.InitInfo, bool) { return "", nil, false }

// Classify maps a known exit code when the run's end was not read from the
// gateway itself.
func (OpenClaw) Classify(_ [][]byte, exitCode int, stopRequested bool) Outcome {
	switch {
	case stopRequested, exitCode == 0:
		return Outcome{}
	case exitCode < 0:
		return Outcome{Class: "unknown", Message: "the run's end was not observed"}
	}
	return Outcome{Class: "error", Message: fmt.Sprintf("the run ended (exit %d)", exitCode)}
}

// ensureDevice returns agentctl's OpenClaw device identity, creating it (0600,
// never regenerated) on first use. Two launches racing both end up with the
// file that was linked into place first.
func ensureDevice(stateDir string) (gateway.Device, string, error) {
	d, path, ok, err := gateway.LoadDevice(stateDir)
	if err != nil || ok {
		return d, path, err
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return d, path, err
	}
	b, err := gateway.EncodeDevice(gateway.NewDevice(key))
	if err != nil {
		return d, path, err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return d, path, err
	}
	tmp, err := os.CreateTemp(stateDir, ".openclaw-device-*")
	if err != nil {
		return d, path, err
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(b); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return d, path, fmt.Errorf("write %s: %w", path, err)
	}
	// link(2) fails if the file appeared meanwhile: never overwrite an identity.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return d, path, fmt.Errorf("create %s: %w", path, err)
	}
	d, path, ok, err = gateway.LoadDevice(stateDir)
	if err == nil && !ok {
		err = fmt.Errorf("%s vanished after it was created", path)
	}
	return d, path, err
}

// gatewayEnv resolves the gateway the way discovery does, from the given
// environment (the launch's, for a supervisor).
func (d *Deps) gatewayEnv(environ []string, home string) gateway.Settings {
	if home == "" {
		home, _ = lookupEnv(environ, "HOME")
	}
	return gateway.Settings{Home: home, Config: d.Config,
		Getenv: func(k string) string { v, _ := lookupEnv(environ, k); return v },
		Warn:   func(m string) { d.warn("openclaw: %s", m) }}
}

// dialGateway connects with agentctl's device identity and the given scopes.
func (d *Deps) dialGateway(ctx context.Context, env gateway.Settings, scopes, methods []string) (*gateway.Conn, gateway.Device, error) {
	dev, path, err := ensureDevice(d.Store.Dir)
	if err != nil {
		return nil, dev, fmt.Errorf("openclaw device identity: %w", err)
	}
	ep, err := gateway.Resolve(env, gateway.DefaultURL)
	if err != nil {
		return nil, dev, err
	}
	c, err := gateway.Dial(ctx, gateway.DialOptions{Endpoint: ep, Scopes: scopes, Methods: methods, Device: &dev, DevicePath: path})
	return c, dev, err
}

// Wire shapes (docs/agents/openclaw.md §6). Param schemas are closed: only documented keys.
type ocCreateParams struct {
	Key            string `json:"key"`
	Message        string `json:"message"`
	IdempotencyKey string `json:"idempotencyKey"`
	Model          string `json:"model,omitempty"`
}

type ocSendParams struct {
	Key            string `json:"key"`
	Message        string `json:"message"`
	IdempotencyKey string `json:"idempotencyKey"`
}

type ocAck struct {
	Key        string `json:"key"`
	SessionID  string `json:"sessionId"`
	RunStarted *bool  `json:"runStarted"`
	RunID      string `json:"runId"`
	Status     string `json:"status"`
	RunError   any    `json:"runError"`
	Resolved   *struct {
		ModelProvider string `json:"modelProvider"`
		Model         string `json:"model"`
	} `json:"resolved"`
}

type ocListParams struct {
	Limit  int    `json:"limit"`
	Offset int    `json:"offset"`
	Search string `json:"search"`
}

type ocRow struct {
	Key          string `json:"key"`
	SessionID    string `json:"sessionId"`
	Status       string `json:"status"`
	HasActiveRun *bool  `json:"hasActiveRun"`
	LastRunID    string `json:"lastRunId"`
}

func (r ocRow) active() bool {
	if r.HasActiveRun != nil {
		return *r.HasActiveRun
	}
	return r.Status == "running" || r.Status == "queued"
}

// gatewayRow reads the row of exactly key (search also matches titles, labels
// and id prefixes). found is false when the gateway has no such session.
func gatewayRow(ctx context.Context, c *gateway.Conn, key string) (ocRow, bool, error) {
	var res struct {
		Sessions []ocRow `json:"sessions"`
	}
	if err := c.Call(ctx, "sessions.list", ocListParams{Limit: 100, Search: key}, &res); err != nil {
		return ocRow{}, false, err
	}
	for _, r := range res.Sessions {
		if r.Key == key {
			return r, true, nil
		}
	}
	return ocRow{}, false, nil
}

// runEnd maps a finished run's row to an exit code and outcome: done is 0,
// anything else (failed, timeout, killed) is 1.
func runEnd(r ocRow, stopRequested bool) (int, Outcome) {
	switch {
	case r.Status == "done":
		return 0, Outcome{}
	case stopRequested:
		return 1, Outcome{}
	case r.Status == "killed":
		return 1, Outcome{Class: "aborted", Message: "the run was aborted (by another gateway client)"}
	case r.Status == "":
		return 1, Outcome{Class: "error", Message: "the gateway reports no run status"}
	}
	return 1, Outcome{Class: "error", Message: "the run ended " + r.Status}
}

// superviseGateway is Supervise for a gateway session: send the turn, report
// the confirmed key, wait for the run to end, finalise.
func (d *Deps) superviseGateway(ctx context.Context, rec *meta.Launch, report func(Report), prompt *os.File, environ []string, confirmTimeout time.Duration) error {
	fail := func(o Outcome) error {
		_, ferr := d.finalise(ctx, rec.ID, ended{Outcome: o, Startup: true}, false)
		report(Report{Status: "failed", Class: o.Class, Message: o.Message})
		return ferr
	}
	spid, sstart := d.self()
	d.setField(rec.ID, func(r *meta.Launch) {
		r.SupervisorPID, r.SupervisorStart = spid, sstart
		r.LauncherPID, r.LauncherStart = 0, 0
	})
	var msg []byte
	var err error
	if prompt != nil {
		msg, err = io.ReadAll(prompt)
		prompt.Close()
	}
	if err != nil || prompt == nil {
		return fail(Outcome{Class: "error", Message: fmt.Sprintf("read the prompt: %v", err)})
	}
	if confirmTimeout <= 0 {
		confirmTimeout = OpenClawConfirmTimeout
	}
	env := d.gatewayEnv(environ, "")
	cctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	defer cancel()
	method := "sessions.create"
	if rec.Kind == KindResume {
		method = "sessions.send"
	}
	conn, dev, err := d.dialGateway(cctx, env, []string{gateway.ScopeRead, gateway.ScopeWrite}, []string{method, "sessions.list", "agent.wait"})
	if err != nil {
		return fail(Outcome{Class: gatewayClass(err), Message: err.Error()})
	}
	defer func() { conn.Close(context.Background()) }()
	var ack ocAck
	if rec.Kind == KindResume {
		err = conn.Call(cctx, method, ocSendParams{Key: rec.SessionID, Message: string(msg), IdempotencyKey: rec.ID}, &ack)
	} else {
		err = conn.Call(cctx, method, ocCreateParams{Key: rec.SessionID, Message: string(msg), IdempotencyKey: rec.ID, Model: rec.Model}, &ack)
	}
	if err != nil {
		return fail(Outcome{Class: gatewayClass(err), Message: err.Error()})
	}
	key := rec.SessionID
	if ack.Key != "" {
		key = ack.Key // the gateway's word
	}
	if ack.RunStarted != nil && !*ack.RunStarted {
		why := "no reason given"
		if ack.RunError != nil {
			why = oneLine(fmt.Sprint(ack.RunError), 200)
		}
		return fail(Outcome{Class: "error", Message: fmt.Sprintf("the gateway created %s but did not start its turn: %s", key, why)})
	}
	if ack.RunID == "" {
		return fail(Outcome{Class: "error", Message: fmt.Sprintf("the gateway answered %s without a run id (status %q)", method, ack.Status)})
	}
	fmt.Fprintf(os.Stderr, "agentctl: openclaw %s %s: run %s on %s\n", method, key, ack.RunID, conn.URL())
	now := d.now()
	d.setField(rec.ID, func(r *meta.Launch) {
		r.ConfirmedAt = &now
		if r.Kind == KindResume {
			if key != r.SessionID {
				r.ResumedAs = key
			}
		} else {
			r.SessionID = key
		}
		r.Gateway = &meta.GatewayInfo{URL: conn.URL(), SessionID: ack.SessionID, RunID: ack.RunID, DeviceID: dev.ID}
		if r.Model == "" && ack.Resolved != nil && ack.Resolved.Model != "" {
			r.Model = ack.Resolved.Model
			if p := ack.Resolved.ModelProvider; p != "" && !strings.HasPrefix(r.Model, p+"/") {
				r.Model = p + "/" + r.Model
			}
		}
	})
	if cur := d.record(rec.ID); cur != nil {
		d.journal(meta.EventLaunched, cur)
	}
	report(Report{Status: "ready", SessionID: key})

	// A budget is watched beside the wait; a breach aborts the run, which the
	// wait then sees end.
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		d.watchGatewayBudget(ctx, rec.ID, done)
	}()
	code, o, err := d.waitGatewayRun(ctx, env, conn, rec.ID, key, ack.RunID)
	close(done)
	<-watched
	if err == nil {
		// A busy gateway can take longer to mark an aborted run ended than the
		// abort waits for; the end is observed now.
		d.setField(rec.ID, func(r *meta.Launch) {
			if r.Breach != nil && r.StopRequested != nil {
				r.Breach.Stopped = true
			}
		})
	}
	if err != nil {
		// The gateway stayed away: leave the record to lazy finalisation, which
		// asks the gateway again (nothing about the session changes meanwhile).
		return err
	}
	_, err = d.finalise(ctx, rec.ID, ended{ExitCode: &code, Outcome: o}, false)
	return err
}

// gatewayGiveUp is how long a supervisor keeps reconnecting to a gateway that
// went away before it gives up (the record then waits for lazy finalisation).
const gatewayGiveUp = 10 * time.Minute

// waitGatewayRun blocks until run has ended (docs/agents/openclaw.md §6.4): agent.wait with
// timeoutMs ≤ 30 s in a loop — it answers "timeout" also for an unknown run id —
// and the session row checked between calls. A lost connection is redialled.
func (d *Deps) waitGatewayRun(ctx context.Context, env gateway.Settings, conn *gateway.Conn, launchID, key, runID string) (int, Outcome, error) {
	var down time.Time
	backoff := 500 * time.Millisecond
	for {
		if conn == nil {
			dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			c, _, err := d.dialGateway(dctx, env, []string{gateway.ScopeRead, gateway.ScopeWrite}, []string{"sessions.list", "agent.wait"})
			cancel()
			if err != nil {
				if down.IsZero() {
					down = time.Now()
				}
				if time.Since(down) > gatewayGiveUp {
					return 0, Outcome{}, fmt.Errorf("gateway unreachable for %s while waiting for run %s of %s: %w", gatewayGiveUp, runID, key, err)
				}
				if err := d.Sleep(ctx, backoff); err != nil {
					return 0, Outcome{}, err
				}
				backoff = min(backoff*2, 30*time.Second)
				continue
			}
			conn, down, backoff = c, time.Time{}, 500*time.Millisecond
			defer c.Close(context.Background())
		}
		var w struct {
			Status string `json:"status"`
		}
		wctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		err := conn.Call(wctx, "agent.wait", map[string]any{"runId": runID, "timeoutMs": 30000}, &w)
		var row ocRow
		found := false
		if err == nil {
			row, found, err = gatewayRow(wctx, conn, key)
		}
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return 0, Outcome{}, ctx.Err()
			}
			d.warn("openclaw: %v; reconnecting", err)
			conn.Abort()
			conn = nil
			continue
		}
		stop := false
		if cur := d.record(launchID); cur != nil {
			stop = cur.StopRequested != nil
		}
		switch {
		case !found:
			return 1, Outcome{Class: "error", Message: fmt.Sprintf("session %s is gone from the gateway", key)}, nil
		case !row.active() && (row.LastRunID == runID || w.Status == "ok"):
			code, o := runEnd(row, stop)
			return code, o, nil
		case w.Status == "ok":
			// agent.wait saw the end before the row did.
			if err := d.Sleep(ctx, 250*time.Millisecond); err != nil {
				return 0, Outcome{}, err
			}
		}
	}
}

// gatewayClass names a gateway failure for the launch record.
func gatewayClass(err error) string {
	var ge *gateway.Error
	if !errors.As(err, &ge) {
		return "error"
	}
	switch ge.Kind {
	case gateway.KindUnreachable, gateway.KindNotGateway, gateway.KindTimeout, gateway.KindClosed, gateway.KindStarting:
		return "unreachable"
	case gateway.KindAuth, gateway.KindNoToken, gateway.KindPairing, gateway.KindDevice, gateway.KindScope:
		return "auth"
	case gateway.KindProtocol:
		return "protocol"
	}
	return "error"
}

// gatewayEnded asks the gateway whether the run of an unfinalised launch whose
// supervisor died has ended (lazy finalisation). ok is false when it cannot
// tell now (gateway away): the record then stays as it is.
func (d *Deps) gatewayEnded(ctx context.Context, r *meta.Launch) (code int, o Outcome, ok bool) {
	if r.Gateway == nil || r.Gateway.RunID == "" {
		return 0, Outcome{}, false
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, _, err := d.dialGateway(cctx, d.gatewayEnv(d.Environ, r.Home), []string{gateway.ScopeRead}, []string{"sessions.list"})
	if err != nil {
		d.warn("openclaw: cannot finalise %s now: %v", r.ID, err)
		return 0, Outcome{}, false
	}
	defer conn.Close(cctx)
	key := r.CurrentSessionID()
	row, found, err := gatewayRow(cctx, conn, key)
	switch {
	case err != nil:
		d.warn("openclaw: cannot finalise %s now: %v", r.ID, err)
		return 0, Outcome{}, false
	case !found:
		return 1, Outcome{Class: "error", Message: fmt.Sprintf("session %s is gone from the gateway", key)}, true
	case row.active() && row.LastRunID == r.Gateway.RunID:
		return 0, Outcome{}, false
	case row.active() && row.LastRunID == "":
		return 0, Outcome{}, false
	case row.LastRunID != r.Gateway.RunID:
		// A later run replaced ours; ours ended, how is no longer on record.
		return 1, Outcome{Class: "unknown", Message: "the run ended; a later run replaced its status on the gateway"}, true
	}
	code, o = runEnd(row, r.StopRequested != nil)
	return code, o, true
}

// GatewayStopTarget is an OpenClaw session to abort.
type GatewayStopTarget struct {
	Key      string
	RunID    string // "" aborts whatever run is active
	LaunchID string // the launch record whose run this is ("" for foreign runs)
	Home     string // --home, for OpenClaw's config file fallback
}

// GatewayStopResult is what happened, truthfully.
type GatewayStopResult struct {
	AbortedRunID string
	Stopped      bool // the row no longer shows an active run
	NoActiveRun  bool
	Elapsed      time.Duration
}

// StopGateway aborts a gateway run (docs/agents/openclaw.md §6.3) with `sessions.abort`
// and confirms by polling the row until it is no longer running (≤ 5 s). Runs
// agentctl started are aborted with write scope and agentctl's device identity
// (the gateway binds run ownership to it); force adds operator.admin, which any
// other run needs.
func (d *Deps) StopGateway(ctx context.Context, t GatewayStopTarget, force bool) (GatewayStopResult, error) {
	var res GatewayStopResult
	begin := time.Now()
	scopes := []string{gateway.ScopeRead, gateway.ScopeWrite}
	if force {
		scopes = append(scopes, gateway.ScopeAdmin)
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, _, err := d.dialGateway(cctx, d.gatewayEnv(d.Environ, t.Home), scopes, []string{"sessions.abort", "sessions.list"})
	if err != nil {
		return res, err
	}
	defer conn.Close(context.Background())
	if t.LaunchID != "" {
		now := d.now()
		d.setField(t.LaunchID, func(r *meta.Launch) {
			if r.StopRequested == nil {
				r.StopRequested = &now
			}
			r.Stop = &meta.StopInfo{RequestedAt: now, Signals: []string{"sessions.abort"}}
		})
	}
	params := map[string]any{"key": t.Key}
	if t.RunID != "" {
		params["runId"] = t.RunID
	}
	var ack struct {
		OK           bool   `json:"ok"`
		AbortedRunID string `json:"abortedRunId"`
		Status       string `json:"status"`
		Aborted      *bool  `json:"aborted"`
	}
	if err := conn.Call(cctx, "sessions.abort", params, &ack); err != nil {
		return res, err
	}
	res.AbortedRunID = ack.AbortedRunID
	res.NoActiveRun = ack.AbortedRunID == "" && (ack.Aborted != nil && !*ack.Aborted || ack.Status != "aborted")
	deadline := time.Now().Add(5 * time.Second)
	for {
		row, found, err := gatewayRow(cctx, conn, t.Key)
		if err != nil {
			return res, err
		}
		if !found || !row.active() {
			res.Stopped = true
			break
		}
		if time.Now().After(deadline) {
			break
		}
		if err := d.Sleep(ctx, 200*time.Millisecond); err != nil {
			return res, err
		}
	}
	res.Elapsed = time.Since(begin)
	if t.LaunchID != "" {
		d.setField(t.LaunchID, func(r *meta.Launch) {
			if r.Stop != nil {
				r.Stop.ExitObserved = res.Stopped
			}
		})
	}
	return res, nil
}
