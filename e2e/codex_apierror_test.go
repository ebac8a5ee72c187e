package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// A real `codex exec` turn the stub answers with 500 on every attempt: Codex
// retries for about 30 s, gives up ("We’re currently experiencing high demand",
// codexErrorInfo internalServerError) and agentctl
// reports the API error loop as blocked_reason api-error.
func TestCodexAPIErrorLoopBlocked(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewCodex(t, srv)
	dir := harness.WorkDir(t, "billing")
	a := harness.NewAgentctl(t, c.Home)
	p := c.Exec(t, dir, "loop test STATUS=500")
	id := p.WaitStdout(t, 30*time.Second, "thread.started", harness.CodexThreadID)
	waitRollout(t, c, "loop test STATUS=500")
	// Codex retries the 500s for about 30 s before it gives up.
	if code := p.Wait(t, 150*time.Second); code != 1 {
		t.Errorf("codex exec exited %d after the 500s; want 1", code)
	}
	out, errOut, code := a.Run(t, "wait", "--until", "blocked", "--timeout", "10s", "--json", id)
	var line struct {
		Reached        string `json:"reached"`
		BlockedReason  string `json:"blocked_reason"`
		EvidenceDetail string `json:"evidence_detail"`
	}
	if err := json.Unmarshal([]byte(out), &line); err != nil || code != 0 || line.Reached != "blocked" || line.BlockedReason != "api-error" {
		t.Fatalf("wait --until blocked: exit %d, %q %s (%v); want exit 0, reached blocked, blocked_reason api-error", code, out, errOut, err)
	}
	// Codex words a 500 as "high demand" with codexErrorInfo internalServerError.
	if !strings.Contains(line.EvidenceDetail, "internalServerError") {
		t.Errorf("evidence_detail %q does not name Codex's internalServerError", line.EvidenceDetail)
	}
	if n := len(srv.ModelExchanges(nil)); n < 2 {
		t.Errorf("the stub saw %d model requests; an error loop needs Codex to have retried", n)
	}
}
