package openclaw

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/gateway"
	"github.com/agentctl/agentctl/gateway/gatewaytest"
	"github.com/agentctl/agentctl/meta"
)

const goodToken = "tok-3f9a"

type testEnv struct {
	*discover.Env
	mu    sync.Mutex
	warns []string
}

func (e *testEnv) warnings() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.warns...)
}

func newEnv(t *testing.T, vars map[string]string) *testEnv {
	t.Helper()
	te := &testEnv{}
	base := &discover.Env{
		Home:     t.TempDir(),
		StateDir: t.TempDir(),
		Getenv:   func(k string) string { return vars[k] },
		Now:      time.Now,
	}
	te.Env = base.WithWarn(func(s string) {
		te.mu.Lock()
		te.warns = append(te.warns, s)
		te.mu.Unlock()
	})
	return te
}

func newAdapter(t *testing.T) *Adapter {
	return &Adapter{Version: "test", defaultURL: gatewaytest.ClosedURL(t)}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func writeDevice(t *testing.T, stateDir string) gateway.Device {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i + 1)
	}
	d := gateway.NewDevice(ed25519.NewKeyFromSeed(seed))
	b, err := gateway.EncodeDevice(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, gateway.DeviceFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

func gwErrKind(t *testing.T, err error, want gateway.Kind) *gateway.Error {
	t.Helper()
	var ge *gateway.Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v (%T) is not a gateway *Error", err, err)
	}
	if ge.Kind != want {
		t.Fatalf("error kind %d, want %d: %v", ge.Kind, want, err)
	}
	return ge
}

// manyRows makes n rows, each padded so that one 100-row page is over 1 MB: the
// client must raise coder/websocket's 32 KiB read limit.
func manyRows(n int) []map[string]any {
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = map[string]any{
			"key": fmt.Sprintf("agent:main:s%03d", i), "sessionId": fmt.Sprintf("uuid-%d", i), "agentId": "main",
			"status": "done", "hasActiveRun": false, "activeRunIds": []string{},
			"createdAt": 1795212363469, "updatedAt": 1795212369636,
			"lastMessagePreview": strings.Repeat("x", 12000),
		}
	}
	return rows
}

