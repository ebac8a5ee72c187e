package stub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Gemini API as Gemini CLI calls it (docs/agents/gemini.md):
//
//	POST /v1beta/models/<model>:streamGenerateContent?alt=sse   a turn, SSE
//	POST /v1beta/models/<model>:generateContent                 side calls (the model
//	                                                           router), one JSON object
//	POST /v1beta/models/<model>:countTokens
//
// Side calls ask for JSON that fits responseJsonSchema (the router wants
// {complexity_reasoning, complexity_score}); they are answered with an object built from
// that schema, so the router picks a model and the turn goes on.

// geminiCall splits "/v1beta/models/gemini-2.5-flash:streamGenerateContent" into the
// model and the method; ok is false for any other path.
func geminiCall(path string) (model, method string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	if !ok {
		return "", "", false
	}
	model, method, ok = strings.Cut(rest, ":")
	return model, method, ok
}

type geminiPart struct {
	Text             string          `json:"text"`
	FunctionCall     json.RawMessage `json:"functionCall"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// isGeminiTurn is true for the two generate methods (not countTokens).
func isGeminiTurn(path string) bool {
	_, m, ok := geminiCall(path)
	return ok && (m == "generateContent" || m == "streamGenerateContent")
}

// parseGemini reads a generateContent body: the last user content decides the script;
// one holding a functionResponse is a tool result. The CLI's own context preamble
// (<session_context>) is not a prompt.
func parseGemini(r *Request, model, method string) {
	var b struct {
		Contents []struct {
			Role  string       `json:"role"`
			Parts []geminiPart `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	json.Unmarshal(r.Body, &b)
	r.Model, r.Stream = model, method == "streamGenerateContent"
	for _, t := range b.Tools {
		for _, f := range t.FunctionDeclarations {
			r.Tools = append(r.Tools, f.Name)
		}
	}
	for i := len(b.Contents) - 1; i >= 0; i-- {
		c := b.Contents[i]
		if c.Role != "user" {
			continue
		}
		var texts []string
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				r.ToolResult = true
				r.ToolOutput = geminiToolOutput(p.FunctionResponse.Response)
			}
			if p.Text != "" && !strings.HasPrefix(strings.TrimSpace(p.Text), "<session_context>") {
				texts = append(texts, p.Text)
			}
		}
		if r.ToolResult || len(texts) > 0 {
			r.LastUser = strings.Join(texts, "\n")
			return
		}
	}
}

// geminiToolOutput takes the shell output out of a functionResponse ("Output: hi\n…").
func geminiToolOutput(raw json.RawMessage) string {
	var v struct {
		Output string `json:"output"`
	}
	json.Unmarshal(raw, &v)
	s := v.Output
	if _, after, ok := strings.Cut(s, "Output: "); ok {
		s = after
	}
	return s
}

// geminiSchema is the part of a JSON schema the side calls use.
type geminiSchema struct {
	Type       any                     `json:"type"`
	Properties map[string]geminiSchema `json:"properties"`
	Enum       []any                   `json:"enum"`
	Items      *geminiSchema           `json:"items"`
}

// fill builds a value that fits s.
func (s geminiSchema) fill() any {
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	typ, _ := s.Type.(string)
	if l, ok := s.Type.([]any); ok && len(l) > 0 {
		typ, _ = l[0].(string)
	}
	switch strings.ToLower(typ) {
	case "object":
		m := map[string]any{}
		for k, p := range s.Properties {
			m[k] = p.fill()
		}
		return m
	case "array":
		return []any{}
	case "integer", "number":
		return 10 // the router reads complexity_score 10 as "use the strong model"
	case "boolean":
		return false
	}
	return "stub"
}

