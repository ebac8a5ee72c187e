package e2e

import (
	"bytes"
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/e2e/harness"
)

// ccusage 20 reads Gemini CLI, Qwen Code and Copilot CLI sessions too: an
// independent reader of the same files. Its conventions differ from agentctl's in
// documented ways, each applied here as a rule, never as a tolerance:
//   - Copilot: the same four classes; every session ccusage lists must match exactly.
//   - Qwen: ccusage counts the main turns only (not the memory extractor, which
//     agentctl reports as extra.tokens_subagents) and its input includes the cached
//     prompt tokens: input = main input + main cache read.
//   - Gemini: input and cache read as agentctl; its output leaves the thinking tokens
//     out (agentctl counts them as output), but its cost bills them, so for a model
//     both price, the costs are equal.
// ccusage lists only sessions with usage; agentctl must list every one of them.

type ccuSession struct {
	SessionID           string  `json:"sessionId"`
	InputTokens         int64   `json:"inputTokens"`
	OutputTokens        int64   `json:"outputTokens"`
	CacheReadTokens     int64   `json:"cacheReadTokens"`
	CacheCreationTokens int64   `json:"cacheCreationTokens"`
	TotalCost           float64 `json:"totalCost"`
}

type ctlSession struct {
	ID     string         `json:"id"`
	Tokens harness.Tokens `json:"tokens"`
	Cost   *float64       `json:"cost_usd"`
	Extra  struct {
		TokensSubagents *harness.Tokens `json:"tokens_subagents"`
	} `json:"extra"`
}

func ccusageSessions(t *testing.T, agent, home string) []ccuSession {
	t.Helper()
	bin := harness.Tool(t, "ccusage20")
	cmd := exec.Command(bin, agent, "session", "--json", "--offline")
	cmd.Env = harness.BaseEnv(home, t.TempDir()).List()
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ccusage %s session: %v\n%s\n%s", agent, err, out, errOut.String())
	}
	var r struct {
		Sessions []ccuSession `json:"sessions"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("ccusage %s: %v\n%s\n%s", agent, err, out, errOut.String())
	}
	if len(r.Sessions) == 0 {
		t.Logf("ccusage %s session --json listed nothing; stdout:\n%s\nstderr:\n%s", agent, out, errOut.String())
	}
	return r.Sessions
}

// ccusageAgrees compares agentctl's view of home with ccusage's, by the rules above.
func ccusageAgrees(t *testing.T, ccuAgent, adapter, home string) {
	t.Helper()
	a := harness.NewAgentctl(t, home)
	var ss []ctlSession
	a.JSON(t, &ss, "list", "-a", "--since", "3650d", "--adapter", adapter)
	byID := map[string]ctlSession{}
	for _, s := range ss {
		byID[s.ID] = s
	}
	cs := ccusageSessions(t, ccuAgent, home)
	if len(cs) == 0 {
		t.Fatalf("ccusage %s lists no session in %s: nothing compared", ccuAgent, home)
	}
	for _, c := range cs {
		s, ok := byID[c.SessionID]
		if !ok {
			t.Errorf("%s: ccusage lists %s, agentctl does not", ccuAgent, c.SessionID)
			continue
		}
		got, want := s.Tokens, harness.Tokens{Input: c.InputTokens, Output: c.OutputTokens, CacheRead: c.CacheReadTokens, CacheWrite: c.CacheCreationTokens}
		switch ccuAgent {
		case "qwen":
			if sub := s.Extra.TokensSubagents; sub != nil {
				got = harness.Tokens{Input: got.Input - sub.Input, Output: got.Output - sub.Output,
					CacheRead: got.CacheRead - sub.CacheRead, CacheWrite: got.CacheWrite - sub.CacheWrite}
			}
			got.Input += got.CacheRead
		case "gemini":
			if got.Output < want.Output {
				t.Errorf("gemini %s: agentctl output %d < ccusage's %d (thinking is added, never dropped)", c.SessionID, got.Output, want.Output)
			}
			got.Output = want.Output
			if s.Cost != nil && math.Abs(*s.Cost-c.TotalCost) > 1e-9 {
				t.Errorf("gemini %s: cost %.9f, ccusage %.9f", c.SessionID, *s.Cost, c.TotalCost)
			}
		}
		if got != want {
			t.Errorf("%s %s: agentctl (by ccusage's convention) %+v, ccusage %+v", ccuAgent, c.SessionID, got, want)
		}
	}
}

// The real recordings of issue 33 (discover/<agent>/testdata/home).
func TestCCUsageAgreesNewAgentFixtures(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	for _, tc := range []struct{ ccu, adapter, dir string }{
		{"gemini", "gemini", "gemini"}, {"qwen", "qwen-code", "qwen"}, {"copilot", "copilot", "copilot"},
	} {
		t.Run(tc.ccu, func(t *testing.T) {
			home, err := filepath.Abs(filepath.Join("..", "discover", tc.dir, "testdata", "home"))
			if err != nil {
				t.Fatal(err)
			}
			ccusageAgrees(t, tc.ccu, tc.adapter, home)
		})
	}
}
