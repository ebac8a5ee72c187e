package stub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type event struct {
	name string
	data map[string]any
	raw  string
}

func post(t *testing.T, s *Server, path string, body any) (*http.Response, []event) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.URL()+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp, readSSE(t, resp)
}

func readSSE(t *testing.T, resp *http.Response) []event {
	t.Helper()
	var out []event
	var cur event
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			cur.name = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: "):
			cur.raw = strings.TrimPrefix(l, "data: ")
			json.Unmarshal([]byte(cur.raw), &cur.data)
		case l == "" && cur.raw != "":
			out = append(out, cur)
			cur = event{}
		}
	}
	return out
}

func names(evs []event) []string {
	var n []string
	for _, e := range evs {
		n = append(n, e.name)
	}
	return n
}

func anthropicBody(msgs ...any) map[string]any {
	return map[string]any{"model": "claude-opus-4-8", "stream": true, "messages": msgs,
		"tools": []any{map[string]any{"name": "Bash"}}}
}

func user(content any) map[string]any { return map[string]any{"role": "user", "content": content} }

func TestAnthropicTextStream(t *testing.T) {
	s := Start(t, nil)
	resp, evs := post(t, s, "/v1/messages?beta=true", anthropicBody(
		user([]any{
			map[string]any{"type": "text", "text": "<system-reminder>TOOLTEST HOLD=never</system-reminder>"},
			map[string]any{"type": "text", "text": "hello WORDS=3"},
		})))
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
		"content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if diff := cmp.Diff(want, names(evs)); diff != "" {
		t.Fatalf("event order (-want +got):\n%s", diff)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content-type %q", ct)
	}
	var text string
	for _, e := range evs {
		if d, ok := e.data["delta"].(map[string]any); ok && d["type"] == "text_delta" {
			text += d["text"].(string)
		}
	}
	if text != "FAKE-REPLY w2 w3" {
		t.Errorf("text %q", text)
	}
	ex := s.ModelExchanges(nil)
	if len(ex) != 1 {
		t.Fatalf("%d exchanges recorded", len(ex))
	}
	e := ex[0]
	if !e.Completed || e.Text != text || e.Request.LastUser != "hello WORDS=3" || e.Request.Model != "claude-opus-4-8" {
		t.Errorf("recorded %+v", e)
	}
	if resp.Header.Get("request-id") != e.RequestID {
		t.Errorf("request-id header %q, recorded %q", resp.Header.Get("request-id"), e.RequestID)
	}
	msg := evs[0].data["message"].(map[string]any)
	usage := msg["usage"].(map[string]any)
	if msg["id"] != e.MessageID || msg["model"] != "claude-opus-4-8" ||
		int64(usage["input_tokens"].(float64)) != e.Usage.Input ||
		int64(usage["cache_read_input_tokens"].(float64)) != e.Usage.CacheRead ||
		int64(usage["cache_creation_input_tokens"].(float64)) != e.Usage.CacheWrite {
		t.Errorf("message_start %s does not match the record %+v", evs[0].raw, e)
	}
	final := evs[len(evs)-2].data
	if int64(final["usage"].(map[string]any)["output_tokens"].(float64)) != e.Usage.Output ||
		final["delta"].(map[string]any)["stop_reason"] != "end_turn" {
		t.Errorf("message_delta %v", final)
	}
	if got := s.SentUsage(nil); got != e.Usage || got.Input == 0 || got.Output == 0 {
		t.Errorf("SentUsage %+v, exchange %+v", got, e.Usage)
	}
}