// geminiSideJSON answers a side call that asks for JSON, or "" when it asks for none.
func geminiSideJSON(body []byte) string {
	var b struct {
		GenerationConfig struct {
			ResponseJSONSchema *geminiSchema `json:"responseJsonSchema"`
			ResponseSchema     *geminiSchema `json:"responseSchema"`
			ResponseMimeType   string        `json:"responseMimeType"`
		} `json:"generationConfig"`
	}
	json.Unmarshal(body, &b)
	s := b.GenerationConfig.ResponseJSONSchema
	if s == nil {
		s = b.GenerationConfig.ResponseSchema
	}
	if s == nil {
		if b.GenerationConfig.ResponseMimeType == "application/json" {
			return "{}"
		}
		return ""
	}
	out, _ := json.Marshal(s.fill())
	return string(out)
}

func geminiUsage(u Usage) map[string]any {
	m := map[string]any{"promptTokenCount": u.Input + u.CacheRead, "candidatesTokenCount": u.Output,
		"totalTokenCount": u.Input + u.CacheRead + u.Output}
	if u.CacheRead > 0 {
		m["cachedContentTokenCount"] = u.CacheRead
	}
	return m
}

func (s *Server) writeGemini(ctx context.Context, w http.ResponseWriter, e *Exchange, rep Reply) error {
	seq := e.Request.Seq
	id := s.id("gemresp", seq)
	u := s.usage(e, rep)
	text := replyText(e, rep)
	if js := geminiSideJSON(e.Request.Body); js != "" && len(e.Request.Tools) == 0 {
		text = js
	}
	s.update(e, func(e *Exchange) {
		e.MessageID, e.RequestID, e.Text, e.Usage, e.Status = id, id, text, u, http.StatusOK
	})
	candidate := func(parts []any, finish string) map[string]any {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			c["finishReason"] = finish
		}
		return c
	}
	resp := func(parts []any, finish string, usage bool) map[string]any {
		r := map[string]any{"candidates": []any{candidate(parts, finish)}, "modelVersion": e.Request.Model, "responseId": id}
		if usage {
			r["usageMetadata"] = geminiUsage(u)
		}
		return r
	}
	var toolPart map[string]any
	if rep.Tool != nil {
		toolPart = map[string]any{"functionCall": map[string]any{"name": geminiTool(e.Request.Tools),
			"args": map[string]any{"command": rep.Tool.Command, "description": "e2e tool call"}}}
	}
	if !e.Request.Stream {
		parts := []any{}
		if text != "" {
			parts = append(parts, map[string]any{"text": text})
		}
		if toolPart != nil {
			parts = append(parts, toolPart)
		}
		w.Header().Set("Content-Type", "application/json")
		return s.run(ctx, e, []func() error{func() error {
			return json.NewEncoder(w).Encode(resp(parts, "STOP", true))
		}}, rep)
	}
	out := startSSE(w, id)
	var steps []func() error
	for _, c := range chunks(text) {
		steps = append(steps, func() error { return out.event("", resp([]any{map[string]any{"text": c}}, "", false)) })
	}
	if toolPart != nil {
		steps = append(steps, func() error { return out.event("", resp([]any{toolPart}, "", false)) })
	}
	// The last chunk carries finishReason and the usage, as the API sends them.
	steps = append(steps, func() error { return out.event("", resp([]any{map[string]any{"text": ""}}, "STOP", true)) })
	return s.run(ctx, e, steps, rep)
}

// geminiTool picks the shell tool Gemini CLI offered.
func geminiTool(tools []string) string {
	for _, t := range tools {
		if t == "run_shell_command" {
			return t
		}
	}
	return "run_shell_command"
}

// writeGeminiError answers with the Gemini API's own error shapes: a 429 carries a
// per-day QuotaFailure (terminal in Gemini CLI: no retries), a 401 UNAUTHENTICATED.
func writeGeminiError(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	e := map[string]any{"code": status, "message": fmt.Sprintf("stub error %d (scripted)", status), "status": "INTERNAL"}
	switch status {
	case http.StatusTooManyRequests:
		e["message"] = "You exceeded your current quota, please check your plan and billing details."
		e["status"] = "RESOURCE_EXHAUSTED"
		e["details"] = []any{map[string]any{
			"@type": "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []any{map[string]any{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":     "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}}}}
	case http.StatusUnauthorized:
		e["message"] = "API key not valid. Please pass a valid API key."
		e["status"] = "UNAUTHENTICATED"
	}
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}
