package qwen

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

// TestIndexChangesNothing: with the parse index cold, warm, after lines are
// appended (one repeating an already counted response id) and after the file
// is rewritten, Discover says exactly what a run without the index says.
func TestIndexChangesNothing(t *testing.T) {
	home := t.TempDir()
	discovertest.CopyTree(t, fixtureHome, home)
	state := t.TempDir()
	check := func(step string) {
		t.Helper()
		cached, _ := testEnv(t, home, nil, nil)
		cached.StateDir = state
		plain, _ := testEnv(t, home, nil, nil)
		plain.NoCache = true
		want, got := discoverAll(t, New(), plain), discoverAll(t, New(), cached)
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: (-no index +index):\n%s", step, d)
		}
		if _, err := os.Stat(filepath.Join(state, "cache", Name+".index")); err != nil {
			t.Errorf("%s: no index written: %v", step, err)
		}
	}
	check("cold")
	check("warm")
	p := filepath.Join(home, ".qwen/projects/-home-dev-webapp/chats/5607b7d8-81ac-47ab-ad62-77346d688119.jsonl")
	dup := `{"uuid":"x1","sessionId":"5607b7d8-81ac-47ab-ad62-77346d688119","timestamp":"2026-12-01T22:40:00.000Z","type":"system","cwd":"/home/dev/webapp","subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_response","response_id":"chatcmpl-stub1006b478fa","model":"qwen3-coder-plus","input_token_count":1500,"output_token_count":60,"cached_content_token_count":200}}}`
	discovertest.AppendFile(t, p, dup+"\n"+prompt("01", "again")+"\n")
	check("appended")
	env, _ := testEnv(t, home, nil, nil)
	env.StateDir = state
	s := discoverAll(t, New(), env)["5607b7d8-81ac-47ab-ad62-77346d688119"]
	if d := cmp.Diff(&discover.Tokens{Input: 3599, Output: 130, CacheRead: 401}, s.Tokens); d != "" {
		t.Errorf("a repeated response id counted again after an append (-want +got):\n%s", d)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b[:len(b)/2+1], 0o600); err != nil { // rewritten shorter
		t.Fatal(err)
	}
	check("rewritten")
	if _, err := New().Find(context.Background(), env, discover.Query{Prefix: "5607"}); err != nil {
		t.Fatal(err)
	}
}
