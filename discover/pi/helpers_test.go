package pi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// fixtureHome is the real pi 0.73.1 store copied from the shared fixtures.
const fixtureHome = "testdata/home"

// now is after every fixture timestamp (2026-11-20T21:43–21:50Z).
var now = time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC)

// testEnv builds an Env over home with an empty (but available) process table.
func testEnv(t *testing.T, home string, vars map[string]string) (*discover.Env, *[]string) {
	return discovertest.NewWarnEnv(home, vars, nil, now)
}

// msStart dates fake processes: their StartTicks are Unix milliseconds.
func msStart(p proc.Process) (time.Time, bool) {
	return time.UnixMilli(int64(p.StartTicks)).UTC(), true
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Builders for synthetic records in pi 0.73.1's shape.

func hdr(id, ts, cwd string) string {
	return mustJSON(map[string]any{"type": "session", "version": 3, "id": id, "timestamp": ts, "cwd": cwd})
}

func modelChange(id, parent, ts, provider, model string) string {
	return mustJSON(map[string]any{"type": "model_change", "id": id, "parentId": nullable(parent), "timestamp": ts, "provider": provider, "modelId": model})
}

// userMsg writes keys in pi's order (type, id, parentId, timestamp, message{role…}),
// which the big-line fast path relies on.
func userMsg(id, parent, ts string, content any) string {
	return `{"type":"message","id":` + mustJSON(id) + `,"parentId":` + mustJSON(nullable(parent)) +
		`,"timestamp":` + mustJSON(ts) + `,"message":{"role":"user","content":` + mustJSON(content) +
		`,"timestamp":` + mustJSON(msOf(ts)) + `}}`
}

func textBlocks(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }

func asstMsg(id, parent, ts, text, stop string, in, out int64, cost any) string {
	content := []map[string]any{}
	if text != "" {
		content = textBlocks(text)
	}
	m := map[string]any{"role": "assistant", "content": content, "api": "openai-completions", "provider": "fakeoai", "model": "fake-model",
		"usage":      map[string]any{"input": in, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": in + out, "cost": cost},
		"stopReason": stop, "timestamp": msOf(ts)}
	if stop == "error" {
		m["errorMessage"] = "Connection error."
	}
	return mustJSON(map[string]any{"type": "message", "id": id, "parentId": nullable(parent), "timestamp": ts, "message": m})
}

func costObj(total float64) map[string]any {
	return map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": total}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func msOf(ts string) int64 {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// simple writes a finished one-turn session file into dir with pi's file name.
func simple(t *testing.T, dir, id, start, cwd, prompt string) string {
	t.Helper()
	p := filepath.Join(dir, strings.NewReplacer(":", "-", ".", "-").Replace(start)+"_"+id+".jsonl")
	st := ts(start)
	at := func(d time.Duration) string { return st.Add(d).Format("2006-01-02T15:04:05.000Z") }
	discovertest.WriteLines(t, p,
		hdr(id, start, cwd),
		modelChange("aa000001", "", at(10*time.Millisecond), "fakeoai", "fake-model"),
		userMsg("aa000002", "aa000001", at(30*time.Millisecond), textBlocks(prompt)),
		asstMsg("aa000003", "aa000002", at(900*time.Millisecond), "FAKE-REPLY to: "+prompt, "stop", 123, 45, costObj(0.000213)),
	)
	return p
}

func launchRec(id, adapter, sessionID, cwd string, argv []string) meta.Launch {
	return meta.Launch{ID: id, Kind: "launch", Adapter: adapter, SessionID: sessionID, Cwd: cwd, Argv: argv,
		LaunchedAt: now.Add(-time.Hour)}
}

func configWithPrice(model string, in, out float64) *meta.Config {
	return &meta.Config{Prices: map[string]meta.Price{model: {Input: in, Output: out}}}
}

// summarize is the full forward pass over one file, without the index.
func summarize(path string) (*summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	s := &summary{}
	_, err = s.scanRange(f, st.Size(), discover.Budget{}, nil)
	return s, err
}
