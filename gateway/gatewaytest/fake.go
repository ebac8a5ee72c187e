// Package gatewaytest is a fake OpenClaw gateway for tests of the client and of
// its users: it listens on 127.0.0.1 and checks every frame agentctl sends.
package gatewaytest

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Fake speaks the gateway side of docs/agents/openclaw.md §2–5 as observed on
// OpenClaw 2026.9.6: challenge, connect (protocol range, token, optional signed
// device), hello-ok, sessions.list with offset paging, chat.history paged from
// the newest end. It checks what agentctl sends and records every violation in
// problems, which the tests assert is empty.
type Fake struct {
	Token    string
	Protocol int // the protocol this gateway speaks
	Sessions []map[string]any
	History  map[string][]map[string]any
	// behaviour switches
	Reorder        bool   // answer each pair of requests in reverse order
	HangAfterHello bool   // never answer a request after hello-ok
	Unavailable    int    // answer this many connects with UNAVAILABLE first
	MissingScope   string // refuse sessions.list with MISSING_SCOPE
	NoMethods      bool   // advertise no methods in hello-ok

	mu          sync.Mutex
	Conns       int
	Connects    []map[string]any
	requests    []map[string]any // every request after connect: method + params
	DevicesSeen []string         // verified device ids
	CloseCodes  []websocket.StatusCode
	Aborts      int // sessions.abort calls that ended an active run
	runs        int
	problems    []string
	srv         *httptest.Server
}

func New(t *testing.T, g *Fake) *Fake {
	t.Helper()
	if g.Protocol == 0 {
		g.Protocol = 4
	}
	g.srv = httptest.NewServer(g) // listens on 127.0.0.1
	t.Cleanup(func() {
		g.srv.CloseClientConnections()
		g.srv.Close()
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, p := range g.problems {
			t.Errorf("fake gateway: %s", p)
		}
	})
	return g
}

func (g *Fake) URL() string { return "ws://" + g.srv.Listener.Addr().String() }

func (g *Fake) problem(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.problems = append(g.problems, fmt.Sprintf(format, args...))
}

