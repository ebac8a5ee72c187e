package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// One real `codex exec` turn against the stub: the thread id on stdout names a
// rollout under CODEX_HOME/sessions/YYYY/MM/DD/ and the state DB exists
// (docs/agents/codex.md §1).
func TestCodexSmoke(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	for _, v := range harness.CodexVersions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			codexSmoke(t, v)
		})
	}
}

func codexSmoke(t *testing.T, version string) {
	srv := stub.Start(t, nil)
	c := harness.NewCodexVersion(t, version, srv)
	dir := harness.WorkDir(t, "billing")
	p := c.Exec(t, dir, "Say hello")
	if code := p.Wait(t, 60*time.Second); code != 0 {
		t.Fatalf("codex exited %d\n%s", code, harness.Tail(p.Stderr(), 20))
	}
	id := harness.CodexThreadID(p.Stdout())
	if id == "" {
		t.Fatalf("no thread.started line:\n%s", p.Stdout())
	}
	rollouts := c.Rollouts()
	if len(rollouts) != 1 || !strings.HasSuffix(rollouts[0], "-"+id+".jsonl") {
		t.Fatalf("rollouts %v; want one named after thread %s", rollouts, id)
	}
	b, _ := os.ReadFile(rollouts[0])
	if !strings.Contains(string(b), `"Say hello"`) || !strings.Contains(string(b), dir) {
		t.Errorf("rollout does not record the prompt and cwd %s", dir)
	}
	if db, _ := filepath.Glob(filepath.Join(c.Home, ".codex", "state_*.sqlite")); len(db) == 0 {
		t.Errorf("no state_<N>.sqlite under %s/.codex", c.Home)
	}
	ex := srv.ModelExchanges(nil)
	if len(ex) != 1 || ex[0].Request.API != stub.Responses || !ex[0].Completed {
		t.Fatalf("stub saw %d model requests; want one completed Responses call", len(ex))
	}

	// Codex's input_tokens include the cached ones; agentctl splits them out.
	a := harness.NewAgentctl(t, c.Home)
	checkSession(t, "status", a.Status(t, id), view{ID: id, Adapter: "codex", Status: "stopped", Cwd: dir,
		Model: lastModel(ex), Prompt: "Say hello", Tokens: tokens(sent(ex))})
}
