package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// The status-accuracy benchmark's rows for Gemini CLI, Qwen Code and Copilot CLI
// (issue 33), headless, started by hand: a held reply (running) then the reply
// and the exit (stopped); and a run whose replies are all HTTP errors (failed,
// blocked on the reason; while the agent is still up after the last error reply
// running, idle or failed with the reason all count, as for the others).
func TestStatusAccuracyNewAgents(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	for _, tc := range []struct {
		name   string
		prompt string // "" for the held-reply scenario
		code   int    // the error every reply gets
		n      int    // how many such replies the agent is sent before it gives up
		reason string
	}{
		{name: "gemini"},
		{name: "qwen"},
		{name: "copilot"},
		// Gemini does not retry a per-day quota; its reason comes from its error
		// report in the agent's TMPDIR.
		{name: "gemini", prompt: "accuracy quota STATUS=429", code: 429, n: 1, reason: "quota"},
		// HARDQUOTA: Qwen gives up at once (after its SDK's own retries) only on
		// "quota … will reset" wording.
		{name: "qwen", prompt: "accuracy quota STATUS=429 HARDQUOTA", code: 429, n: 1, reason: "quota"},
		// Copilot sends a 401 three times in all, then records session.error.
		{name: "copilot", prompt: "accuracy auth STATUS=401", code: 401, n: 3, reason: "auth"},
	} {
		scenario := "held reply, reply, exit"
		if tc.code != 0 {
			scenario = fmt.Sprintf("held reply, every reply HTTP %d, exit", tc.code)
		}
		t.Run(tc.name+"/"+scenario, func(t *testing.T) {
			t.Parallel()
			srv := stub.Start(t, nil)
			c := newAgentCases(t, srv)[tc.name]
			ag := c.agent
			a := harness.NewAgentctl(t, ag.Home)
			a.Env = a.Env.With("TMPDIR", ag.Env["TMPDIR"])
			hold := "acc-" + tc.name
			prompt := tc.prompt
			if prompt == "" {
				prompt = "accuracy"
			}
			var p *harness.Proc
			var id string
			if tc.name == "copilot" {
				// Copilot prints its id only in its last line: give it one.
				id = uuid.NewString()
				p = ag.Run(t, harness.WorkDir(t, "acc"), prompt+" HOLD="+hold, "--session-id", id)
			} else {
				p = ag.Run(t, harness.WorkDir(t, "acc"), prompt+" HOLD="+hold)
				id = p.WaitStdout(t, 180*time.Second, "session id", c.idOf)
			}
			waitHeldWhileAlive(t, srv, hold, p)
			label := ag.Name + " " + agentVersion(tc.name) + " headless: " + scenario
			if tc.code == 0 {
				heldPrint(t, label, a, srv, id, hold, p)
				return
			}
			blockedRun(t, label, a, srv, id, hold, tc.code, tc.n, tc.reason, p)
		})
	}
}

func agentVersion(name string) string {
	return map[string]string{"gemini": "0.61.0", "qwen": "0.24.4", "copilot": "1.0.102"}[name]
}