func (g *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 10) // the gateway's pre-hello cap
	ctx := r.Context()
	g.mu.Lock()
	g.Conns++
	n := g.Conns
	retry := n <= g.Unavailable
	g.mu.Unlock()

	nonce := fmt.Sprintf("c9e7f0cf-4195-4949-9d9d-%012d", n)
	ts := int64(1795212360620 + n)
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		return c.Write(ctx, websocket.MessageText, b) == nil
	}
	fail := func(id, code string, details map[string]any) {
		send(map[string]any{"type": "res", "id": id, "ok": false, "error": map[string]any{"code": code, "message": "refused by fake", "details": details}})
	}
	send(map[string]any{"type": "event", "event": "connect.challenge", "payload": map[string]any{"nonce": nonce, "ts": ts, "capabilities": []string{"model-catalog-snapshot"}}})

	req, ok := g.readReq(ctx, c)
	if !ok {
		return
	}
	if req.Method != "connect" {
		g.problem("first request is %q, want connect", req.Method)
		fail(req.ID, "INVALID_REQUEST", map[string]any{"code": "CONNECT_REQUIRED"})
		return
	}
	var p map[string]any
	_ = json.Unmarshal(req.Params, &p)
	g.mu.Lock()
	g.Connects = append(g.Connects, p)
	g.mu.Unlock()
	g.checkKeys("connect", p, "minProtocol", "maxProtocol", "client", "role", "scopes", "caps", "auth", "device")

	if retry {
		send(map[string]any{"type": "res", "id": req.ID, "ok": false, "error": map[string]any{"code": "UNAVAILABLE", "message": "starting", "retryable": true, "retryAfterMs": 30, "details": map[string]any{"reason": "startup-sidecars"}}})
		c.Close(websocket.StatusTryAgainLater, "starting")
		return
	}
	lo, _ := p["minProtocol"].(float64)
	hi, _ := p["maxProtocol"].(float64)
	if int(lo) > g.Protocol || int(hi) < g.Protocol {
		fail(req.ID, "INVALID_REQUEST", map[string]any{"code": "PROTOCOL_MISMATCH", "clientMinProtocol": lo, "clientMaxProtocol": hi, "expectedProtocol": g.Protocol, "minimumProbeProtocol": 3})
		c.Close(websocket.StatusProtocolError, "protocol mismatch")
		return
	}
	client, _ := p["client"].(map[string]any)
	if client["id"] != "cli" || client["mode"] != "cli" {
		g.problem("client id/mode %v/%v, want cli/cli", client["id"], client["mode"])
	}
	auth, _ := p["auth"].(map[string]any)
	tok, _ := auth["token"].(string)
	dev, hasDev := p["device"].(map[string]any)
	if hasDev {
		if code := g.verifyDevice(dev, p, tok, nonce, ts); code != "" {
			fail(req.ID, "INVALID_REQUEST", map[string]any{"code": code})
			c.Close(websocket.StatusPolicyViolation, "device auth")
			return
		}
	}
	if g.Token != "" && tok == "" && !hasDev {
		fail(req.ID, "NOT_PAIRED", map[string]any{"code": "DEVICE_IDENTITY_REQUIRED"})
		c.Close(websocket.StatusPolicyViolation, "device identity required")
		return
	}
	if g.Token != "" && tok != "" && tok != g.Token {
		fail(req.ID, "INVALID_REQUEST", map[string]any{"code": "AUTH_TOKEN_MISMATCH", "authReason": "token_mismatch", "canRetryWithDeviceToken": false})
		c.Close(websocket.StatusPolicyViolation, "unauthorized")
		return
	}
	methods := []string{"health", "sessions.list", "sessions.describe", "chat.history", "chat.send",
		"sessions.create", "sessions.send", "agent.wait", "sessions.abort"}
	if g.NoMethods {
		methods = []string{"health"}
	}
	send(map[string]any{"type": "res", "id": req.ID, "ok": true, "payload": map[string]any{
		"type": "hello-ok", "protocol": g.Protocol,
		"server":   map[string]any{"version": "2026.9.6", "connId": "x"},
		"features": map[string]any{"methods": methods, "events": []string{"tick"}},
		"snapshot": map[string]any{"padding": strings.Repeat("s", 16000)},
		"auth":     map[string]any{"method": "token", "role": "operator", "scopes": []string{"operator.read"}},
		"policy":   map[string]any{"maxPayload": 26214400, "maxBufferedBytes": 52428800, "tickIntervalMs": 30000},
	}})
	c.SetReadLimit(26214400)

	if g.HangAfterHello {
		<-ctx.Done()
		return
	}
	var held []wireReq
	for {
		req, ok := g.readReq(ctx, c)
		if !ok {
			return
		}
		if g.Reorder {
			held = append(held, req)
			if len(held) < 2 {
				continue
			}
		} else {
			held = []wireReq{req}
		}
		// An unsolicited event first: the client must skip it.
		send(map[string]any{"type": "event", "event": "tick", "payload": map[string]any{"ts": ts}, "seq": 1})
		for i := len(held) - 1; i >= 0; i-- {
			if !send(g.answer(held[i])) {
				return
			}
		}
		held = nil
	}
}

type wireReq struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func (g *Fake) readReq(ctx context.Context, c *websocket.Conn) (wireReq, bool) {
	_, b, err := c.Read(ctx)
	if err != nil {
		g.mu.Lock()
		g.CloseCodes = append(g.CloseCodes, websocket.CloseStatus(err))
		g.mu.Unlock()
		return wireReq{}, false
	}
	var r wireReq
	if err := json.Unmarshal(b, &r); err != nil || r.Type != "req" || r.ID == "" {
		g.problem("bad request frame %s", b)
		return wireReq{}, false
	}
	return r, true
}

// checkKeys enforces the gateway's closed schemas.
func (g *Fake) checkKeys(method string, p map[string]any, allowed ...string) bool {
	for k := range p {
		if !slices.Contains(allowed, k) {
			g.problem("%s: undocumented param %q", method, k)
			return false
		}
	}
	return true
}

