package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/agentctl/agentctl/internal/clock"
)

// Protocol is the one gateway protocol agentctl speaks. It is pinned (min = max):
// guessing at another version's frames is worse than saying it does not match.
const Protocol = 4

const (
	clientID   = "cli" // must be one of the gateway's known client ids
	clientMode = "cli"
	roleOp     = "operator"
	// readLimit: coder/websocket's default (32 KiB) is smaller than hello-ok alone.
	readLimit = 32 << 20
	// closeWait bounds the polite close handshake after a successful command.
	closeWait = 500 * time.Millisecond
	// retryDefault is the pause before retrying UNAVAILABLE without retryAfterMs.
	retryDefault = 250 * time.Millisecond
)

// Kind classifies a gateway failure, so callers (doctor, tests) branch on it
// rather than on message text.
type Kind int

// Failure kinds (docs/agents/openclaw.md §2.4).
const (
	KindUnreachable Kind = iota + 1 // nothing listening, DNS, routing
	KindNotGateway                  // something answered HTTP but not the WebSocket upgrade
	KindTimeout                     // no answer within the adapter's budget
	KindProtocol                    // protocol mismatch
	KindAuth                        // token or password rejected
	KindNoToken                     // the gateway needs credentials agentctl does not have
	KindPairing                     // new device must be approved on the gateway
	KindDevice                      // device signature refused (an agentctl bug)
	KindScope                       // a method needs a scope this connection lacks
	KindStarting                    // gateway still starting
	KindClosed                      // the gateway closed the connection unexpectedly
	KindRefused                     // any other error response
)

// Error is a gateway failure whose text names the cause and what to do.
type Error struct {
	Kind Kind
	// Code is error.details.code, else error.code, from the wire (may be empty).
	Code string
	msg  string
	err  error
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.err }

func gwErr(kind Kind, code string, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, msg: fmt.Sprintf(format, args...), err: cause}
}

// Frames (docs/agents/openclaw.md §2.2).
type request struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params"`
}

type incoming struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	OK      bool            `json:"ok"`
	Payload json.RawMessage `json:"payload"`
	Error   *rpcError       `json:"error"`
	Event   string          `json:"event"`
}

type rpcError struct {
	Code         string          `json:"code"`
	Message      string          `json:"message"`
	Details      json.RawMessage `json:"details"`
	Retryable    bool            `json:"retryable"`
	RetryAfterMs float64         `json:"retryAfterMs"`
}

type errDetails struct {
	Code             string `json:"code"`
	ExpectedProtocol *int   `json:"expectedProtocol"`
	MissingScope     string `json:"missingScope"`
	Reason           string `json:"reason"`
}

func (e *rpcError) details() errDetails {
	var d errDetails
	_ = json.Unmarshal(e.Details, &d) // details are optional and may be any shape
	return d
}

// code is the most specific code on the wire.
func (e *rpcError) code() string {
	if d := e.details(); d.Code != "" {
		return d.Code
	}
	return e.Code
}

type connectParams struct {
	MinProtocol int           `json:"minProtocol"`
	MaxProtocol int           `json:"maxProtocol"`
	Client      clientInfo    `json:"client"`
	Role        string        `json:"role"`
	Scopes      []string      `json:"scopes"`
	Caps        []string      `json:"caps"`
	Auth        *authParams   `json:"auth,omitempty"`
	Device      *deviceParams `json:"device,omitempty"`
}

type clientInfo struct {
	ID       string `json:"id"`
	Version  string `json:"version"`
	Platform string `json:"platform"`
	Mode     string `json:"mode"`
}

type authParams struct {
	Token    string `json:"token,omitempty"`
	Password string `json:"password,omitempty"`
}

type deviceParams struct {
	ID        string      `json:"id"`
	PublicKey string      `json:"publicKey"`
	Signature string      `json:"signature"`
	SignedAt  json.Number `json:"signedAt"`
	Nonce     string      `json:"nonce"`
}

type challenge struct {
	Nonce string      `json:"nonce"`
	TS    json.Number `json:"ts"`
}