func TestDiscoverPaginatesAndMaps(t *testing.T) {
	rows := manyRows(250)
	// A real row (docs/agents/openclaw.md §3), done, with a device-signed connection.
	rows[0] = map[string]any{"key": "agent:main:task1", "sessionId": "3644c83f-45fb-4d83-b305-a4b7d0ba922c", "kind": "direct",
		"classification": "direct", "agentId": "main", "isMain": false, "createdVia": "operator",
		"createdAt": 1795212363469, "updatedAt": 1795212369636, "lastInteractionAt": 1795212363740,
		"status": "done", "startedAt": 1795212369292, "endedAt": 1795212369573, "runtimeMs": 281,
		"lastRunId": "1871d038-ee7f-4c37-af99-40a31379c315", "abortedLastRun": false,
		"hasActiveRun": false, "activeRunIds": []string{},
		"inputTokens": 123, "outputTokens": 45, "totalTokens": 123, "estimatedCostUsd": 0.000213,
		"modelProvider": "fakeoai", "model": "fake-model", "agentRuntime": map[string]any{"id": "openclaw"}, "contextTokens": 32000,
		"lastMessagePreview": "FAKE-REPLY to: hello", "parentSessionKey": "agent:main:main", "displayName": "task1",
		"archived": false, "pinned": false, "unread": true, "placement": map[string]any{"state": "local"}}
	// Updated long ago but running: status comes from the row, not its age.
	rows[1] = map[string]any{"key": "agent:main:busy", "status": "running", "hasActiveRun": true,
		"createdAt": 1, "updatedAt": 2, "lastRunId": "r1"}
	g := gatewaytest.New(t, &gatewaytest.Fake{Token: goodToken, Sessions: rows})
	env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL(), "OPENCLAW_GATEWAY_TOKEN": goodToken})
	dev := writeDevice(t, env.StateDir)

	ss, err := newAdapter(t).Discover(ctxFor(t, 10*time.Second), env.Env)
	if err != nil {
		t.Fatal(err)
	}
	if w := env.warnings(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}
	if len(ss) != 250 {
		t.Fatalf("got %d sessions, want 250 (all pages)", len(ss))
	}
	var offsets []any
	for _, p := range g.RequestsFor("sessions.list") {
		if d := cmp.Diff([]string{"includeLastMessage", "limit", "offset"}, slices.Sorted(maps.Keys(p))); d != "" {
			t.Errorf("sessions.list params (-want +got):\n%s", d)
		}
		offsets = append(offsets, p["offset"])
	}
	if d := cmp.Diff([]any{0.0, 100.0, 200.0}, offsets); d != "" {
		t.Errorf("sessions.list offsets (-want +got):\n%s", d)
	}
	if g.Conns != 1 {
		t.Errorf("%d connections, want one per command", g.Conns)
	}
	if st := g.CloseStatus(); st != 1000 {
		t.Errorf("client closed with status %d, want 1000", st)
	}
	cp := g.Connects[0]
	if cp["minProtocol"] != 4.0 || cp["maxProtocol"] != 4.0 {
		t.Errorf("connect protocol range %v..%v, want 4..4", cp["minProtocol"], cp["maxProtocol"])
	}
	if d := cmp.Diff([]any{"operator.read"}, cp["scopes"]); d != "" {
		t.Errorf("scopes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{dev.ID}, g.DevicesSeen); d != "" {
		t.Errorf("verified devices (-want +got):\n%s", d)
	}

	ms := func(v int64) *time.Time { t := time.UnixMilli(v).UTC(); return &t }
	want := discover.Session{
		ID: "agent:main:task1", Adapter: "openclaw", Status: "stopped", Evidence: "gateway", EvidenceDetail: "last run done",
		Model: "fakeoai/fake-model", Title: "task1", AgentVersion: "2026.9.6",
		StartedAt: ms(1795212363469), LastActivity: ms(1795212369573), EndedAt: ms(1795212369573),
		Extra: map[string]any{
			"gateway": g.URL(), "session_id": "3644c83f-45fb-4d83-b305-a4b7d0ba922c", "agent_id": "main", "kind": "direct",
			"run_status": "done", "last_run_id": "1871d038-ee7f-4c37-af99-40a31379c315", "parent_session_key": "agent:main:main",
			"last_message": "FAKE-REPLY to: hello", "last_run_tokens": map[string]int64{"input": 123, "output": 45},
			"last_run_cost_usd": 0.000213, "context_tokens": int64(32000),
		},
	}
	if d := cmp.Diff(want, ss[0]); d != "" {
		t.Errorf("task1 (-want +got):\n%s", d)
	}
	if ss[0].Tokens != nil || ss[0].CostUSD != nil || ss[0].Prompt != "" || ss[0].PID != 0 {
		t.Errorf("list must not present last-run tokens/cost as totals, nor a prompt or pid: %+v", ss[0])
	}
	busy := ss[1]
	if busy.Status != "running" || busy.EndedAt != nil || busy.Model != "fakeoai/default-model" {
		t.Errorf("busy: status %q ended %v model %q; want running, no end, the result's default model", busy.Status, busy.EndedAt, busy.Model)
	}
	if fi, _ := os.ReadDir(env.StateDir); len(fi) != 1 {
		t.Errorf("state dir has %d entries, want only the device file", len(fi))
	}
}

