package e2e

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/e2e/synth"
)

// ccusageModel is a model both price tables know (agentctl's built-in table and
// ccusage's offline snapshot), so the cost estimates can be compared too.
const ccusageModel = "claude-sonnet-4-20250514"

// Token totals have a second reader that many Claude Code users check their
// bill with: ccusage. It groups by project directory and counts a message that
// several transcript lines (or a fork's copies) repeat once. So per project,
// agentctl's per-session tokens less what each session inherited from a fork
// parent (extra.tokens_inherited) must sum to ccusage's tokens, and the cost
// estimates likewise to ccusage's calculated cost, to the cent. Covered: a
// plain turn, a resumed session, a fork holding copies of its parent's turns
// (one project) and a thinking + tool turn whose three transcript lines share
// one usage (another project).
func TestClaudeTokensAndCostMatchCCUsage(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		model := []string{"--model", ccusageModel}
		dirA, dirB := harness.WorkDir(t, "billing"), harness.WorkDir(t, "billing-tools")
		plain, _ := c.Run(t, dirA, "say hi WORDS=6", model...)
		if resumed, _ := c.Run(t, dirA, "again WORDS=3", append([]string{"--resume", plain}, model...)...); resumed != plain {
			t.Fatalf("resume answered with %s, want %s", resumed, plain)
		}
		fork := uuid.NewString()
		c.Run(t, dirA, "forked", append([]string{"--resume", plain, "--fork-session", "--session-id", fork}, model...)...)
		tool, _ := c.Run(t, dirB, "THINK TOOLCMD: echo ccusage", append([]string{"--allowedTools", "Bash"}, model...)...)
		agent, _ := c.Run(t, harness.WorkDir(t, "billing-agents"), "AGENT: subagent task WORDS=4", append([]string{"--allowedTools", "Agent,Task"}, model...)...)

		if keys := compareWithCCUsage(t, harness.NewAgentctl(t, c.Home), c.Env, c.Home, true); len(keys) != 4 {
			t.Errorf("compared projects %v; want four (plain+resume+fork, tool, the Agent-tool run, ccusage's subagents)", keys)
		}
		_ = []string{plain, fork, tool, agent}
	})
}

// The recorded fixture home (real transcripts with a fork) and a generated
// home of 150 sessions in 3 projects (multi-block replies that repeat one usage
// on every line): the same comparison, tokens only where ccusage's offline table
// has no price for the model.
func TestRecordedAndGeneratedHomesMatchCCUsage(t *testing.T) {
	harness.Require(t)
	homes := map[string]func(home string) error{
		"recorded": func(home string) error { return os.CopyFS(home, os.DirFS("../testdata/home")) },
		"generated": func(home string) error {
			return synth.WriteClaudeHome(home, 150, 2<<10, 200<<10, 7)
		},
	}
	for name, fill := range homes {
		t.Run(name, func(t *testing.T) {
			home := harness.TempDir(t)
			if err := fill(home); err != nil {
				t.Fatal(err)
			}
			env := harness.BaseEnv(home, harness.TempDir(t))
			keys := compareWithCCUsage(t, harness.NewAgentctl(t, home), env, home, false)
			t.Logf("compared %d projects", len(keys))
			if len(keys) < 3 {
				t.Errorf("%s home: %d projects compared, want at least 3", name, len(keys))
			}
		})
	}
}

