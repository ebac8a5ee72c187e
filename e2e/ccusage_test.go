package e2e

import (
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
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

		a := harness.NewAgentctl(t, c.Home)
		var list []struct {
			harness.Session
			CostUSD *float64 `json:"cost_usd"`
			Extra   struct {
				Inherited     *harness.Tokens `json:"tokens_inherited"`
				CostInherited float64         `json:"cost_inherited_usd"`
			} `json:"extra"`
		}
		a.JSON(t, &list, "list", "-a", "--adapter", "claude-code")
		got := map[string]*ccusageTotals{}
		project := map[string]string{plain: dirA, fork: dirA, tool: dirB}
		for _, s := range list {
			dir, ok := project[s.ID]
			if !ok {
				continue
			}
			delete(project, s.ID)
			key := filepath.Base(filepath.Dir(c.Transcript(dir, s.ID)))
			if got[key] == nil {
				got[key] = &ccusageTotals{}
			}
			g := got[key]
			if s.Tokens == nil || s.CostUSD == nil {
				t.Errorf("%s: no tokens or no cost (%+v, %v)", s.ID, s.Tokens, s.CostUSD)
				continue
			}
			own := *s.Tokens
			if s.ID == fork && (s.Extra.Inherited == nil || s.Extra.Inherited.Output == 0) {
				t.Errorf("fork %s: no tokens_inherited from its parent", s.ID)
			}
			if in := s.Extra.Inherited; in != nil {
				own.Input, own.Output, own.CacheRead, own.CacheWrite = own.Input-in.Input, own.Output-in.Output, own.CacheRead-in.CacheRead, own.CacheWrite-in.CacheWrite
			}
			g.Tokens.Input += own.Input
			g.Tokens.Output += own.Output
			g.Tokens.CacheRead += own.CacheRead
			g.Tokens.CacheWrite += own.CacheWrite
			g.Cost += *s.CostUSD - s.Extra.CostInherited
		}
		if len(project) != 0 {
			t.Fatalf("list -a misses sessions %v", project)
		}
		want := ccusageProjects(t, c)
		if len(want) != 2 {
			t.Errorf("ccusage saw %d projects, want 2: %+v", len(want), want)
		}
		for key, w := range want {
			g := got[key]
			switch {
			case g == nil:
				t.Errorf("ccusage has project %s, agentctl none", key)
			case g.Tokens != w.Tokens:
				t.Errorf("%s tokens: agentctl %+v, ccusage %+v", key, g.Tokens, w.Tokens)
			case math.Abs(g.Cost-w.Cost) > 0.005:
				t.Errorf("%s cost: agentctl $%.6f, ccusage $%.6f", key, g.Cost, w.Cost)
			}
			if w.Tokens.Output == 0 || w.Cost <= 0 {
				t.Errorf("%s: ccusage saw no output or priced %s at 0; the comparison proves nothing", key, ccusageModel)
			}
		}
	})
}

type ccusageTotals struct {
	Tokens harness.Tokens
	Cost   float64
}

// ccusageProjects runs `ccusage session --json --offline --mode calculate`
// over the Claude home: totals per project directory name.
func ccusageProjects(t *testing.T, c *harness.Claude) map[string]ccusageTotals {
	t.Helper()
	cmd := exec.Command(harness.Tool(t, "node24"), harness.Tool(t, "ccusage"),
		"session", "--json", "--offline", "--mode", "calculate", "--timezone", "UTC")
	cmd.Env = c.Env.Merge(harness.Env{
		"CLAUDE_CONFIG_DIR": filepath.Join(c.Home, ".claude"),
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