func TestRowStatus(t *testing.T) {
	tests := []struct {
		row          string
		status, what string
	}{
		{`{"hasActiveRun":true,"status":"running"}`, "running", "active run"},
		{`{"hasActiveRun":true}`, "running", "active run"},
		{`{"hasActiveRun":true,"status":"queued"}`, "running", "queued"},
		{`{"hasActiveRun":true,"status":"done","updatedAt":1}`, "running", "active run"},
		{`{"status":"running"}`, "running", "run status running"},
		{`{"status":"queued"}`, "running", "queued"},
		{`{"hasActiveRun":false,"status":"failed"}`, "failed", "last run failed"},
		{`{"hasActiveRun":false,"status":"timeout"}`, "failed", "last run timeout"},
		{`{"hasActiveRun":false,"status":"done","updatedAt":99999999999999}`, "stopped", "last run done"},
		{`{"hasActiveRun":false,"status":"killed","abortedLastRun":true}`, "stopped", "last run killed (aborted)"},
		{`{"hasActiveRun":false,"activeRunIds":[]}`, "stopped", "never run"},
		{`{"hasActiveRun":false,"archived":true}`, "stopped", "archived"},
		{`{"hasActiveRun":false,"status":"done","archived":true}`, "stopped", "last run done, archived"},
		{`{"status":"done"}`, "stopped", "last run done"},
		{`{"hasActiveRun":false,"status":"running"}`, "unknown", "gateway row says status running but hasActiveRun false"},
		{`{}`, "unknown", "gateway row has neither hasActiveRun nor status"},
		{`{"status":"mystery"}`, "unknown", "unknown run status mystery"},
	}
	for _, tt := range tests {
		var r row
		if err := json.Unmarshal([]byte(tt.row), &r); err != nil {
			t.Fatal(err)
		}
		st, what := rowStatus(r)
		if st != tt.status || what != tt.what {
			t.Errorf("%s → %s (%s), want %s (%s)", tt.row, st, what, tt.status, tt.what)
		}
	}
}

func chatRows() []map[string]any {
	return []map[string]any{
		{"role": "user", "content": "hello spec one", "timestamp": 1795212363515, "__openclaw": map[string]any{"id": "m1", "seq": 1}},
		{"role": "assistant", "content": []any{
			map[string]any{"type": "thinking", "thinking": "hmm"},
			map[string]any{"type": "text", "text": "Looking."},
			map[string]any{"type": "toolCall", "id": "call1", "name": "exec", "arguments": map[string]any{"command": "ls -la"}},
		}, "timestamp": 1795212364000, "usage": map[string]any{"input": 123, "output": 45, "cacheRead": 10, "cost": map[string]any{"total": 0.000213}},
			"__openclaw": map[string]any{"id": "m2", "seq": 2}},
		{"role": "toolResult", "toolCallId": "call1", "toolName": "exec", "content": []any{map[string]any{"type": "text", "text": "\ntotal 0\nfile"}},
			"isError": false, "timestamp": 1795212364500, "__openclaw": map[string]any{"id": "m3", "seq": 3}},
		{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "FAKE-REPLY to: hello"}}, "timestamp": 1795212369333,
			"usage": map[string]any{"input": 123, "output": 45, "cost": map[string]any{"total": 0.000213}}, "__openclaw": map[string]any{"id": "m4", "seq": 4}},
		{"role": "user", "content": "second", "timestamp": 1795212370000, "__openclaw": map[string]any{"id": "m5", "seq": 5}},
		{"role": "custom", "customType": "run-failed-before-reply", "display": true,
			"content": "This turn ended before a reply: aborted", "__openclaw": map[string]any{"runId": "idem-x-1", "seq": 6}},
		{"role": "assistant", "content": []any{}, "errorMessage": "model unreachable", "timestamp": 1795212371000, "__openclaw": map[string]any{"id": "m7", "seq": 7}},
	}
}