type helloOK struct {
	Type     string `json:"type"`
	Protocol int    `json:"protocol"`
	Server   struct {
		Version string `json:"version"`
	} `json:"server"`
	Features struct {
		Methods []string `json:"methods"`
	} `json:"features"`
	Auth struct {
		Scopes []string `json:"scopes"`
	} `json:"auth"`
}

// client is one WebSocket connection to a gateway, used for every RPC of one
// command. It is not safe for concurrent use: send/wait interleave on one
// goroutine, with responses for other ids kept until asked for.
type client struct {
	conn    *websocket.Conn
	raw     func() net.Conn // the TCP connection under conn, to cut a stuck close
	ep      Endpoint
	budget  time.Duration // the caller's deadline, for "did not answer within"
	next    int
	pending map[string]bool
	stash   map[string]incoming
	hello   helloOK
	device  *Device
	devPath string
}

// connectOpts are the inputs of one connection.
type connectOpts struct {
	ep      Endpoint
	version string
	device  *Device // nil: token-only
	devPath string  // where the identity would be, for messages
	scopes  []string
	methods []string // methods the command needs; checked against hello-ok
	// budget is the caller's whole time allowance, for messages (0: from ctx).
	budget time.Duration
}

// connect dials and completes the protocol-4 handshake, retrying a gateway that
// says it is still starting until ctx expires.
func connect(ctx context.Context, o connectOpts) (*client, error) {
	budget := o.budget
	if dl, ok := ctx.Deadline(); ok && budget == 0 {
		budget = time.Until(dl)
	}
	var starting error
	for {
		c, err := dialOnce(ctx, o, budget)
		var ge *Error
		if starting != nil && errors.As(err, &ge) && ge.Kind == KindTimeout {
			return nil, starting // the deadline hit while redialling: still starting
		}
		if !errors.As(err, &ge) || ge.Kind != KindStarting {
			return c, err
		}
		starting = err
		if retryWait(ctx, err) != nil {
			return nil, err
		}
	}
}

// retryWait waits as long as a starting gateway asked (err's retry hint, else
// retryDefault), or until ctx ends: then it returns ctx.Err().
func retryWait(ctx context.Context, err error) error {
	wait := retryDefault
	var se *startingError
	if errors.As(err, &se) && se.after > 0 {
		wait = se.after
	}
	return clock.Sleep(ctx, wait)
}

// startingError carries the gateway's retry hint inside a KindStarting Error.
type startingError struct{ after time.Duration }

func (e *startingError) Error() string { return "gateway starting" }

func dialOnce(ctx context.Context, o connectOpts, budget time.Duration) (*client, error) {
	var mu sync.Mutex
	var rawConn net.Conn
	dialer := &net.Dialer{}
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := dialer.DialContext(ctx, network, addr)
			if err == nil {
				mu.Lock()
				rawConn = nc
				mu.Unlock()
			}
			return nc, err
		},
	}
	defer tr.CloseIdleConnections()
	c := &client{
		ep: o.ep, budget: budget, device: o.device, devPath: o.devPath,
		pending: map[string]bool{}, stash: map[string]incoming{},
		raw: func() net.Conn { mu.Lock(); defer mu.Unlock(); return rawConn },
	}
	conn, resp, err := websocket.Dial(ctx, o.ep.url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		return nil, c.dialErr(ctx, resp, err)
	}
	conn.SetReadLimit(readLimit)
	c.conn = conn
	if err := c.handshake(ctx, o); err != nil {
		c.abort()
		return nil, err
	}
	return c, nil
}

func (c *client) dialErr(ctx context.Context, resp *http.Response, err error) error {
	url := c.ep.url
	if ctx.Err() != nil {
		return c.ctxErr(ctx, "the WebSocket upgrade")
	}
	if resp != nil {
		return gwErr(KindNotGateway, "", err, "%s is not an OpenClaw gateway (HTTP %d to the WebSocket upgrade); check the URL (from %s)", url, resp.StatusCode, c.ep.urlSource)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return gwErr(KindUnreachable, "", err, "cannot reach gateway %s: connection refused; start it (`openclaw gateway run`) or set OPENCLAW_GATEWAY_URL (URL from %s)", url, c.ep.urlSource)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return gwErr(KindUnreachable, "", err, "cannot reach gateway %s: %v (URL from %s)", url, oe.Err, c.ep.urlSource)
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return gwErr(KindUnreachable, "", err, "cannot reach gateway %s: %v (URL from %s)", url, de, c.ep.urlSource)
	}
	return gwErr(KindUnreachable, "", err, "cannot reach gateway %s: %v", url, err)
}

