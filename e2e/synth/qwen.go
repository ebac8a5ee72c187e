package synth

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WriteQwenHome writes n synthetic Qwen Code sessions under
// root/.qwen/projects/<sanitised cwd>/chats/<id>.jsonl in the shape Qwen Code
// 0.24 writes them (docs/agents/qwen.md, the shared recordings): per turn the
// prompt, an attribution snapshot, each request's `api_response` telemetry
// followed by the assistant record restating its usage, tool calls with their
// `tool_call` telemetry and `tool_result`, and after most replies the
// background memory extractor's request (a subagent's api_response). 1 in 20
// sessions ends in a failed request (`api_error` with status 429), 1 in 100
// carries tool results of hundreds of KB. Sessions spread over the 14 days
// before 2026-11-20T22:00Z across 40 projects. The same seed writes the same
// bytes.
func WriteQwenHome(root string, n int, seed int64) error {
	g := &piGen{r: rand.New(rand.NewSource(seed))}
	g.filler = g.text(64 << 10)
	projects := filepath.Join(root, ".qwen", "projects")
	anchor := time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		start := anchor.Add(-time.Duration(g.r.Int63n(int64(14 * 24 * time.Hour))))
		cwd := fmt.Sprintf("/home/dev/qproject-%02d", g.r.Intn(40))
		chats := filepath.Join(projects, strings.ReplaceAll(cwd, "/", "-"), "chats")
		if err := os.MkdirAll(chats, 0o755); err != nil {
			return err
		}
		if err := g.qwenSession(chats, cwd, start, i%20 == 3, i%100 == 7); err != nil {
			return err
		}
	}
	return nil
}

func (g *piGen) qwenSession(chats, cwd string, start time.Time, failed, big bool) error {
	id := g.uuid4()
	path := filepath.Join(chats, id+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := &piWriter{w: bufio.NewWriterSize(f, 256<<10), now: start}
	var parent any
	rec := func(typ string, fields map[string]any) {
		u := g.uuid4()
		r := map[string]any{"uuid": u, "parentUuid": parent, "sessionId": id, "timestamp": geminiTS(w.now), "type": typ,
			"cwd": cwd, "version": "0.24.4", "gitBranch": "main"}
		for k, v := range fields {
			r[k] = v
		}
		w.line(r)
		parent = u
	}
	telemetry := func(ev map[string]any) {
		ev["event.timestamp"] = geminiTS(w.now)
		rec("system", map[string]any{"provenance": "system", "subtype": "ui_telemetry", "systemPayload": map[string]any{"uiEvent": ev}})
	}
	prompts := 0
	apiResponse := func(promptID string, in, out int64, parts []map[string]any, sub bool) {
		w.now = w.now.Add(time.Duration(200+g.r.Intn(8000)) * time.Millisecond)
		resp := fmt.Sprintf("chatcmpl-%x", g.r.Uint64())
		ev := map[string]any{"event.name": "qwen-code.api_response", "response_id": resp, "model": "qwen3-coder-plus", "status_code": 200,
			"duration_ms": 100 + g.r.Intn(3000), "input_token_count": in, "output_token_count": out, "cached_content_token_count": in / 10,
			"thoughts_token_count": 0, "total_token_count": in + out, "prompt_id": promptID, "auth_type": "openai"}
		if sub {
			ev["subagent_name"] = "managed-auto-memory-extractor"
			ev["prompt_id"] = id + "#managed-auto-memory-extractor-" + fmt.Sprintf("%08x", g.r.Uint32()) + "#0"
			telemetry(ev)
			return
		}
		telemetry(ev)
		w.now = w.now.Add(10 * time.Millisecond)
		rec("assistant", map[string]any{"provenance": "assistant_output", "model": "qwen3-coder-plus", "message": map[string]any{"role": "model", "parts": parts},
			"usageMetadata": map[string]any{"promptTokenCount": in, "candidatesTokenCount": out, "thoughtsTokenCount": 0, "totalTokenCount": in + out,
				"cachedContentTokenCount": in / 10}, "contextWindowSize": 1000000})
	}
	turns := 1 + g.r.Intn(6)
	if big {
		turns = 8
	}
	for t := 0; t < turns; t++ {
		w.now = w.now.Add(time.Duration(1+g.r.Intn(600)) * time.Second)
		rec("user", map[string]any{"provenance": "real_user", "message": map[string]any{"role": "user", "parts": []map[string]any{{"text": g.words(4 + g.r.Intn(30))}}}})
		prompts++
		w.now = w.now.Add(50 * time.Millisecond)
		rec("system", map[string]any{"provenance": "system", "subtype": "attribution_snapshot", "systemPayload": map[string]any{"snapshot": map[string]any{
			"type": "attribution-snapshot", "version": 1, "surface": "cli", "fileStates": map[string]any{}, "promptCount": prompts, "promptCountAtLastCommit": 0}}})
		promptID := fmt.Sprintf("%s########%d", id, t)
		if failed && t == turns-1 {
			w.now = w.now.Add(2 * time.Second)
			telemetry(map[string]any{"event.name": "qwen-code.api_error", "model": "qwen3-coder-plus", "status_code": 429,
				"error_message": "429 You exceeded your current quota, please check your plan and billing details.", "error_type": "RateLimitError", "duration_ms": 120, "prompt_id": promptID, "auth_type": "openai"})
			break
		}
		if g.r.Intn(3) == 0 || big {
			callID := fmt.Sprintf("call_%x", g.r.Uint32())
			args := map[string]any{"command": "echo " + g.words(3)}
			apiResponse(promptID, 1000+int64(g.r.Intn(8000)), 20+int64(g.r.Intn(100)),
				[]map[string]any{{"functionCall": map[string]any{"id": callID, "name": "run_shell_command", "args": args}}}, false)
			out := g.words(20)
			if big {
				k := 256<<10 + g.r.Intn(256<<10)
				out = strings.Repeat(g.filler, k/len(g.filler)+1)[:k]
			}
			w.now = w.now.Add(time.Duration(50+g.r.Intn(3000)) * time.Millisecond)
			telemetry(map[string]any{"event.name": "qwen-code.tool_call", "call_id": callID, "function_name": "run_shell_command", "function_args": args,
				"duration_ms": 100, "status": "success", "success": true, "decision": "auto_accept", "prompt_id": promptID})
			rec("tool_result", map[string]any{"message": map[string]any{"role": "user", "parts": []map[string]any{{"functionResponse": map[string]any{
				"id": callID, "name": "run_shell_command", "response": map[string]any{"output": out}}}}},
				"toolCallResult": map[string]any{"callId": callID, "status": "success"}})
		}
		apiResponse(promptID, 2000+int64(g.r.Intn(20000)), 30+int64(g.r.Intn(800)), []map[string]any{{"text": g.words(10 + g.r.Intn(150))}}, false)
		if g.r.Intn(2) == 0 {
			apiResponse(promptID, 3000, 60, nil, true)
		}
	}
	return closeSynth(f, w, path)
}