func TestPeek(t *testing.T) {
	g := gatewaytest.New(t, &gatewaytest.Fake{Token: goodToken, History: map[string][]map[string]any{"agent:main:task1": chatRows()}})
	env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL(), "OPENCLAW_GATEWAY_TOKEN": goodToken})
	a := newAdapter(t)
	s := discover.Session{ID: "agent:main:task1", Adapter: Name}

	all, err := a.Peek(ctxFor(t, 10*time.Second), env.Env, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		Kind, Text, ID string
		Tools          []discover.ToolCall
		IsError        bool
		Raw            int
	}
	var got []item
	for _, m := range all {
		got = append(got, item{m.Kind, m.Text, m.MessageID, m.Tools, m.IsError, len(m.Raw)})
	}
	want := []item{
		{"user", "hello spec one", "m1", nil, false, 1},
		{"assistant", "Looking.", "m2", []discover.ToolCall{{ID: "call1", Name: "exec", Summary: "ls -la", HasResult: true, Result: "total 0"}}, false, 2},
		{"assistant", "FAKE-REPLY to: hello", "m4", nil, false, 1},
		{"user", "second", "m5", nil, false, 1},
		{"system", "This turn ended before a reply: aborted", "seq-6", nil, false, 1},
		{"error", "model unreachable", "m7", nil, false, 1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("peek (-want +got):\n%s", d)
	}
	if !all[0].TS.Equal(time.UnixMilli(1795212363515)) {
		t.Errorf("ts %v", all[0].TS)
	}
	var raw map[string]any
	if err := json.Unmarshal(all[0].Raw[0], &raw); err != nil || raw["content"] != "hello spec one" {
		t.Errorf("raw %s, want the native record", all[0].Raw[0])
	}

	last2, err := a.Peek(ctxFor(t, 10*time.Second), env.Env, s, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(last2) != 2 || last2[0].Kind != "system" || last2[1].Kind != "error" {
		t.Errorf("peek -n 2: %+v", last2)
	}
	if p := g.RequestsFor("chat.history"); len(p) < 2 || p[1]["limit"] != 2.0 {
		t.Errorf("chat.history for n=2 sent %v, want limit 2", p)
	}

	_, err = a.Peek(ctxFor(t, 10*time.Second), env.Env, discover.Session{ID: "agent:main:nope"}, 5)
	if ge := gwErrKind(t, err, gateway.KindRefused); ge.Code != "SESSION_NOT_FOUND" {
		t.Errorf("code %q", ge.Code)
	}
}

// Paging counts from the newest end: 250 user messages need three pages, and
// a tool result whose call is on an older page must pull that page in.
func TestPeekPagesFromNewest(t *testing.T) {
	var hist []map[string]any
	for i := range 250 {
		hist = append(hist, map[string]any{"role": "user", "content": fmt.Sprintf("u%d", i), "__openclaw": map[string]any{"id": fmt.Sprint(i)}})
	}
	g := gatewaytest.New(t, &gatewaytest.Fake{History: map[string][]map[string]any{"k": hist}})
	env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL()})
	msgs, err := newAdapter(t).Peek(ctxFor(t, 10*time.Second), env.Env, discover.Session{ID: "k"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 250 || msgs[0].Text != "u0" || msgs[249].Text != "u249" {
		t.Fatalf("got %d messages, first %q", len(msgs), msgs[0].Text)
	}
	msgs, err = newAdapter(t).Peek(ctxFor(t, 10*time.Second), env.Env, discover.Session{ID: "k"}, 150)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 150 || msgs[0].Text != "u100" {
		t.Fatalf("n=150: got %d, first %q", len(msgs), msgs[0].Text)
	}
}

func TestDetailSumsHistory(t *testing.T) {
	rows := []map[string]any{{"key": "agent:main:task1", "hasActiveRun": false, "status": "done", "inputTokens": 123, "outputTokens": 45, "displayName": "probe1"},
		{"key": "agent:main:task10", "hasActiveRun": true}}
	g := gatewaytest.New(t, &gatewaytest.Fake{Token: goodToken, Sessions: rows, History: map[string][]map[string]any{"agent:main:task1": chatRows()}})
	env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL(), "OPENCLAW_GATEWAY_TOKEN": goodToken})
	s, err := newAdapter(t).Detail(ctxFor(t, 10*time.Second), env.Env, discover.Session{ID: "agent:main:task1", Group: "g-1"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(&discover.Tokens{Input: 246, Output: 90, CacheRead: 10}, s.Tokens); d != "" {
		t.Errorf("tokens (-want +got):\n%s", d)
	}
	if s.CostUSD == nil || fmt.Sprintf("%.6f", *s.CostUSD) != "0.000426" || s.CostSource != "agent" {
		t.Errorf("cost %v source %q", s.CostUSD, s.CostSource)
	}
	if s.Prompt != "hello spec one" || s.Title != "probe1" || s.Status != "stopped" || s.Group != "g-1" {
		t.Errorf("prompt %q title %q status %q group %q", s.Prompt, s.Title, s.Status, s.Group)
	}
	if p := g.RequestsFor("sessions.list"); len(p) != 1 || p[0]["search"] != "agent:main:task1" {
		t.Errorf("sessions.list %v", p)
	}
}

func TestWrongToken(t *testing.T) {
	g := gatewaytest.New(t, &gatewaytest.Fake{Token: goodToken})
	env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL(), "OPENCLAW_GATEWAY_TOKEN": "wrong"})
	ss, err := newAdapter(t).Discover(ctxFor(t, 10*time.Second), env.Env)
	ge := gwErrKind(t, err, gateway.KindAuth)
	want := fmt.Sprintf("gateway %s rejected the token from OPENCLAW_GATEWAY_TOKEN (AUTH_TOKEN_MISMATCH): set OPENCLAW_GATEWAY_TOKEN to its gateway.auth.token (or config adapters.openclaw.token)", g.URL())
	if err.Error() != want || ge.Code != "AUTH_TOKEN_MISMATCH" || ss != nil {
		t.Errorf("got %q\nwant %q", err, want)
	}
}