// ctxErr words an expired or cancelled context. The gateway gets the blame only
// for a deadline; a cancelled command is just cancelled.
func (c *client) ctxErr(ctx context.Context, waitingFor string) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err()
	}
	within := "in time"
	if c.budget > 0 {
		within = "within " + roundUp2(c.budget).String()
	}
	return gwErr(KindTimeout, "", ctx.Err(), "gateway %s did not answer %s (waiting for %s); check that it is healthy, or raise --timeout", c.ep.url, within, waitingFor)
}

func (c *client) handshake(ctx context.Context, o connectOpts) error {
	// The server speaks first.
	var ch challenge
	for {
		f, err := c.read(ctx, "connect.challenge")
		if err != nil {
			return err
		}
		if f.Type == "event" && f.Event == "connect.challenge" {
			if err := json.Unmarshal(f.Payload, &ch); err != nil || ch.Nonce == "" || ch.TS == "" {
				return gwErr(KindRefused, "", err, "gateway %s sent a malformed connect.challenge; is it OpenClaw?", c.ep.url)
			}
			break
		}
	}
	p := connectParams{
		MinProtocol: Protocol, MaxProtocol: Protocol,
		Client: clientInfo{ID: clientID, Version: o.version, Platform: runtime.GOOS, Mode: clientMode},
		Role:   roleOp, Scopes: o.scopes, Caps: []string{},
	}
	if o.ep.token != "" || o.ep.password != "" {
		p.Auth = &authParams{Token: o.ep.token, Password: o.ep.password}
	}
	if d := o.device; d != nil {
		p.Device = &deviceParams{
			ID: d.ID, PublicKey: d.PublicKey(), SignedAt: ch.TS, Nonce: ch.Nonce,
			Signature: d.Sign(SignPayload{
				ClientID: clientID, ClientMode: clientMode, Role: roleOp, Scopes: o.scopes,
				SignedAt: ch.TS.String(), Token: o.ep.token, Nonce: ch.Nonce, Platform: runtime.GOOS,
			}),
		}
	}
	id, err := c.send(ctx, "connect", p)
	if err != nil {
		return err
	}
	f, err := c.waitFrame(ctx, id, "hello-ok")
	if err != nil {
		return err
	}
	if !f.OK {
		return c.connectErr(f.Error)
	}
	if err := json.Unmarshal(f.Payload, &c.hello); err != nil {
		return gwErr(KindRefused, "", err, "gateway %s sent a malformed hello-ok: %v", c.ep.url, err)
	}
	if c.hello.Protocol != Protocol {
		return gwErr(KindProtocol, "", nil, "gateway %s speaks protocol %d, agentctl speaks %d", c.ep.url, c.hello.Protocol, Protocol)
	}
	if have := c.hello.Features.Methods; len(have) > 0 {
		for _, m := range o.methods {
			if !slices.Contains(have, m) {
				return gwErr(KindRefused, "", nil, "gateway %s (OpenClaw %s) has no %s method; agentctl is verified against OpenClaw 2026.9.6", c.ep.url, c.hello.Server.Version, m)
			}
		}
	}
	return nil
}