func TestAnthropicToolTurnWithThinking(t *testing.T) {
	s := Start(t, nil)
	_, evs := post(t, s, "/v1/messages", anthropicBody(user("THINK TOOLCMD: echo e2e")))
	var types []string
	var partial string
	for _, e := range evs {
		if e.name == "content_block_start" {
			types = append(types, e.data["content_block"].(map[string]any)["type"].(string))
		}
		if d, ok := e.data["delta"].(map[string]any); ok && d["type"] == "input_json_delta" {
			partial += d["partial_json"].(string)
		}
	}
	if diff := cmp.Diff([]string{"thinking", "text", "tool_use"}, types); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	var input map[string]string
	if err := json.Unmarshal([]byte(partial), &input); err != nil || input["command"] != "echo e2e" {
		t.Errorf("tool input %q: %v", partial, err)
	}
	if sr := evs[len(evs)-2].data["delta"].(map[string]any)["stop_reason"]; sr != "tool_use" {
		t.Errorf("stop_reason %v", sr)
	}
}

// Only the last user message counts: a tool result answers with its output even
// though an earlier prompt asked for a tool and a hold.
func TestScriptReadsLastUserMessageOnly(t *testing.T) {
	s := Start(t, nil)
	_, evs := post(t, s, "/v1/messages", anthropicBody(
		user("TOOLCMD: echo hi HOLD=never"),
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{}}}},
		map[string]any{"role": "system", "content": "injected"},
		user([]any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "hi\nmore"}}),
	))
	e := s.ModelExchanges(nil)[0]
	if !e.Request.ToolResult || e.Text != "tool said: hi" || e.Reply.Tool != nil || e.Reply.Hold != "" {
		t.Errorf("got reply %+v text %q", e.Reply, e.Text)
	}
	if len(evs) == 0 {
		t.Error("no stream")
	}
}