func TestConfigTokenNamedInError(t *testing.T) {
	g := gatewaytest.New(t, &gatewaytest.Fake{Token: goodToken})
	env := newEnv(t, nil)
	env.Config = &meta.Config{Adapters: map[string]meta.AdapterConfig{Name: {URL: strings.Replace(g.URL(), "ws://", "http://", 1), Token: "stale"}}}
	_, err := newAdapter(t).Discover(ctxFor(t, 10*time.Second), env.Env)
	gwErrKind(t, err, gateway.KindAuth)
	if !strings.Contains(err.Error(), "token from config adapters.openclaw.token (AUTH_TOKEN_MISMATCH)") {
		t.Errorf("%v", err)
	}
}

func TestNoToken(t *testing.T) {
	g := gatewaytest.New(t, &gatewaytest.Fake{Token: goodToken})
	env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL()})
	_, err := newAdapter(t).Discover(ctxFor(t, 10*time.Second), env.Env)
	gwErrKind(t, err, gateway.KindNoToken)
	if !strings.HasPrefix(err.Error(), "no token for gateway "+g.URL()+": set OPENCLAW_GATEWAY_TOKEN") {
		t.Errorf("%v", err)
	}
}

func TestProtocolMismatch(t *testing.T) {
	g := gatewaytest.New(t, &gatewaytest.Fake{Token: goodToken, Protocol: 5})
	env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL(), "OPENCLAW_GATEWAY_TOKEN": goodToken})
	_, err := newAdapter(t).Discover(ctxFor(t, 10*time.Second), env.Env)
	gwErrKind(t, err, gateway.KindProtocol)
	if !strings.HasPrefix(err.Error(), "gateway "+g.URL()+" speaks protocol 5, agentctl speaks 4 (PROTOCOL_MISMATCH)") ||
		strings.Contains(err.Error(), "unreachable") {
		t.Errorf("%v", err)
	}
}

func TestMissingMethodAndScope(t *testing.T) {
	g := gatewaytest.New(t, &gatewaytest.Fake{NoMethods: true})
	env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL()})
	_, err := newAdapter(t).Discover(ctxFor(t, 10*time.Second), env.Env)
	if gwErrKind(t, err, gateway.KindRefused); !strings.Contains(err.Error(), "has no sessions.list method") {
		t.Errorf("%v", err)
	}

	g = gatewaytest.New(t, &gatewaytest.Fake{MissingScope: "operator.read"})
	env = newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL()})
	_, err = newAdapter(t).Discover(ctxFor(t, 10*time.Second), env.Env)
	if gwErrKind(t, err, gateway.KindScope); !strings.HasPrefix(err.Error(), "gateway refused sessions.list: missing scope operator.read (agentctl connected with the token only") {
		t.Errorf("%v", err)
	}
}

