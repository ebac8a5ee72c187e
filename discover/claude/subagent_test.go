package claude

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

// costState is a 2.1.329 cost-state record (Claude Code's running cost).
func costState(sid string, usd float64) string {
	return fmt.Sprintf(`{"type":"cost-state","sessionId":%q,"totalCostUSD":%v,"modelUsage":{}}`, sid, usd)
}

// subagentSession writes the worked example of a session that used the Agent
// tool: the parent's own replies total 53 in / 257 out / 65000 cache read / 811
// cache write, its subagent's 13/66/21500/37; Claude Code's own cost-state
// counts 66/323/86500/848 at opus-4-8 prices: (66·5 + 323·25 + 86500·0.5 +
// 848·6.25) / 1e6 = 0.056955 USD.
func subagentSession(t *testing.T, home string, withCostState bool) string {
	const sid, cwd = idA, "/w"
	ts := func(s string) string { return "2026-11-20T21:00:" + s + ".000Z" }
	lines := []string{
		userPrompt(sid, cwd, ts("00"), "use an agent"),
		assistantLine(sid, cwd, ts("01"), "m1", "r1", "claude-opus-4-8", toolUseBlock("t1", "Agent", `{"prompt":"look"}`), "tool_use", usageJSON(20, 100, 811, 30000)),
		toolResult(sid, cwd, ts("05"), "t1", "found it", false),
		assistantLine(sid, cwd, ts("06"), "m2", "r2", "claude-opus-4-8", textBlock("done"), "end_turn", usageJSON(33, 157, 0, 35000)),
	}
	if withCostState {
		lines = append(lines, costState(sid, 0.056955))
	}
	p := writeTranscript(t, home, "-w", sid, lines...)
	sub := filepath.Join(filepath.Dir(p), sid, "subagents", "agent-a1b2c3.jsonl")
	if err := os.MkdirAll(filepath.Dir(sub), 0o755); err != nil {
		t.Fatal(err)
	}
	side := func(l string) string { return strings.Replace(l, `"isSidechain":false`, `"isSidechain":true`, 1) }
	body := side(userPrompt(sid, cwd, ts("02"), "look")) + "\n" +
		side(assistantLine(sid, cwd, ts("03"), "s1", "rs1", "claude-opus-4-8", textBlock("found it"), "end_turn", usageJSON(13, 66, 37, 21500))) + "\n"
	if err := os.WriteFile(sub, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSubagentTokens: a session's tokens include its subagents' transcripts
// (tokens_subagents says how much), and equal Claude Code's own cost-state
// figure; the cost is Claude Code's.
func TestSubagentTokens(t *testing.T) {
	for _, withCS := range []bool{true, false} {
		t.Run(fmt.Sprintf("cost-state=%v", withCS), func(t *testing.T) {
			home := t.TempDir()
			subagentSession(t, home, withCS)
			env := newEnv(t, home, nil)
			got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
			if len(got) != 1 {
				t.Fatalf("%d sessions, want 1 (a subagent is not a session): %v", len(got), got)
			}
			s := got[idA]
			want := &discover.Tokens{Input: 66, Output: 323, CacheRead: 86500, CacheWrite: 848}
			if diff := cmp.Diff(want, s.Tokens); diff != "" {
				t.Errorf("tokens (-cost-state figure +got):\n%s", diff)
			}
			wantSub := discover.Tokens{Input: 13, Output: 66, CacheRead: 21500, CacheWrite: 37}
			if diff := cmp.Diff(map[string]any{"tokens_subagents": wantSub}, s.Extra); diff != "" {
				t.Errorf("extra (-want +got):\n%s", diff)
			}
			src := "estimate"
			if withCS {
				src = "agent"
			}
			if s.CostUSD == nil || math.Abs(*s.CostUSD-0.056955) > 1e-12 || s.CostSource != src {
				t.Errorf("cost %v %q, want 0.056955 %s", s.CostUSD, s.CostSource, src)
			}
		})
	}
}

// TestAgentCostState: the last cost-state record is the session's cost (it is
// cumulative across resumes) unless usage was written after it; then the cost is
// an estimate, or unknown without a price.
func TestAgentCostState(t *testing.T) {
	env := newEnv(t, copyHome(t), nil)
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	for id, want := range map[string]float64{
		"ff38fc66-0e6f-49a9-bddf-965cd7d30d7f": 0.00056, // resumed: the 2nd run's figure includes the 1st
		"d957d5fe-663c-4e98-a802-1b18889c112d": 0.00014, // costs are rounded to 1e-9 (discover.Cost)
	} {
		if s := got[id]; s.CostUSD == nil || *s.CostUSD != want || s.CostSource != "agent" {
			t.Errorf("%s: cost %v %q, want %v agent", id[:8], s.CostUSD, s.CostSource, want)
		}
	}
	if len(env.warnings) != 0 {
		t.Errorf("warnings %q, want none (claude-opus-5-5 needs no price with cost-state)", env.warnings)
	}

	// A reply after the last cost-state (a run killed before writing it): the
	// agent's figure is stale, and claude-opus-9-9 has no price.
	home := copyHome(t)
	p := filepath.Join(home, ".claude", "projects", "-home-dev-cli-tool", "ff38fc66-0e6f-49a9-bddf-965cd7d30d7f.jsonl")
	discovertest.AppendFile(t, p, assistantLine("ff38fc66-0e6f-49a9-bddf-965cd7d30d7f", "/home/dev/cli-tool", "2026-11-20T21:50:00.000Z",
		"late", "rlate", "claude-opus-9-9", textBlock("late"), "end_turn", usageJSON(1, 1, 0, 0))+"\n")
	env = newEnv(t, home, nil)
	s := discovertest.DiscoverAll(t, testAdapter(), env.Env)["ff38fc66-0e6f-49a9-bddf-965cd7d30d7f"]
	if s.CostUSD != nil || s.CostSource != "" {
		t.Errorf("usage after cost-state: cost %v %q, want none", *s.CostUSD, s.CostSource)
	}
	want := []string{"no price for model claude-opus-9-9; its sessions have no cost estimate (add it to `prices` in config.json)"}
	if diff := cmp.Diff(want, env.warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