// connectErr words a refused connect (docs/agents/openclaw.md §2.4 table).
func (c *client) connectErr(e *rpcError) error {
	if e == nil {
		return gwErr(KindRefused, "", nil, "gateway %s refused connect without saying why", c.ep.url)
	}
	d := e.details()
	code := e.code()
	url := c.ep.url
	switch {
	case code == "PROTOCOL_MISMATCH":
		if d.ExpectedProtocol != nil {
			return gwErr(KindProtocol, code, nil, "gateway %s speaks protocol %d, agentctl speaks %d (PROTOCOL_MISMATCH)%s", url, *d.ExpectedProtocol, Protocol, protocolHint(*d.ExpectedProtocol))
		}
		return gwErr(KindProtocol, code, nil, "gateway %s does not speak protocol %d, the one agentctl speaks (PROTOCOL_MISMATCH)", url, Protocol)
	case code == "DEVICE_IDENTITY_REQUIRED" && c.ep.token == "" && c.ep.password == "":
		return gwErr(KindNoToken, code, nil, "no token for gateway %s: set OPENCLAW_GATEWAY_TOKEN (the gateway's gateway.auth.token) or config adapters.openclaw.token", url)
	case code == "DEVICE_IDENTITY_REQUIRED":
		return gwErr(KindNoToken, code, nil, "gateway %s requires a device identity and agentctl has none (%s is created by the first `agentctl launch openclaw`)", url, c.devPath)
	case strings.HasPrefix(code, "AUTH_"):
		if c.ep.password != "" && (c.ep.token == "" || strings.Contains(code, "PASSWORD")) {
			return gwErr(KindAuth, code, nil, "gateway %s rejected the password (%s): set OPENCLAW_GATEWAY_PASSWORD to its password", url, code)
		}
		if c.ep.token == "" {
			return gwErr(KindNoToken, code, nil, "gateway %s wants a token (%s): set OPENCLAW_GATEWAY_TOKEN to its gateway.auth.token", url, code)
		}
		return gwErr(KindAuth, code, nil, "gateway %s rejected the token from %s (%s): set OPENCLAW_GATEWAY_TOKEN to its gateway.auth.token (or config adapters.openclaw.token)", url, c.ep.tokenSource, code)
	case code == "PAIRING_REQUIRED" || e.Code == "PAIRING_REQUIRED":
		dev := "none"
		if c.device != nil {
			dev = c.device.ID
		}
		return gwErr(KindPairing, code, nil, "gateway %s: approve this device on the gateway (device %s)", url, dev)
	case e.Code == "NOT_PAIRED" && c.ep.token == "" && c.ep.password == "":
		return gwErr(KindNoToken, code, nil, "no token for gateway %s: set OPENCLAW_GATEWAY_TOKEN (%s)", url, code)
	case strings.HasPrefix(code, "DEVICE_AUTH"):
		return gwErr(KindDevice, code, nil, "gateway %s refused agentctl's device signature: %s (an agentctl bug; please report it)", url, code)
	case e.Code == "UNAVAILABLE":
		ge := gwErr(KindStarting, code, &startingError{after: time.Duration(e.RetryAfterMs * float64(time.Millisecond))}, "gateway %s still starting%s; try again shortly", url, reasonSuffix(d.Reason))
		return ge
	}
	return gwErr(KindRefused, code, nil, "gateway %s refused the connection: %s: %s", url, codePair(e), oneLine(e.Message))
}

// roundUp2 rounds d up to two significant digits (4.987s → 5s, 287ms → 290ms):
// the budget is measured after the caller's own set-up, so it is a hair short
// of the configured timeout the user knows.
func roundUp2(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for d/unit >= 100 {
		unit *= 10
	}
	return (d + unit - 1) / unit * unit
}

func protocolHint(expected int) string {
	if expected > Protocol {
		return "; this gateway is newer than agentctl supports: upgrade agentctl"
	}
	return "; upgrade the gateway (OpenClaw 2026.9.6 or later)"
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " (" + oneLine(r) + ")"
}

func codePair(e *rpcError) string {
	if d := e.details(); d.Code != "" && d.Code != e.Code {
		return e.Code + "/" + d.Code
	}
	return e.Code
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// read returns the next frame.
func (c *client) read(ctx context.Context, waitingFor string) (incoming, error) {
	_, b, err := c.conn.Read(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return incoming{}, c.ctxErr(ctx, waitingFor)
		}
		if st := websocket.CloseStatus(err); st != -1 {
			var ce websocket.CloseError
			errors.As(err, &ce)
			reason := ""
			if ce.Reason != "" {
				reason = ": " + oneLine(ce.Reason)
			}
			return incoming{}, gwErr(KindClosed, "", err, "gateway %s closed the connection while agentctl waited for %s (status %d%s)", c.ep.url, waitingFor, int(st), reason)
		}
		if errors.Is(err, websocket.ErrMessageTooBig) {
			return incoming{}, gwErr(KindRefused, "", err, "gateway %s sent a frame over %d MiB while agentctl waited for %s", c.ep.url, readLimit>>20, waitingFor)
		}
		return incoming{}, gwErr(KindClosed, "", err, "gateway %s: connection lost while agentctl waited for %s: %v", c.ep.url, waitingFor, err)
	}
	var f incoming
	if err := json.Unmarshal(b, &f); err != nil {
		return incoming{}, gwErr(KindRefused, "", err, "gateway %s sent a frame that is not JSON while agentctl waited for %s", c.ep.url, waitingFor)
	}
	return f, nil
}

