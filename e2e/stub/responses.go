package stub

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// parseResponses reads a Responses API body (docs/agents/codex.md §10). The last input item
// that is a user message or a function_call_output decides the script; Codex's
// injected <environment_context> user message comes before the prompt.
func parseResponses(r *Request) {
	var b struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Input  []json.RawMessage `json:"input"`
		Tools  []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(r.Body, &b)
	r.Model, r.Stream = b.Model, b.Stream
	for _, t := range b.Tools {
		if t.Name != "" {
			r.Tools = append(r.Tools, t.Name)
		} else {
			r.Tools = append(r.Tools, t.Type)
		}
	}
	for i := len(b.Input) - 1; i >= 0; i-- {
		var it struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			Output  json.RawMessage `json:"output"`
		}
		json.Unmarshal(b.Input[i], &it)
		switch {
		case strings.HasSuffix(it.Type, "call_output"):
			r.ToolResult = true
			r.ToolOutput = outputText(it.Output)
			return
		case it.Role == "user":
			r.LastUser = outputText(it.Content)
			return
		}
	}
}

// outputText reads a string or an array of {text} parts; Codex's
// function_call_output may also be a JSON object with an "output" string.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		var o struct {
			Output string `json:"output"`
		}
		if strings.HasPrefix(strings.TrimSpace(s), "{") && json.Unmarshal([]byte(s), &o) == nil && o.Output != "" {
			return o.Output
		}
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// shellCall builds a function call for whichever shell tool the agent offered.
func shellCall(tools []string, tc ToolCall) (name string, args []byte) {
	cmd := tc.Command
	esc := func(m map[string]any) map[string]any {
		if tc.Escalate {
			m["sandbox_permissions"] = "require_escalated"
			m["justification"] = "the stub asks to run this outside the sandbox"
		}
		return m
	}
	for _, t := range tools {
		switch t {
		case "exec_command":
			args, _ = json.Marshal(esc(map[string]any{"cmd": cmd}))
			return t, args
		case "shell_command":
			args, _ = json.Marshal(esc(map[string]any{"command": cmd}))
			return t, args
		case "shell":
			args, _ = json.Marshal(map[string]any{"command": []string{"bash", "-lc", cmd}})
			return t, args
		}
	}
	args, _ = json.Marshal(map[string]any{"command": []string{"bash", "-lc", cmd}})
	return "shell", args
}

func (s *Server) writeResponses(ctx context.Context, w http.ResponseWriter, e *Exchange, rep Reply) error {
	seq := e.Request.Seq
	respID, msgID := s.id("resp", seq), s.id("msg", seq)
	u := s.usage(e, rep)
	text := replyText(e, rep)
	model := e.Request.Model
	s.update(e, func(e *Exchange) {
		e.MessageID, e.RequestID, e.Text, e.Usage, e.Status = msgID, respID, text, u, http.StatusOK
	})
	out := startSSE(w, respID)
	n := 0
	ev := func(typ string, fields map[string]any) error {
		n++
		fields["type"] = typ
		fields["sequence_number"] = n
		return out.event(typ, fields)
	}
	created := time.Now().Unix()
	response := func(status string, output []any, usage any) map[string]any {
		return map[string]any{"id": respID, "object": "response", "created_at": created, "status": status,
			"model": model, "output": output, "usage": usage}
	}
	var items []any
	steps := []func() error{func() error {
		return ev("response.created", map[string]any{"response": response("in_progress", []any{}, nil)})
	}}
	idx := 0
	if text != "" {
		i := idx
		idx++
		item := map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "in_progress", "content": []any{}}
		done := map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
		items = append(items, done)
		steps = append(steps, func() error {
			if err := ev("response.output_item.added", map[string]any{"output_index": i, "item": item}); err != nil {
				return err
			}
			if err := ev("response.content_part.added", map[string]any{"item_id": msgID, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}); err != nil {
				return err
			}
			for _, c := range chunks(text) {
				if err := ev("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": i, "content_index": 0, "delta": c}); err != nil {
					return err
				}
			}
			if err := ev("response.output_text.done", map[string]any{"item_id": msgID, "output_index": i, "content_index": 0, "text": text}); err != nil {
				return err
			}
			return ev("response.output_item.done", map[string]any{"output_index": i, "item": done})
		})
	}
	if rep.Tool != nil {
		i := idx
		name, args := shellCall(e.Request.Tools, *rep.Tool)
		fcID, callID := s.id("fc", seq), s.id("call", seq)
		item := map[string]any{"type": "function_call", "id": fcID, "call_id": callID, "name": name, "arguments": "", "status": "in_progress"}
		done := map[string]any{"type": "function_call", "id": fcID, "call_id": callID, "name": name, "arguments": string(args), "status": "completed"}
		items = append(items, done)
		steps = append(steps, func() error {
			if err := ev("response.output_item.added", map[string]any{"output_index": i, "item": item}); err != nil {
				return err
			}
			if err := ev("response.function_call_arguments.delta", map[string]any{"item_id": fcID, "output_index": i, "delta": string(args)}); err != nil {
				return err
			}
			if err := ev("response.function_call_arguments.done", map[string]any{"item_id": fcID, "output_index": i, "arguments": string(args)}); err != nil {
				return err
			}
			return ev("response.output_item.done", map[string]any{"output_index": i, "item": done})
		})
	}
	steps = append(steps, func() error {
		return ev("response.completed", map[string]any{"response": response("completed", items, map[string]any{
			"input_tokens": u.Input + u.CacheRead, "input_tokens_details": map[string]any{"cached_tokens": u.CacheRead},
			"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": u.Input + u.CacheRead + u.Output,
		})})
	})
	return s.run(ctx, e, steps, rep)
}
