package gemini

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/google/go-cmp/cmp"
)

// TestFixtureManifest lists the real recordings with nothing alive and checks
// each session against testdata/manifest.json. The expected values are copied
// by hand from the manifest (ids, cwd, model, prompt, tokens as the stub sent
// them, status, times), not from this adapter's output.
func TestFixtureManifest(t *testing.T) {
	type want struct {
		cwd, model      string
		models          []string
		prompt          string
		prompts         int
		tokens          discover.Tokens
		status          string
		blocked         string
		started, active string
		file            string
	}
	wants := map[string]want{
		"999d3fa3-181d-4a9e-ba28-f8186303f5b8": { // E: TUI, killed with SIGKILL after its answer
			cwd: "/home/dev/webapp", model: "gemini-2.5-flash", models: []string{"gemini-2.5-flash"},
			prompt: "explain the build layout", prompts: 1,
			tokens: discover.Tokens{Input: 1108, Output: 23, CacheRead: 3}, status: "stopped",
			started: "2026-12-01T22:25:32.752Z", active: "2026-12-01T22:26:04.467Z",
			file: ".gemini/tmp/webapp/chats/session-2026-12-01T22-25-999d3fa3.jsonl",
		},
		"6d0b6f17-1e24-4526-8c25-82661f8c77ea": { // A: headless one-shot
			cwd: "/home/dev/webapp", model: "gemini-2.5-flash", models: []string{"gemini-2.5-flash"},
			prompt: "list the TODO comments in main.go", prompts: 1,
			tokens: discover.Tokens{Input: 1227, Output: 59, CacheRead: 7}, status: "stopped",
			started: "2026-12-01T22:26:39.049Z", active: "2026-12-01T22:26:39.269Z",
			file: ".gemini/tmp/webapp/chats/session-2026-12-01T22-26-6d0b6f17.jsonl",
		},
		"2c5c07cf-074c-4de6-80ef-3dce625272da": { // B1 + B2: resumed with a tool call
			cwd: "/home/dev/webapp", model: "gemini-3.8-flash", models: []string{"gemini-3.8-flash"},
			prompt: "summarise the README for a new contributor", prompts: 2,
			tokens: discover.Tokens{Input: 8499, Output: 138, CacheRead: 501}, status: "stopped",
			started: "2026-12-01T22:26:48.702Z", active: "2026-12-01T22:26:58.947Z",
			file: ".gemini/tmp/webapp/chats/session-2026-12-01T22-26-2c5c07cf.jsonl",
		},
		"542d084f-34b7-4b9d-93c9-3b8752e98320": { // C: 429; blocked_reason not required (not on disk)
			cwd: "/home/dev/billing", prompt: "fix the invoice rounding bug", prompts: 1,
			status: "failed", started: "2026-12-01T22:27:07.362Z", active: "2026-12-01T22:27:07.422Z",
			file: ".gemini/tmp/billing/chats/session-2026-12-01T22-27-542d084f.jsonl",
		},
		"f1606cce-b2a0-42e1-bd32-3f7bdf956e2f": { // D: 401; blocked_reason not required (not on disk)
			cwd: "/home/dev/infra", prompt: "deploy the staging stack", prompts: 1,
			status: "failed", started: "2026-12-01T22:27:15.434Z", active: "2026-12-01T22:27:15.547Z",
			file: ".gemini/tmp/infra/chats/session-2026-12-01T22-27-f1606cce.jsonl",
		},
	}
	env, warns := testEnv(t, fixtureHome, nil)
	got := discoverAll(t, env)
	if len(got) != len(wants) {
		t.Errorf("got %d sessions, want %d", len(got), len(wants))
	}
	for id, w := range wants {
		s, ok := got[id]
		if !ok {
			t.Errorf("session %s missing", id)
			continue
		}
		type view struct {
			Adapter, Cwd, Model, Prompt, Status, Evidence, Blocked, Path string
			Models                                                       []string
			Prompts                                                      any
			Tokens                                                       discover.Tokens
			Started, Active, Ended                                       string
			PID                                                          int
		}
		g := view{Adapter: s.Adapter, Cwd: s.Cwd, Model: s.Model, Prompt: s.Prompt, Status: s.Status,
			Evidence: s.Evidence, Blocked: s.BlockedReason, Path: s.Path, Models: s.Models,
			Prompts: s.Extra["user_prompts"], PID: s.PID}
		if s.Tokens != nil {
			g.Tokens = *s.Tokens
		}
		f := func(p interface{ String() string }) string { return p.String() }
		if s.StartedAt != nil {
			g.Started = f(s.StartedAt)
		}
		if s.LastActivity != nil {
			g.Active = f(s.LastActivity)
		}
		if s.EndedAt != nil {
			g.Ended = f(s.EndedAt)
		}
		e := view{Adapter: "gemini", Cwd: w.cwd, Model: w.model, Prompt: w.prompt, Status: w.status,
			Evidence: discover.EvidenceTranscript, Blocked: w.blocked, Path: filepath.Join(fixtureHome, w.file),
			Models: w.models, Prompts: w.prompts, Tokens: w.tokens,
			Started: tp(w.started).String(), Active: tp(w.active).String(), Ended: tp(w.active).String()}
		if s.Tokens != nil && s.Slots.Sum() != *s.Tokens {
			t.Errorf("session %s: slots sum to %+v, tokens %+v", id, s.Slots.Sum(), *s.Tokens)
		}
		if diff := cmp.Diff(e, g); diff != "" {
			t.Errorf("session %s (-want +got):\n%s", id, diff)
		}
	}
	if len(*warns) > 0 {
		t.Errorf("warnings: %q", *warns)
	}
}

// TestFixtureCost: a session on a model of the built-in table is priced from its
// tokens (computed here by hand from prices.go's published figures), one on a
// model the table lacks is not (the usage UNPRICED column counts it).
func TestFixtureCost(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	got := discoverAll(t, env)
	// E: gemini-2.5-flash, 1108 input, 23 output, 3 cache read.
	e := got["999d3fa3-181d-4a9e-ba28-f8186303f5b8"]
	want := (1108*0.30 + 23*2.50 + 3*0.03) / 1e6
	if e.CostUSD == nil || math.Abs(*e.CostUSD-want) > 1e-12 {
		t.Errorf("cost of E = %v, want %.9f", e.CostUSD, want)
	}
	// B: gemini-3.8-flash has no public price in the table.
	if b := got["2c5c07cf-074c-4de6-80ef-3dce625272da"]; b.CostUSD != nil {
		t.Errorf("cost of B (gemini-3.8-flash) = %v, want none", *b.CostUSD)
	}
}
