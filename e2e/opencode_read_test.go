package e2e

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// Prices the OpenCode read-side test gives fake-model (USD per million tokens),
// so the session row carries a cost OpenCode computed itself.
const ocInPrice, ocOutPrice = 3, 15

// A real `opencode run`, first while the stub holds its turn, then done, then
// resumed with --session (held again, then done): agentctl reports it running on
// the inferred process (docs/agents/opencode.md §4.1 (3): no lock, no registry), stopped once the
// run exited, and the session row's totals and cost — the turns only, never the
// title generation.
func TestOpenCodeReadSide(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	oc := harness.NewOpenCode(t, srv)
	priceOpenCodeModel(t, oc)
	dir := harness.WorkDir(t, "frontend")
	a := harness.NewAgentctl(t, oc.Home)

	const prompt = "Refactor the header HOLD=oc-new"
	m := markNow(srv)
	p := oc.Run(t, dir, prompt)
	waitHeldBy(t, srv, "oc-new", p)
	// The JSON stream names the session only from the first model output; the
	// session row is there as soon as the run starts (docs/agents/opencode.md §6).
	id := openCodeSessionIn(t, oc, dir)
	liveOpenCode(t, "new session, turn held", a, id, p)
	checkPeekLive(t, "peek mid-turn", a, id, prompt)

	srv.Release("oc-new")
	waitExit(t, "opencode run", p)
	if got := harness.OpenCodeSessionID(p.Stdout()); got != id {
		t.Fatalf("opencode run printed session %q; the row in %s is %s", got, dir, id)
	}
	first := turns(srv, m)
	if len(first) != 1 || !first[0].Completed {
		t.Fatalf("stub saw %d turn requests; want one completed", len(first))
	}
	want := view{ID: id, Adapter: "opencode", Status: "stopped", Cwd: dir,
		Model: "fake/" + lastModel(first), Prompt: prompt, Tokens: tokens(sent(first))}
	d, _ := only(t, "list -a after turn 1", listDetails(t, a, "-a"), id)
	checkSession(t, "list -a after turn 1", d.Session, want)
	checkStopped(t, "list -a after turn 1", d)

	const again = "Now the footer HOLD=oc-resume"
	m = markNow(srv)
	p = oc.Run(t, dir, again, "--session", id)
	waitHeldBy(t, srv, "oc-resume", p)
	liveOpenCode(t, "resumed session, turn held", a, id, p)
	checkPeekLive(t, "peek mid-turn", a, id, again)

	srv.Release("oc-resume")
	waitExit(t, "opencode run --session", p)
	resumed := turns(srv, m)
	if len(resumed) != 1 || !resumed[0].Completed {
		t.Fatalf("stub saw %d turn requests for the resume; want one completed", len(resumed))
	}
	want = view{ID: id, Adapter: "opencode", Status: "stopped", Cwd: dir,
		Model: "fake/" + lastModel(first, resumed), Prompt: prompt, Tokens: tokens(sent(first, resumed))}
	ds := listDetails(t, a, "-a")
	if len(ds) != 1 {
		t.Errorf("list -a shows %d sessions; the resume must not make a second one", len(ds))
	}
	d, _ = only(t, "list -a after the resume", ds, id)
	checkSession(t, "list -a after the resume", d.Session, want)
	st := detailOf(t, a, id)
	checkSession(t, "status after the resume", st.Session, want)
	checkStopped(t, "status after the resume", st)
	checkCost(t, "status after the resume", st, sent(first, resumed), ocInPrice, ocOutPrice)
	checkPeek(t, "peek", a.Peek(t, id), []string{prompt, again}, texts(append(first, resumed...)))
}

// liveOpenCode checks a session whose turn is open: running on the process
// table, inferred, pid = the `opencode run` process.
func liveOpenCode(t *testing.T, what string, a *harness.Agentctl, id string, p *harness.Proc) {
	t.Helper()
	d := detailOf(t, a, id)
	checkLive(t, what+": status", d, p, "process", true)
	l, ok := only(t, what+": list", listDetails(t, a), id)
	if ok && (l.Status != "running" || l.PID != d.PID) {
		t.Errorf("%s: list (alive only) shows status %q pid %d; want running, pid %d", what, l.Status, l.PID, d.PID)
	}
}

// openCodeSessionIn waits for the one session row of dir in OpenCode's DB.
func openCodeSessionIn(t *testing.T, oc *harness.OpenCode, dir string) string {
	t.Helper()
	var id string
	harness.Eventually(t, 15*time.Second, func() string {
		db, err := sql.Open("sqlite", "file:"+oc.DB()+"?mode=ro&_pragma=busy_timeout(3000)")
		if err != nil {
			return err.Error()
		}
		defer db.Close()
		rows, err := db.Query(`SELECT id FROM session WHERE directory = ?`, dir)
		if err != nil {
			return "query " + oc.DB() + ": " + err.Error()
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var s string
			rows.Scan(&s)
			ids = append(ids, s)
		}
		if len(ids) != 1 {
			return "session rows for " + dir + ": " + jsonString(ids)
		}
		id = ids[0]
		return ""
	})
	return id
}

// priceOpenCodeModel gives the stub's model a price in OpenCode's config.
func priceOpenCodeModel(t *testing.T, oc *harness.OpenCode) {
	t.Helper()
	path := filepath.Join(oc.Home, ".config", "opencode", "opencode.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	model := cfg["provider"].(map[string]any)["fake"].(map[string]any)["models"].(map[string]any)["fake-model"].(map[string]any)
	model["cost"] = map[string]any{"input": ocInPrice, "output": ocOutPrice}
	if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
