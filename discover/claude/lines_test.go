package claude

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Builders for synthetic transcript lines, shaped like Claude Code 2.1.197's.

func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func envelope(sid, cwd, ts string) string {
	return fmt.Sprintf(`"sessionId":%s,"cwd":%s,"timestamp":%s,"version":"2.1.197","gitBranch":"main","entrypoint":"sdk-cli","userType":"external"`, q(sid), q(cwd), q(ts))
}

func userPrompt(sid, cwd, ts, text string) string {
	return fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":%s},"uuid":"u-%s","permissionMode":"default","promptSource":"sdk",%s}`, q(text), ts, envelope(sid, cwd, ts))
}

func toolResult(sid, cwd, ts, toolID, output string, isErr bool) string {
	return fmt.Sprintf(`{"isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":%s,"type":"tool_result","content":%s,"is_error":%v}]},"toolUseResult":{"stdout":"","stderr":"","interrupted":false},"uuid":"r-%s",%s}`, q(toolID), q(output), isErr, ts, envelope(sid, cwd, ts))
}

func usageJSON(in, out, cw, cr int) string {
	return fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d,"cache_creation":{"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":0}}`, in, cw, cr, out, cw)
}

// assistantLine is one content block of a reply.
func assistantLine(sid, cwd, ts, msgID, reqID, model, block, stop, usage string) string {
	stopJSON := "null"
	if stop != "" {
		stopJSON = q(stop)
	}
	return fmt.Sprintf(`{"isSidechain":false,"message":{"id":%s,"type":"message","role":"assistant","model":%s,"content":[%s],"stop_reason":%s,"usage":%s},"requestId":%s,"type":"assistant","uuid":"a-%s-%s",%s}`,
		q(msgID), q(model), block, stopJSON, usage, q(reqID), msgID, ts, envelope(sid, cwd, ts))
}

func textBlock(s string) string { return `{"type":"text","text":` + q(s) + `}` }

func toolUseBlock(id, name, input string) string {
	return fmt.Sprintf(`{"type":"tool_use","id":%s,"name":%s,"input":%s}`, q(id), q(name), input)
}

func thinkingBlock(s string) string {
	return `{"type":"thinking","thinking":` + q(s) + `,"signature":"sig"}`
}

// writeTranscript writes lines (each ending in \n) to <home>/.claude/projects/<bucket>/<id>.jsonl.
func writeTranscript(t testing.TB, home, bucket, id string, lines ...string) string {
	t.Helper()
	p := filepath.Join(home, ".claude", "projects", bucket, id+".jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	body := ""
	if len(lines) > 0 {
		body = strings.Join(lines, "\n") + "\n"
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fixtureMtime, fixtureMtime); err != nil {
		t.Fatal(err)
	}
	return p
}
