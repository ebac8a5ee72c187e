package e2e

import (
	"database/sql"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// One real `opencode run` against the stub: the session id on stdout is a row of
// <XDG_DATA_HOME>/opencode/opencode.db with the run's directory (docs/agents/opencode.md §1).
func TestOpenCodeSmoke(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	oc := harness.NewOpenCode(t, srv)
	dir := harness.WorkDir(t, "frontend")
	p := oc.Run(t, dir, "Say hello", "--title", "e2e-smoke")
	if code := p.Wait(t, 60*time.Second); code != 0 {
		t.Fatalf("opencode exited %d\n%s", code, harness.Tail(p.Stderr(), 20))
	}
	id := harness.OpenCodeSessionID(p.Stdout())
	if id == "" {
		t.Fatalf("no sessionID on stdout:\n%s", harness.Tail(p.Stdout(), 5))
	}
	db, err := sql.Open("sqlite", "file:"+oc.DB()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var gotDir, title string
	if err := db.QueryRow(`SELECT directory, title FROM session WHERE id = ?`, id).Scan(&gotDir, &title); err != nil {
		t.Fatalf("session %s in %s: %v", id, oc.DB(), err)
	}
	if gotDir != dir || title != "e2e-smoke" {
		t.Errorf("session row directory %q title %q; want %q, %q", gotDir, title, dir, "e2e-smoke")
	}
	// Title generation (no tools) is not part of the session's turn totals.
	turns := srv.ModelExchanges(func(e stub.Exchange) bool { return len(e.Request.Tools) > 0 })
	if len(turns) != 1 || !turns[0].Completed {
		t.Fatalf("stub saw %d turn requests; want one completed", len(turns))
	}

	a := harness.NewAgentctl(t, oc.Home)
	checkSession(t, "status", a.Status(t, id), view{ID: id, Adapter: "opencode", Status: "stopped", Cwd: dir,
		Model: "fake/fake-model", Prompt: "Say hello", Tokens: tokens(sent(turns))})
}
