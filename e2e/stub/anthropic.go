package stub

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// parseAnthropic fills the request's model, tools and last user message from a
// Messages API body (docs/agents/claude-code.md §10.3). `messages` may contain role "system"
// entries, so nothing assumes alternation.
func parseAnthropic(r *Request) {
	var b struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(r.Body, &b)
	r.Model, r.Stream = b.Model, b.Stream
	r.SessionID = r.Header.Get("X-Claude-Code-Session-Id")
	for _, t := range b.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	for i := len(b.Messages) - 1; i >= 0; i-- {
		m := b.Messages[i]
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			r.LastUser = s
			return
		}
		var blocks []struct {
			Type    string          `json:"type"`
			Text    string          `json:"text"`
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal(m.Content, &blocks)
		var texts []string
		for _, bl := range blocks {
			switch bl.Type {
			case "tool_result":
				r.ToolResult = true
				r.ToolOutput = blockText(bl.Content)
			case "text":
				if !strings.HasPrefix(strings.TrimSpace(bl.Text), "<system-reminder>") {
					texts = append(texts, bl.Text)
				}
			}
		}
		r.LastUser = strings.Join(texts, "\n")
		return
	}
}

// blockText reads a tool_result content: a string or text blocks.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &blocks)
	var out []string
	for _, b := range blocks {
		out = append(out, b.Text)
	}
	return strings.Join(out, "\n")
}

// writeAnthropic streams a Messages API answer with the exact event sequence
// Claude Code was verified against; a non-streaming request gets one message.
func (s *Server) writeAnthropic(ctx context.Context, w http.ResponseWriter, e *Exchange, rep Reply) error {
	seq := e.Request.Seq
	msgID, reqID := s.id("msg", seq), s.id("req", seq)
	u := s.usage(e, rep)
	text := replyText(e, rep)
	model := e.Request.Model
	if model == "" {
		model = "claude-opus-4-8"
	}
	stop := "end_turn"
	var toolInput []byte
	toolName := "Bash"
	if rep.Tool != nil {
		stop = "tool_use"
		if rep.Tool.Name != "" {
			toolName = rep.Tool.Name
			toolInput, _ = json.Marshal(rep.Tool.Input)
		} else {
			toolInput, _ = json.Marshal(map[string]string{"command": rep.Tool.Command, "description": "Run the command the test asked for"})
		}
	}
	s.update(e, func(e *Exchange) {
		e.MessageID, e.RequestID, e.Text, e.Usage, e.Status = msgID, reqID, text, u, http.StatusOK
	})

	if !e.Request.Stream {
		var content []any
		if rep.Thinking != "" {
			content = append(content, map[string]any{"type": "thinking", "thinking": rep.Thinking, "signature": "c2ln"})
		}
		if text != "" {
			content = append(content, map[string]any{"type": "text", "text": text})
		}
		if rep.Tool != nil {
			content = append(content, map[string]any{"type": "tool_use", "id": s.id("toolu", seq), "name": toolName, "input": json.RawMessage(toolInput)})
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", reqID)
		return json.NewEncoder(w).Encode(map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model, "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": anthropicUsage(u, u.Output),
		})
	}

	out := startSSE(w, reqID)
	steps := []func() error{
		func() error {
			return out.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
				"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{},
				"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(u, 1),
			}})
		},
	}
	index := 0
	block := func(start map[string]any, deltas []map[string]any) {
		i := index
		index++
		steps = append(steps, func() error {
			if err := out.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start}); err != nil {
				return err
			}
			if i == 0 {
				if err := out.event("ping", map[string]any{"type": "ping"}); err != nil {
					return err
				}
			}
			for _, d := range deltas {
				if err := out.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}); err != nil {
					return err
				}
			}
			return out.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		})
	}
	if rep.Thinking != "" {
		block(map[string]any{"type": "thinking", "thinking": ""}, []map[string]any{
			{"type": "thinking_delta", "thinking": rep.Thinking},
			{"type": "signature_delta", "signature": "c3R1Yi1zaWduYXR1cmU="},
		})
	}
	if text != "" {
		var deltas []map[string]any
		for _, c := range chunks(text) {
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": c})
		}
		block(map[string]any{"type": "text", "text": ""}, deltas)
	}
	if rep.Tool != nil {
		half := len(toolInput) / 2
		block(map[string]any{"type": "tool_use", "id": s.id("toolu", seq), "name": toolName, "input": map[string]any{}},
			[]map[string]any{
				{"type": "input_json_delta", "partial_json": string(toolInput[:half])},
				{"type": "input_json_delta", "partial_json": string(toolInput[half:])},
			})
	}
	steps = append(steps, func() error {
		if err := out.event("message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": u.Output}}); err != nil {
			return err
		}
		return out.event("message_stop", map[string]any{"type": "message_stop"})
	})
	return s.run(ctx, e, steps, rep)
}

func anthropicUsage(u Usage, output int64) map[string]any {
	return map[string]any{
		"input_tokens": u.Input, "output_tokens": output,
		"cache_creation_input_tokens": u.CacheWrite, "cache_read_input_tokens": u.CacheRead,
		"cache_creation": map[string]any{"ephemeral_5m_input_tokens": u.CacheWrite, "ephemeral_1h_input_tokens": 0},
		"service_tier":   "standard",
	}
}