func TestGatewayDown(t *testing.T) {
	url := gatewaytest.ClosedURL(t)
	env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": url})
	_, err := newAdapter(t).Discover(ctxFor(t, 10*time.Second), env.Env)
	gwErrKind(t, err, gateway.KindUnreachable)
	if !strings.HasPrefix(err.Error(), "cannot reach gateway "+url+": connection refused") {
		t.Errorf("%v", err)
	}

	// Only a token set: still configured, so the default URL's silence is news.
	a := newAdapter(t)
	env = newEnv(t, map[string]string{"OPENCLAW_GATEWAY_TOKEN": goodToken})
	if _, err := a.Discover(ctxFor(t, 10*time.Second), env.Env); err == nil || !strings.Contains(err.Error(), a.defaultURL+": connection refused") {
		t.Errorf("token set, nothing listening: %v", err)
	}
}

func TestNotConfigured(t *testing.T) {
	env := newEnv(t, nil)
	ss, err := newAdapter(t).Discover(ctxFor(t, 10*time.Second), env.Env)
	if ss != nil || err != nil {
		t.Errorf("got %v, %v; want nil, nil", ss, err)
	}
	if w := env.warnings(); len(w) > 0 {
		t.Errorf("warnings %q; an unconfigured user gets none", w)
	}
	if fi, _ := os.ReadDir(env.StateDir); len(fi) != 0 {
		t.Errorf("adapter wrote into the state dir")
	}
}

// A gateway that accepts TCP and never answers must not hold Discover past its
// deadline, at any step.
func TestHangingGatewayReturnsByDeadline(t *testing.T) {
	hangHello := gatewaytest.New(t, &gatewaytest.Fake{HangAfterHello: true})
	for name, url := range map[string]string{
		"tcp":         gatewaytest.SilentListener(t),
		"after hello": hangHello.URL(),
	} {
		t.Run(name, func(t *testing.T) {
			env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": url})
			start := time.Now()
			_, err := newAdapter(t).Discover(ctxFor(t, 300*time.Millisecond), env.Env)
			took := time.Since(start)
			if took > 450*time.Millisecond {
				t.Errorf("Discover took %v with a 300ms deadline", took)
			}
			gwErrKind(t, err, gateway.KindTimeout)
			// The budget is measured when the adapter starts: a hair under 300ms.
			if !regexp.MustCompile(`^gateway ` + regexp.QuoteMeta(url) + ` did not answer within (2[5-9]0|300)ms \(waiting for `).MatchString(err.Error()) {
				t.Errorf("%v", err)
			}
		})
	}
}

func TestStartingGatewayIsRetried(t *testing.T) {
	g := gatewaytest.New(t, &gatewaytest.Fake{Unavailable: 2, Sessions: manyRows(1)})
	env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL()})
	ss, err := newAdapter(t).Discover(ctxFor(t, 10*time.Second), env.Env)
	if err != nil || len(ss) != 1 || g.Conns != 3 {
		t.Errorf("got %d sessions, %v after %d connections", len(ss), err, g.Conns)
	}

	g = gatewaytest.New(t, &gatewaytest.Fake{Unavailable: 1000})
	env = newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL()})
	_, err = newAdapter(t).Discover(ctxFor(t, 300*time.Millisecond), env.Env)
	if gwErrKind(t, err, gateway.KindStarting); !strings.Contains(err.Error(), "still starting (startup-sidecars)") {
		t.Errorf("%v", err)
	}
}