// verifyDevice checks a device block the way the gateway does; "" means valid.
func (g *Fake) verifyDevice(dev, p map[string]any, token, nonce string, ts int64) string {
	pub, err := base64.RawURLEncoding.DecodeString(fmt.Sprint(dev["publicKey"]))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return "DEVICE_AUTH_PUBLIC_KEY_INVALID"
	}
	sum := sha256.Sum256(pub)
	id := hex.EncodeToString(sum[:])
	if dev["id"] != id {
		return "DEVICE_AUTH_DEVICE_ID_MISMATCH"
	}
	signedAt, _ := dev["signedAt"].(float64)
	if int64(signedAt) != ts {
		g.problem("device.signedAt %v, want the challenge ts %d", dev["signedAt"], ts)
		return "DEVICE_AUTH_SIGNATURE_EXPIRED"
	}
	if dev["nonce"] != nonce {
		return "DEVICE_AUTH_NONCE_MISMATCH"
	}
	client, _ := p["client"].(map[string]any)
	var scopes []string
	for _, s := range p["scopes"].([]any) {
		scopes = append(scopes, s.(string))
	}
	payload := fmt.Sprintf("v3|%s|%s|%s|%s|%s|%d|%s|%s|%s|", id, client["id"], client["mode"], p["role"],
		strings.Join(scopes, ","), ts, token, nonce, strings.ToLower(fmt.Sprint(client["platform"])))
	sig, err := base64.RawURLEncoding.DecodeString(fmt.Sprint(dev["signature"]))
	if err != nil || !ed25519.Verify(pub, []byte(payload), sig) {
		return "DEVICE_AUTH_SIGNATURE_INVALID"
	}
	g.mu.Lock()
	g.DevicesSeen = append(g.DevicesSeen, id)
	g.mu.Unlock()
	return ""
}

func (g *Fake) answer(req wireReq) map[string]any {
	var p map[string]any
	_ = json.Unmarshal(req.Params, &p)
	g.mu.Lock()
	g.requests = append(g.requests, map[string]any{"method": req.Method, "params": p})
	g.mu.Unlock()
	ok := func(payload any) map[string]any {
		return map[string]any{"type": "res", "id": req.ID, "ok": true, "payload": payload}
	}
	bad := func(code string, details map[string]any) map[string]any {
		return map[string]any{"type": "res", "id": req.ID, "ok": false, "error": map[string]any{"code": code, "message": "fake", "details": details}}
	}
	switch req.Method {
	case "sessions.list":
		if !g.checkKeys(req.Method, p, "limit", "offset", "search", "agentId", "activeOnly", "sortBy", "archived",
			"includeDerivedTitles", "includeLastMessage", "excludeSubagents", "excludeCron", "excludeSystem") {
			return bad("INVALID_REQUEST", nil)
		}
		if g.MissingScope != "" {
			return bad("FORBIDDEN", map[string]any{"code": "MISSING_SCOPE", "missingScope": g.MissingScope, "requiredScopes": []string{g.MissingScope}})
		}
		g.mu.Lock()
		rows := slices.Clone(g.Sessions)
		for i := range rows {
			rows[i] = maps.Clone(rows[i]) // runs change the rows under the lock
		}
		g.mu.Unlock()
		if s, _ := p["search"].(string); s != "" {
			rows = nil
			for _, r := range g.Sessions {
				if strings.Contains(fmt.Sprint(r["key"]), s) || strings.Contains(fmt.Sprint(r["displayName"]), s) {
					rows = append(rows, r)
				}
			}
		}
		limit, offset := intParam(p, "limit", 100), intParam(p, "offset", 0)
		end := min(offset+limit, len(rows))
		page := []map[string]any{}
		if offset < len(rows) {
			page = rows[offset:end]
		}
		var next any
		if end < len(rows) {
			next = end
		}
		return ok(map[string]any{"ts": 1, "path": "/x", "count": len(page), "totalCount": len(rows), "limitApplied": limit,
			"nextOffset": next, "hasMore": end < len(rows), "sessions": page,
			"defaults": map[string]any{"modelProvider": "fakeoai", "model": "default-model", "contextTokens": 32000}})
	case "chat.history":
		if !g.checkKeys(req.Method, p, "sessionKey", "limit", "offset", "maxChars", "cursor", "agentId") {
			return bad("INVALID_REQUEST", nil)
		}
		key, _ := p["sessionKey"].(string)
		msgs, found := g.History[key]
		if !found {
			return bad("INVALID_REQUEST", map[string]any{"code": "SESSION_NOT_FOUND"})
		}
		limit, offset := intParam(p, "limit", 200), intParam(p, "offset", 0)
		end := max(len(msgs)-offset, 0)
		start := max(end-limit, 0)
		res := map[string]any{"sessionKey": key, "messages": msgs[start:end], "hasMore": start > 0, "totalMessages": len(msgs),
			"deltaCursor": "c", "sessionInfo": map[string]any{"key": key}}
		if start > 0 {
			res["nextOffset"] = offset + (end - start)
		}
		return ok(res)
	}
	if a, handled := g.run(req.Method, p); handled {
		if a == nil {
			return bad("INVALID_REQUEST", nil)
		}
		return ok(a)
	}
	return bad("INVALID_REQUEST", map[string]any{"code": "UNKNOWN_METHOD"})
}

