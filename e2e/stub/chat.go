package stub

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// parseChat reads a Chat Completions body (docs/agents/opencode.md §10, docs/agents/pi.md §11). The last
// message that is a user message or a tool result decides the script (OpenClaw's
// internal-context message excepted).
func parseChat(r *Request) {
	var b struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	json.Unmarshal(r.Body, &b)
	r.Model, r.Stream = b.Model, b.Stream
	for _, t := range b.Tools {
		r.Tools = append(r.Tools, t.Function.Name)
	}
	for i := len(b.Messages) - 1; i >= 0; i-- {
		m := b.Messages[i]
		switch m.Role {
		case "tool":
			r.ToolResult = true
			r.ToolOutput = outputText(m.Content)
			return
		case "user":
			text := outputText(m.Content)
			if strings.HasPrefix(strings.TrimSpace(text), openClawContext) {
				continue // injected after the prompt, not typed by anyone
			}
			r.LastUser = text
			return
		}
	}
}

// openClawContext opens the user message OpenClaw sends after the real prompt
// (active exec sessions, subagents): the prompt is the user message before it.
const openClawContext = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"

// chatTool picks the shell tool the agent offered (pi and OpenCode: "bash";
// Qwen Code's TUI: "run_shell_command").
func chatTool(tools []string) string {
	for _, want := range []string{"bash", "exec", "shell", "Bash", "run_shell_command"} {
		for _, t := range tools {
			if t == want {
				return t
			}
		}
	}
	return "bash"
}

func (s *Server) writeChat(ctx context.Context, w http.ResponseWriter, e *Exchange, rep Reply) error {
	seq := e.Request.Seq
	id := s.id("chatcmpl", seq)
	u := s.usage(e, rep)
	text := replyText(e, rep)
	model := e.Request.Model
	if model == "" {
		model = "fake-model"
	}
	s.update(e, func(e *Exchange) {
		e.MessageID, e.RequestID, e.Text, e.Usage, e.Status = id, id, text, u, http.StatusOK
	})
	created := time.Now().Unix()
	if !e.Request.Stream {
		msg := map[string]any{"role": "assistant", "content": text}
		w.Header().Set("Content-Type", "application/json")
		return json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}, "usage": chatUsage(u)})
	}
	out := startSSE(w, id)
	chunk := func(choices []any, usage any) error {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		return out.event("", c)
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	steps := []func() error{func() error { return chunk(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil) }}
	for _, c := range chunks(text) {
		steps = append(steps, func() error { return chunk(delta(map[string]any{"content": c}, nil), nil) })
	}
	finish := "stop"
	if rep.Tool != nil {
		finish = "tool_calls"
		args, _ := json.Marshal(map[string]string{"command": rep.Tool.Command})
		name := chatTool(e.Request.Tools)
		callID := s.id("call", seq)
		steps = append(steps,
			func() error {
				return chunk(delta(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": callID, "type": "function",
					"function": map[string]any{"name": name, "arguments": ""}}}}, nil), nil)
			},
			func() error {
				return chunk(delta(map[string]any{"tool_calls": []any{map[string]any{"index": 0,
					"function": map[string]any{"arguments": string(args)}}}}, nil), nil)
			})
	}
	steps = append(steps,
		func() error { return chunk(delta(map[string]any{}, finish), nil) },
		// Without this usage chunk pi records zero usage.
		func() error { return chunk([]any{}, chatUsage(u)) },
		func() error { return out.event("", "[DONE]") })
	return s.run(ctx, e, steps, rep)
}

func chatUsage(u Usage) map[string]any {
	m := map[string]any{"prompt_tokens": u.Input + u.CacheRead, "completion_tokens": u.Output,
		"total_tokens": u.Input + u.CacheRead + u.Output}
	if u.CacheRead > 0 {
		m["prompt_tokens_details"] = map[string]any{"cached_tokens": u.CacheRead}
	}
	return m
}