// compareWithCCUsage compares, per Claude project directory, agentctl's
// per-session figures less what each inherited from a fork parent with
// ccusage's totals, and returns the projects compared. Cost is compared where
// ccusage prices the model (always when needCost).
func compareWithCCUsage(t *testing.T, a *harness.Agentctl, env harness.Env, home string, needCost bool) []string {
	t.Helper()
	var list []struct {
		harness.Session
		CostUSD *float64 `json:"cost_usd"`
		Extra   struct {
			Inherited     *harness.Tokens `json:"tokens_inherited"`
			CostInherited float64         `json:"cost_inherited_usd"`
			Subagents     *harness.Tokens `json:"tokens_subagents"`
		} `json:"extra"`
	}
	a.JSON(t, &list, "list", "-a", "--since", "3650d", "--adapter", "claude-code") // ccusage reads every day; the recorded home is older than list's 7 days
	got := map[string]*ccusageTotals{}
	// A known convention difference: ccusage 18 names a project after the
	// directory a transcript is in, so every <session>/subagents/agent-*.jsonl
	// lands in one project called "subagents", while agentctl counts a
	// subagent in its session (extra.tokens_subagents says how much). Move
	// agentctl's subagent share there too; costs are then compared in total
	// and per project only where no subagent ran.
	const subagents = "subagents"
	var gotCost float64
	hasSub := map[string]bool{}
	add := func(key string, tok harness.Tokens, sign int64) {
		if got[key] == nil {
			got[key] = &ccusageTotals{}
		}
		g := got[key]
		g.Tokens.Input += sign * tok.Input
		g.Tokens.Output += sign * tok.Output
		g.Tokens.CacheRead += sign * tok.CacheRead
		g.Tokens.CacheWrite += sign * tok.CacheWrite
	}
	for _, s := range list {
		files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", s.ID+".jsonl"))
		if len(files) != 1 {
			t.Errorf("%s: %d transcripts named after it", s.ID, len(files))
			continue
		}
		key := filepath.Base(filepath.Dir(files[0]))
		if s.Tokens == nil {
			continue // nothing billed (ccusage lists no such project either)
		}
		add(key, *s.Tokens, 1)
		if in := s.Extra.Inherited; in != nil {
			add(key, *in, -1)
		}
		if sub := s.Extra.Subagents; sub != nil && *sub != (harness.Tokens{}) {
			add(key, *sub, -1)
			add(subagents, *sub, 1)
			hasSub[key] = true
		}
		if s.CostUSD != nil {
			got[key].Cost += *s.CostUSD - s.Extra.CostInherited
			gotCost += *s.CostUSD - s.Extra.CostInherited
		}
	}
	var compared []string
	var wantCost float64
	for key, w := range ccusageProjects(t, env, home) {
		wantCost += w.Cost
		g := got[key]
		switch {
		case g == nil:
			t.Errorf("ccusage has project %s, agentctl none", key)
			continue
		case g.Tokens != w.Tokens:
			t.Errorf("%s tokens: agentctl %+v, ccusage %+v", key, g.Tokens, w.Tokens)
		case w.Cost > 0 && !hasSub[key] && key != subagents && math.Abs(g.Cost-w.Cost) > 0.005:
			t.Errorf("%s cost: agentctl $%.6f, ccusage $%.6f", key, g.Cost, w.Cost)
		}
		if needCost && (w.Tokens.Output == 0 || w.Cost <= 0) {
			t.Errorf("%s: ccusage saw no output or priced it at 0; the comparison proves nothing", key)
		}
		compared = append(compared, key)
	}
	if wantCost > 0 && math.Abs(gotCost-wantCost) > 0.005 {
		t.Errorf("total cost: agentctl $%.6f, ccusage $%.6f", gotCost, wantCost)
	}
	for key, g := range got {
		if g.Tokens != (harness.Tokens{}) && !contains(compared, key) {
			t.Errorf("agentctl counts tokens in project %s (%+v), ccusage none", key, g.Tokens)
		}
	}
	return compared
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

type ccusageTotals struct {
	Tokens harness.Tokens
	Cost   float64
}

// ccusageProjects runs `ccusage session --json --offline --mode calculate`
// over the Claude home: totals per project directory name.
func ccusageProjects(t *testing.T, env harness.Env, home string) map[string]ccusageTotals {
	t.Helper()
	cmd := exec.Command(harness.Tool(t, "node24"), harness.Tool(t, "ccusage"),
		"session", "--json", "--offline", "--mode", "calculate", "--timezone", "UTC")
	cmd.Env = env.Merge(harness.Env{
		"CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude"),
		"NO_COLOR":          "1",
	}).List()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ccusage session: %v\n%s", err, out)
	}
	var r struct {
		Sessions []struct {
			Project    string  `json:"sessionId"`
			Input      int64   `json:"inputTokens"`
			Output     int64   `json:"outputTokens"`
			CacheWrite int64   `json:"cacheCreationTokens"`
			CacheRead  int64   `json:"cacheReadTokens"`
			Cost       float64 `json:"totalCost"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("ccusage session: unexpected output (%v):\n%s", err, out)
	}
	m := map[string]ccusageTotals{}
	for _, s := range r.Sessions {
		m[s.Project] = ccusageTotals{harness.Tokens{Input: s.Input, Output: s.Output, CacheRead: s.CacheRead, CacheWrite: s.CacheWrite}, s.Cost}
	}
	return m
}