// run answers the run methods (docs/agents/openclaw.md §6): sessions.create and
// sessions.send start a run on the session, which stays active until
// sessions.abort ends it ("killed"); agent.wait waits for it at most a second
// per call, then answers "timeout" as the gateway does. A nil answer is
// INVALID_REQUEST (unknown keys).
func (g *Fake) run(method string, p map[string]any) (map[string]any, bool) {
	key, _ := p["key"].(string)
	switch method {
	case "sessions.create", "sessions.send":
		if !g.checkKeys(method, p, "key", "message", "idempotencyKey", "model") {
			return nil, true
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		g.runs++
		runID := fmt.Sprintf("run-%d", g.runs)
		row := map[string]any{"key": key, "sessionId": "sid-" + strings.ReplaceAll(key, ":", "-"), "status": "running",
			"hasActiveRun": true, "lastRunId": runID, "updatedAt": 1795212360620 + g.runs}
		i := slices.IndexFunc(g.Sessions, func(r map[string]any) bool { return r["key"] == key })
		if i < 0 {
			g.Sessions = append(g.Sessions, row)
		} else {
			g.Sessions[i] = row
		}
		return map[string]any{"key": key, "sessionId": row["sessionId"], "runStarted": true, "runId": runID, "status": "started"}, true
	case "agent.wait":
		if !g.checkKeys(method, p, "runId", "timeoutMs") {
			return nil, true
		}
		runID, _ := p["runId"].(string)
		for end := time.Now().Add(time.Second); ; {
			if !g.RunActive(runID) {
				return map[string]any{"runId": runID, "status": "ok"}, true
			}
			if time.Now().After(end) {
				return map[string]any{"runId": runID, "status": "timeout"}, true
			}
			time.Sleep(20 * time.Millisecond)
		}
	case "sessions.abort":
		if !g.checkKeys(method, p, "key", "runId") {
			return nil, true
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, r := range g.Sessions {
			if r["key"] == key && r["hasActiveRun"] == true {
				r["hasActiveRun"], r["status"] = false, "killed"
				g.Aborts++
				return map[string]any{"ok": true, "abortedRunId": r["lastRunId"], "status": "aborted"}, true
			}
		}
		return map[string]any{"ok": true, "aborted": false, "status": "no-active-run"}, true
	}
	return nil, false
}

// RunActive reports whether the run runID is still active.
func (g *Fake) RunActive(runID string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.Sessions {
		if r["lastRunId"] == runID {
			return r["hasActiveRun"] == true
		}
	}
	return false
}

// AbortCount is how many sessions.abort calls ended an active run.
func (g *Fake) AbortCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.Aborts
}

// closeStatus is how the client ended the last connection (-1: no close frame).
func (g *Fake) CloseStatus() websocket.StatusCode {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		g.mu.Lock()
		n := len(g.CloseCodes)
		var st websocket.StatusCode
		if n > 0 {
			st = g.CloseCodes[n-1]
		}
		g.mu.Unlock()
		if n > 0 {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
	return -2
}

func intParam(p map[string]any, k string, def int) int {
	if v, ok := p[k].(float64); ok {
		return int(v)
	}
	return def
}

func (g *Fake) RequestsFor(method string) []map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []map[string]any
	for _, r := range g.requests {
		if r["method"] == method {
			out = append(out, r["params"].(map[string]any))
		}
	}
	return out
}

// SilentListener accepts TCP connections and never says a word.
func SilentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "ws://" + ln.Addr().String()
}

// ClosedURL is a 127.0.0.1 port with nothing listening.
func ClosedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "ws://" + addr
}