func TestBadDeviceFileFallsBackToToken(t *testing.T) {
	g := gatewaytest.New(t, &gatewaytest.Fake{Token: goodToken, Sessions: manyRows(1)})
	env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL(), "OPENCLAW_GATEWAY_TOKEN": goodToken})
	if err := os.WriteFile(filepath.Join(env.StateDir, gateway.DeviceFile), []byte(`{"schema":1,"device_id":"ab","private_key":"AQID"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ss, err := newAdapter(t).Discover(ctxFor(t, 10*time.Second), env.Env)
	if err != nil || len(ss) != 1 {
		t.Fatalf("%v %v", ss, err)
	}
	if w := env.warnings(); len(w) != 1 || !strings.Contains(w[0], gateway.DeviceFile) || !strings.Contains(w[0], "token only") {
		t.Errorf("warnings %q", w)
	}
	if _, hasDev := g.Connects[0]["device"]; hasDev {
		t.Errorf("sent a device block from a broken identity file")
	}
}

// Issue 19: an assistant usage record with a negative or impossible count is left
// out of the detail's totals (never clamped) and named in a warning.
func TestDetailLeavesOutImpossibleUsage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage map[string]any
		bad   bool
	}{
		{"valid", map[string]any{"input": 1, "output": 2, "cost": map[string]any{"total": 1.0}}, false},
		{"negative input", map[string]any{"input": -1, "output": 2, "cost": map[string]any{"total": 1.0}}, true},
		{"negative cache read", map[string]any{"input": 1, "output": 2, "cacheRead": -3, "cost": map[string]any{"total": 1.0}}, true},
		{"over 10^9", map[string]any{"input": 1, "output": 1_000_000_001, "cost": map[string]any{"total": 1.0}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hist := append(chatRows(), map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "x"}},
				"timestamp": 1795212372000, "usage": tc.usage, "__openclaw": map[string]any{"id": "m8", "seq": 8}})
			rows := []map[string]any{{"key": "agent:main:task1", "hasActiveRun": false, "status": "done"}}
			g := gatewaytest.New(t, &gatewaytest.Fake{Token: goodToken, Sessions: rows, History: map[string][]map[string]any{"agent:main:task1": hist}})
			env := newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL(), "OPENCLAW_GATEWAY_TOKEN": goodToken})
			s, err := newAdapter(t).Detail(ctxFor(t, 10*time.Second), env.Env, discover.Session{ID: "agent:main:task1"})
			if err != nil {
				t.Fatal(err)
			}
			want, wantCost := &discover.Tokens{Input: 246, Output: 90, CacheRead: 10}, "0.000426"
			if !tc.bad {
				want, wantCost = &discover.Tokens{Input: 247, Output: 92, CacheRead: 10}, "1.000426"
			}
			if d := cmp.Diff(want, s.Tokens); d != "" {
				t.Errorf("tokens (-want +got):\n%s", d)
			}
			if s.CostUSD == nil || fmt.Sprintf("%.6f", *s.CostUSD) != wantCost {
				t.Errorf("cost %v, want %s", s.CostUSD, wantCost)
			}
			warned := strings.Contains(strings.Join(env.warnings(), "\n"),
				"session agent:main:task1: 1 usage record(s) with a negative or impossible token count left out of its totals")
			if warned != tc.bad {
				t.Errorf("warned %v, want %v: %q", warned, tc.bad, env.warnings())
			}
		})
	}
}

// Detail's fresh row replaces the listed one, but what the launch record added
// stays: a budget stop's exit_reason must reach `status`.
func TestMergeSessionKeepsLaunchFields(t *testing.T) {
	s := discover.Session{ID: "agent:main:x", LaunchID: "l-1", ExitReason: "budget:duration", Budget: &meta.Budget{MaxDurationSeconds: 5}, Status: "running"}
	mergeSession(&s, discover.Session{ID: "agent:main:x", Status: "stopped"})
	if s.Status != "stopped" || s.LaunchID != "l-1" || s.ExitReason != "budget:duration" || s.Budget == nil || s.Budget.MaxDurationSeconds != 5 {
		t.Errorf("merged: %+v", s)
	}
}