// send writes one request and returns its id.
func (c *client) send(ctx context.Context, method string, params any) (string, error) {
	c.next++
	id := "a" + strconv.Itoa(c.next)
	b, err := json.Marshal(request{Type: "req", ID: id, Method: method, Params: params})
	if err != nil {
		return "", err
	}
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		if ctx.Err() != nil {
			return "", c.ctxErr(ctx, method)
		}
		return "", gwErr(KindClosed, "", err, "gateway %s: sending %s: %v", c.ep.url, method, err)
	}
	c.pending[id] = true
	return id, nil
}

// waitFrame returns the response to id. Responses may come out of order and
// events at any time: events are ignored (agentctl subscribes to none), other
// responses are kept for their own wait.
func (c *client) waitFrame(ctx context.Context, id, waitingFor string) (incoming, error) {
	for {
		if f, ok := c.stash[id]; ok {
			delete(c.stash, id)
			delete(c.pending, id)
			return f, nil
		}
		f, err := c.read(ctx, waitingFor)
		if err != nil {
			return incoming{}, err
		}
		if f.Type != "res" {
			continue
		}
		if f.ID == id {
			delete(c.pending, id)
			return f, nil
		}
		if c.pending[f.ID] {
			c.stash[f.ID] = f
		}
	}
}

// wait returns the payload of the response to id, or the error it carries.
func (c *client) wait(ctx context.Context, id, method string) (json.RawMessage, error) {
	f, err := c.waitFrame(ctx, id, method)
	if err != nil {
		return nil, err
	}
	if !f.OK {
		return nil, c.rpcErr(method, f.Error)
	}
	return f.Payload, nil
}

// call is send + wait + decode, retrying while the gateway says it is starting.
func (c *client) call(ctx context.Context, method string, params, out any) error {
	for {
		id, err := c.send(ctx, method, params)
		if err != nil {
			return err
		}
		p, err := c.wait(ctx, id, method)
		var ge *Error
		if errors.As(err, &ge) && ge.Kind == KindStarting {
			if retryWait(ctx, err) != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(p, out); err != nil {
			return gwErr(KindRefused, "", err, "gateway %s: malformed %s result: %v", c.ep.url, method, err)
		}
		return nil
	}
}

func (c *client) rpcErr(method string, e *rpcError) error {
	if e == nil {
		return gwErr(KindRefused, "", nil, "gateway %s refused %s without saying why", c.ep.url, method)
	}
	d := e.details()
	code := e.code()
	switch {
	case code == "MISSING_SCOPE":
		hint := ""
		if c.device == nil {
			hint = fmt.Sprintf(" (agentctl connected with the token only: it has no device identity at %s)", c.devPath)
		}
		return gwErr(KindScope, code, nil, "gateway refused %s: missing scope %s%s", method, d.MissingScope, hint)
	case e.Code == "UNAVAILABLE":
		return gwErr(KindStarting, code, &startingError{after: time.Duration(e.RetryAfterMs * float64(time.Millisecond))}, "gateway %s still starting%s; try again shortly", c.ep.url, reasonSuffix(d.Reason))
	}
	return gwErr(KindRefused, code, nil, "gateway %s refused %s: %s: %s", c.ep.url, method, codePair(e), oneLine(e.Message))
}

// close ends a connection that served its command: a polite 1000 close, cut
// short (by closing the socket under it) if the gateway does not answer it
// quickly or ctx ends first.
func (c *client) close(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.conn.Close(websocket.StatusNormalClosure, "")
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	case <-ctx.Done():
	}
	if nc := c.raw(); nc != nil {
		_ = nc.Close()
	}
	<-done
}

// abort drops the connection without a close handshake (error paths).
func (c *client) abort() {
	if c.conn != nil {
		_ = c.conn.CloseNow()
	}
}
