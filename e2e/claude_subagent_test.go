package e2e

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// A run whose model calls the Agent tool: Claude Code writes the subagent's
// requests to <session-id>/subagents/agent-*.jsonl. status's tokens must equal
// everything the stub sent for the parent and the subagent, and
// extra.tokens_subagents the subagent's share.
func TestClaudeSubagentTokens(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		dir := harness.WorkDir(t, "subagents")
		const subPrompt = "subagent task WORDS=4"
		m := markNow(srv)
		id, p := c.Run(t, dir, "AGENT: "+subPrompt, "--allowedTools", "Agent,Task")
		ex := since(srv, m)
		var sub []stub.Exchange
		for _, e := range ex {
			if strings.Contains(e.Request.LastUser, subPrompt) && !strings.Contains(e.Request.LastUser, "AGENT:") {
				sub = append(sub, e)
			}
		}
		if len(sub) == 0 || ex[0].Reply.Tool == nil {
			t.Fatalf("want an Agent tool call and a subagent request; stub saw %d requests\nstdout:\n%s", len(ex), harness.Tail(p.Stdout(), 10))
		}
		a := harness.NewAgentctl(t, c.Home)
		s := a.Status(t, id)
		if diff := cmp.Diff(tokens(sent(ex)), derefTokens(s.Tokens)); diff != "" {
			t.Errorf("status tokens (-stub sent, parent + subagent +agentctl):\n%s", diff)
		}
		if diff := cmp.Diff(tokens(sent(sub)), derefTokens(s.Extra.TokensSubagents)); diff != "" {
			t.Errorf("tokens_subagents (-stub sent to the subagent +agentctl):\n%s", diff)
		}
		// The subagent is part of its session, never a session of its own.
		for _, l := range a.List(t) {
			if l.ID != id && l.Cwd == dir {
				t.Errorf("extra session %s listed in %s", l.ID, dir)
			}
		}
	})
}

func derefTokens(t *harness.Tokens) harness.Tokens {
	if t == nil {
		return harness.Tokens{}
	}
	return *t
}