func TestResponsesStream(t *testing.T) {
	s := Start(t, nil)
	_, evs := post(t, s, "/v1/responses", map[string]any{"model": "fake-model", "stream": true,
		"tools": []any{map[string]any{"type": "function", "name": "exec_command"}},
		"input": []any{
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "<environment_context>TOOL</environment_context>"}}},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "Say hello"}}},
		}})
	want := []string{"response.created", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.delta", "response.output_text.done", "response.output_item.done", "response.completed"}
	if diff := cmp.Diff(want, names(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	for i, e := range evs {
		if int(e.data["sequence_number"].(float64)) != i+1 || e.data["type"] != e.name {
			t.Errorf("event %d: %s", i, e.raw)
		}
	}
	e := s.ModelExchanges(nil)[0]
	usage := evs[len(evs)-1].data["response"].(map[string]any)["usage"].(map[string]any)
	if int64(usage["input_tokens"].(float64)) != e.Usage.Input+e.Usage.CacheRead ||
		int64(usage["input_tokens_details"].(map[string]any)["cached_tokens"].(float64)) != e.Usage.CacheRead ||
		int64(usage["output_tokens"].(float64)) != e.Usage.Output {
		t.Errorf("usage %v, recorded %+v", usage, e.Usage)
	}
	if e.Text != "FAKE-REPLY to: Say hello" {
		t.Errorf("text %q", e.Text)
	}
}

func TestResponsesToolCallUsesOfferedTool(t *testing.T) {
	s := Start(t, nil)
	_, evs := post(t, s, "/v1/responses", map[string]any{"model": "fake-model", "stream": true,
		"tools": []any{map[string]any{"type": "function", "name": "exec_command"}},
		"input": []any{map[string]any{"role": "user", "content": "TOOLCMD: echo x"}}})
	item := evs[len(evs)-2].data["item"].(map[string]any)
	if item["type"] != "function_call" || item["name"] != "exec_command" || item["arguments"] != `{"cmd":"echo x"}` {
		t.Errorf("item %v", item)
	}
}

func chatBody(tools bool, msgs ...any) map[string]any {
	b := map[string]any{"model": "fake-model", "stream": true, "messages": msgs}
	if tools {
		b["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "bash"}}}
	}
	return b
}

func TestChatToolCallThenResult(t *testing.T) {
	s := Start(t, nil)
	_, evs := post(t, s, "/v1/chat/completions", chatBody(true,
		map[string]any{"role": "system", "content": "sys"}, user("TOOL please")))
	if last := evs[len(evs)-1].raw; last != "[DONE]" {
		t.Errorf("last chunk %q", last)
	}
	var finish any
	var args string
	for _, e := range evs {
		for _, c := range asSlice(e.data["choices"]) {
			ch := c.(map[string]any)
			if ch["finish_reason"] != nil {
				finish = ch["finish_reason"]
			}
			for _, tc := range asSlice(ch["delta"].(map[string]any)["tool_calls"]) {
				args += tc.(map[string]any)["function"].(map[string]any)["arguments"].(string)
			}
		}
	}
	if finish != "tool_calls" || args != `{"command":"echo hello-from-tool"}` {
		t.Errorf("finish %v args %q", finish, args)
	}
	usage := evs[len(evs)-2].data["usage"].(map[string]any)
	e := s.ModelExchanges(nil)[0]
	if int64(usage["prompt_tokens"].(float64)) != e.Usage.Input || int64(usage["completion_tokens"].(float64)) != e.Usage.Output {
		t.Errorf("usage chunk %v, recorded %+v", usage, e.Usage)
	}

	post(t, s, "/v1/chat/completions", chatBody(true, user("TOOL please"),
		map[string]any{"role": "assistant", "content": nil},
		map[string]any{"role": "tool", "content": "hello-from-tool\n"}))
	if e := s.ModelExchanges(nil)[1]; e.Text != "tool said: hello-from-tool" || e.Reply.Tool != nil {
		t.Errorf("follow-up %+v", e)
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// OpenClaw sends its internal context as a user message after the prompt; the
// keywords are in the prompt.
func TestChatSkipsOpenClawInternalContext(t *testing.T) {
	s := Start(t, nil)
	post(t, s, "/v1/chat/completions", chatBody(true,
		map[string]any{"role": "system", "content": "sys"},
		user("[Fri 2026-11-20 23:14 UTC] hello WORDS=3"),
		user([]any{map[string]any{"type": "text", "text": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nnone\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"}})))
	e := s.ModelExchanges(nil)[0]
	if e.Request.LastUser != "[Fri 2026-11-20 23:14 UTC] hello WORDS=3" || e.Text != Words(3) {
		t.Errorf("last user %q, reply %q", e.Request.LastUser, e.Text)
	}
}

// A request without tools (OpenCode's title generation) must not be held by a
// HOLD meant for the turn.
func TestAuxiliaryRequestIgnoresHold(t *testing.T) {
	s := Start(t, nil)
	done := make(chan struct{})
	go func() {
		post(t, s, "/v1/chat/completions", chatBody(false, user("title for: HOLD=turn")))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("auxiliary request was held")
	}
}

func TestHoldUntilRelease(t *testing.T) {
	s := Start(t, nil)
	done := make(chan []event)
	go func() {
		_, evs := post(t, s, "/v1/chat/completions", chatBody(true, user("busy HOLD=b1")))
		done <- evs
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitHeld(ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("answered before Release")
	case <-time.After(200 * time.Millisecond):
	}
	if e := s.ModelExchanges(nil)[0]; e.Completed || e.Status != 0 {
		t.Errorf("held exchange recorded as %+v", e)
	}
	s.Release("b1")
	select {
	case evs := <-done:
		if len(evs) == 0 {
			t.Error("empty stream after release")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not answered after Release")
	}
	if !s.ModelExchanges(nil)[0].Completed {
		t.Error("not completed after release")
	}
}

func TestErrorStatus(t *testing.T) {
	s := Start(t, nil)
	b, _ := json.Marshal(anthropicBody(user("fail STATUS=529")))
	resp, err := http.Post(s.URL()+"/v1/messages", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Type  string                `json:"type"`
		Error struct{ Type string } `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 529 || body.Type != "error" || body.Error.Type != "overloaded_error" {
		t.Errorf("status %d body %+v", resp.StatusCode, body)
	}
	if e := s.ModelExchanges(nil)[0]; e.Status != 529 || (e.Usage != Usage{}) {
		t.Errorf("recorded %+v", e)
	}
}

func TestDelayAndClientGoneMidStream(t *testing.T) {
	s := Start(t, nil)
	start := time.Now()
	post(t, s, "/v1/chat/completions", chatBody(true, user("SLEEP=300ms")))
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("answered after %s, want >= 300ms", d)
	}

	b, _ := json.Marshal(chatBody(true, user("STALL=10")))
	resp, err := http.Post(s.URL()+"/v1/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q", line)
	}
	resp.Body.Close() // the agent was killed mid-turn
	time.Sleep(300 * time.Millisecond)
	e := s.ModelExchanges(nil)[1]
	if e.Completed || e.Status != http.StatusOK {
		t.Errorf("abandoned stream recorded as %+v", e)
	}
	if got, want := s.SentUsage(nil), s.ModelExchanges(nil)[0].Usage; got != want {
		t.Errorf("SentUsage %+v counts the abandoned response; want %+v", got, want)
	}
}

func TestKeywords(t *testing.T) {
	tests := []struct {
		prompt string
		want   Reply
	}{
		{"plain", Reply{}},
		{"slow SLEEP=3", Reply{Delay: 3 * time.Second}},
		{"SLEEP=250ms STALL=1.5", Reply{Delay: 250 * time.Millisecond, Stall: 1500 * time.Millisecond}},
		{"busy HOLD=b-1.x", Reply{Hold: "b-1.x"}},
		{"STATUS=401", Reply{Status: 401}},
		{"TOOLTEST run", Reply{Tool: &ToolCall{Command: "echo hello-from-tool"}}},
		{"x\nTOOLCMD: echo v329 \nmore", Reply{Tool: &ToolCall{Command: "echo v329"}}},
		{"TOOLS are not a keyword", Reply{}},
		{"WORDS=2", Reply{Text: "FAKE-REPLY w2"}},
		{"THINK TOOL", Reply{Tool: &ToolCall{Command: "echo hello-from-tool"}, Thinking: "Thinking about: THINK TOOL", Text: "Running it now."}},
	}
	for _, tt := range tests {
		got := Keywords(&Request{LastUser: tt.prompt})
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Keywords(%q) (-want +got):\n%s", tt.prompt, diff)
		}
	}
	got := Keywords(&Request{ToolResult: true, ToolOutput: "Chunk ID: 1\nWall time: 0\nOutput:\nv329\n"})
	if got.Text != "tool said: v329" {
		t.Errorf("codex tool result reply %q", got.Text)
	}
}

func TestOtherEndpoints(t *testing.T) {
	s := Start(t, nil)
	resp, err := http.Get(s.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Data []struct{ ID string } }
	json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if len(m.Data) != 1 || m.Data[0].ID != "fake-model" {
		t.Errorf("models %+v", m)
	}
	if ex := s.Exchanges(); len(ex) != 1 || ex[0].Request.Path != "/v1/models" || ex[0].Request.API != "" {
		t.Errorf("recorded %+v", ex)
	}
}

// ESCALATE makes the shell call ask to leave the sandbox, which Codex must ask
// the user about (the approval e2e test relies on it).
func TestEscalateKeyword(t *testing.T) {
	rep := Keywords(&Request{LastUser: "ESCALATE TOOLCMD: touch x"})
	if rep.Tool == nil || !rep.Tool.Escalate || rep.Tool.Command != "touch x" {
		t.Fatalf("reply %+v; want an escalated tool call running touch x", rep.Tool)
	}
	name, args := shellCall([]string{"exec_command"}, *rep.Tool)
	if name != "exec_command" || !strings.Contains(string(args), `"sandbox_permissions":"require_escalated"`) {
		t.Errorf("call %s %s; want exec_command asking for require_escalated", name, args)
	}
	if _, args := shellCall([]string{"exec_command"}, ToolCall{Command: "ls"}); strings.Contains(string(args), "sandbox_permissions") {
		t.Errorf("a plain call asks for sandbox permissions: %s", args)
	}
}
