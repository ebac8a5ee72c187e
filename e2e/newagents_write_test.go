package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/internal/gittest"
	"github.com/agentctl/agentctl/launch/worktree"
	"github.com/agentctl/agentctl/meta"
)

// The write side of Gemini CLI, Qwen Code and Copilot CLI (issue 33) beyond the
// lifecycle of newagents_test.go: a comparison group of the three in worktrees
// of a real git repository, compare --check and accept, budgets, hooks and
// webhooks, and the prompt never in any process's argv.

// newAgentsShared is one HOME and one environment from which a single agentctl
// launches all three agents, each on its own stub (so a slot's tokens are what
// its own stub sent): Gemini's key and base URL, Qwen's settings and OpenAI
// variables with Node 24 first on PATH, Copilot's provider variables.
type newAgentsShared struct {
	a                   *harness.Agentctl
	home                string
	gemini, qwen, copil *stub.Server
}

func newAgentsSharedHome(t *testing.T, extra harness.Env) *newAgentsShared {
	t.Helper()
	s := &newAgentsShared{gemini: stub.Start(t, nil), qwen: stub.Start(t, nil), copil: stub.Start(t, nil)}
	g, q, c := harness.NewGemini(t, s.gemini), harness.NewQwen(t, s.qwen), harness.NewCopilot(t, s.copil)
	s.home = g.Home
	settings, err := os.ReadFile(filepath.Join(q.Home, ".qwen", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(s.home, ".qwen"), 0o700)
	if err := os.WriteFile(filepath.Join(s.home, ".qwen", "settings.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
	// Qwen's env last: its PATH has Node 24 first (qwen needs node >= 22).
	env := g.Env.Merge(c.Env).Merge(q.Env).Merge(harness.Env{"HOME": g.Home, "TMPDIR": g.Env["TMPDIR"]})
	s.a = agentctlFor(t, s.home, env, harness.Env{g.BinVar: g.Bin, q.BinVar: q.Bin, c.BinVar: c.Bin}.Merge(extra))
	return s
}

// runStdin runs agentctl with stdin.
func runStdin(t *testing.T, a *harness.Agentctl, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(a.Bin, append(args, "--home", a.Home)...)
	cmd.Env, cmd.Dir = a.Env.List(), a.Home
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	}
	t.Fatalf("agentctl %v: %v", args, err)
	return "", "", 0
}

// recorded is what a slot's session must hold by its agent's own rules: every
// completed request its stub answered, except Gemini's model-router side calls
// (no tools offered), which Gemini records nowhere (newAgentCases).
func recorded(adapter string, srv *stub.Server) harness.Tokens {
	var mine []stub.Exchange
	for _, e := range srv.Exchanges() {
		if e.Request.API == "" || !e.Completed || (adapter == "gemini" && len(e.Request.Tools) == 0) {
			continue
		}
		mine = append(mine, e)
	}
	return tokens(sent(mine))
}

// A matrix of the three agents over a real repository: each makes its own edit
// through the stub's shell tool call; compare reports exactly what git measures
// in each worktree, the exit code and the tokens each agent's stub sent;
// compare --check passes only the slot whose edit passes the repository's
// check; accept --squash --clean lands that slot's diff as one commit on main
// and removes the worktrees. On-complete and the webhook fire once per slot
// with exit 0; each slot resumed in its worktree (the message on stdin) ends
// with one webhook more. The prompt and the resume message (a unique marker)
// are in no process's argv at any 50 ms sample from the launch to the accept.
func TestGroupCompareAcceptNewAgents(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	recv := newWebhookReceiver(t)
	sh := newAgentsSharedHome(t, harness.Env{"AGENTCTL_WEBHOOK_URL": recv.URL, "AGENTCTL_WEBHOOK_SECRET": recv.Secret})
	a := sh.a
	repo := harness.WorkDir(t, "ledger")
	gittest.Run(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "result.txt"), []byte("pending\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\ntwo\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "b.txt"), []byte("x\ny\nz\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "check.sh"), []byte("grep -qx ok result.txt || { echo \"result: $(cat result.txt)\"; exit 3; }\n"), 0o644)
	gittest.Run(t, repo, "add", ".")
	gittest.Run(t, repo, "commit", "-q", "-m", "init")
	base := strings.TrimSpace(gittest.Run(t, repo, "rev-parse", "HEAD"))

	rb := make([]byte, 8)
	rand.Read(rb)
	marker := "GRPMARK" + hex.EncodeToString(rb)
	// The marker is on its own line: the tool's command (the TOOLCMD line) is
	// in the argv of the shell the agent runs, by design.
	toolcmd := `case "$PWD" in *-gemini) seq 3 >> a.txt; echo bad > result.txt ;; ` +
		`*-qwen) echo ok > result.txt; seq 5 >> a.txt; echo n > notes.txt ;; ` +
		`*-copilot) seq 4 >> a.txt; rm b.txt; echo worse > result.txt ;; esac`
	prompt := marker + " edit the ledger\nTOOLCMD: " + toolcmd
	matrix := filepath.Join(filepath.Dir(repo), "ledger.yaml")
	// The prompt reaches agentctl in the matrix file, not on its command line.
	os.WriteFile(matrix, []byte("cwd: "+filepath.Base(repo)+"\nprompt: |\n  "+strings.ReplaceAll(prompt, "\n", "\n  ")+`
matrix:
  - adapter: gemini
  - adapter: qwen-code
  - adapter: copilot
`), 0o644)
	hookOut := filepath.Join(t.TempDir(), "on-complete.out")
	hook := fmt.Sprintf(`printf '%%s %%s %%s\n' "$AGENTCTL_ADAPTER" "$AGENTCTL_EXIT_CODE" "$AGENTCTL_SESSION_ID" >> '%s'`, hookOut)

	w := watchCmdlines(marker)
	watching := true
	defer func() {
		if watching {
			w.finish()
		}
	}()
	start := time.Now()
	// Every tool runs without asking: Gemini and Qwen map bypassPermissions to
	// yolo, Copilot runs headless with --allow-all-tools anyway.
	out, errOut, code := a.RunLong(t, 5*time.Minute, "launch", "--json", "--matrix", matrix, "--wait",
		"--permission-mode", "bypassPermissions", "--on-complete", hook)
	if code != 0 {
		t.Fatalf("launch: exit %d\n%s\n%s\n%s", code, out, errOut, readLog(a.State))
	}
	t.Logf("group launch --wait took %s", time.Since(start).Round(time.Millisecond))
	var ls []struct{ ID, Adapter, Group, Branch, Cwd string }
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 3 || ls[0].Group == "" || ls[1].Group != ls[0].Group || ls[2].Group != ls[0].Group {
		t.Fatalf("launch --json: %v\n%s", err, out)
	}
	group := ls[0].Group
	idOf := map[string]string{}
	for _, l := range ls {
		idOf[l.Adapter] = l.ID
	}

	type check struct {
		Command    string `json:"command"`
		ExitCode   *int   `json:"exit_code"`
		Passed     bool   `json:"passed"`
		OutputTail string `json:"output_tail"`
		Stale      bool   `json:"stale"`
	}
	type slot struct {
		Slot      string              `json:"slot"`
		ID        string              `json:"id"`
		SessionID string              `json:"session_id"`
		Adapter   string              `json:"adapter"`
		Branch    string              `json:"branch"`
		ExitCode  *int                `json:"exit_code"`
		Status    string              `json:"status"`
		Tokens    *harness.Tokens     `json:"tokens"`
		Worktree  string              `json:"worktree"`
		Diff      *worktree.DiffStats `json:"diff"`
		Check     *check              `json:"check"`
	}
	var cmp struct {
		Group      string `json:"group"`
		BaseCommit string `json:"base_commit"`
		Slots      []slot `json:"slots"`
	}
	if out, _, code := a.Run(t, "compare", group); code == 0 {
		t.Logf("compare:\n%s", out)
	}
	a.JSON(t, &cmp, "compare", group)
	if cmp.Group != group || len(cmp.Slots) != 3 || cmp.BaseCommit != base {
		t.Fatalf("compare: %+v (base %s)", cmp, base)
	}
	srvOf := map[string]*stub.Server{"gemini": sh.gemini, "qwen-code": sh.qwen, "copilot": sh.copil}
	// The result.txt line counts once; notes.txt is untracked (not in git diff).
	wantIns := map[string]int{"gemini": 4, "qwen": 6, "copilot": 5}
	for _, s := range cmp.Slots {
		got := worktree.ParseShortstat(gittest.Run(t, s.Worktree, "diff", "--shortstat", cmp.BaseCommit))
		if s.Diff == nil || s.Diff.FilesChanged != got.FilesChanged || s.Diff.Insertions != got.Insertions || s.Diff.Deletions != got.Deletions {
			t.Errorf("%s: compare diff %+v, git diff --shortstat says %+v", s.Slot, s.Diff, got)
		}
		if got.Insertions != wantIns[s.Slot] {
			t.Errorf("%s: %d insertions, want %d (did the tool run in its worktree?)", s.Slot, got.Insertions, wantIns[s.Slot])
		}
		if s.ExitCode == nil || *s.ExitCode != 0 || s.Status != "stopped" {
			t.Errorf("%s: exit %v status %s, want exit 0 stopped", s.Slot, s.ExitCode, s.Status)
		}
		srv := srvOf[s.Adapter]
		if srv == nil || s.SessionID != idOf[s.Adapter] {
			t.Errorf("%s: adapter %q session %s; launch said %v", s.Slot, s.Adapter, s.SessionID, idOf)
			continue
		}
		if want := recorded(s.Adapter, srv); s.Tokens == nil || *s.Tokens != want || want == (harness.Tokens{}) {
			t.Errorf("%s: compare tokens %+v, its stub sent %+v", s.Slot, s.Tokens, want)
		}
		if st := a.Status(t, s.SessionID); st.Tokens == nil || s.Tokens == nil || !reflect.DeepEqual(*st.Tokens, *s.Tokens) || st.Cwd != s.Worktree {
			t.Errorf("%s: status tokens %+v cwd %s; compare says %+v %s", s.Slot, st.Tokens, st.Cwd, s.Tokens, s.Worktree)
		}
	}

	// The hooks: one on-complete per slot with exit 0, one signed webhook each.
	harness.Eventually(t, 20*time.Second, func() string {
		if n, m := len(hookLines(hookOut)), len(recv.deliveries()); n < 3 || m < 3 {
			return fmt.Sprintf("%d on-complete runs, %d webhook deliveries; want 3 each", n, m)
		}
		return ""
	})
	a.List(t)
	time.Sleep(time.Second)
	var wantHooks []string
	for _, ad := range []string{"copilot", "gemini", "qwen-code"} {
		wantHooks = append(wantHooks, ad+" 0 "+idOf[ad])
	}
	gotHooks := hookLines(hookOut)
	sort.Strings(gotHooks)
	if !reflect.DeepEqual(gotHooks, wantHooks) {
		t.Errorf("on-complete ran %q; want once per slot %q", gotHooks, wantHooks)
	}
	ds := recv.deliveries()
	if len(ds) != 3 {
		t.Errorf("%d webhook deliveries, want 3", len(ds))
	}
	seen := map[string]bool{}
	for _, d := range ds {
		var p struct {
			SessionID string `json:"session_id"`
			Adapter   string `json:"adapter"`
		}
		json.Unmarshal(d.Body, &p)
		if seen[p.SessionID] || idOf[p.Adapter] != p.SessionID {
			t.Errorf("webhook for %s %s (seen before: %v)", p.Adapter, p.SessionID, seen[p.SessionID])
			continue
		}
		seen[p.SessionID] = true
		var cwd string
		for _, l := range ls {
			if l.ID == p.SessionID {
				cwd = l.Cwd
			}
		}
		checkDelivery(t, recv, d, map[string]any{"hook_type": "session.stopped", "session_id": p.SessionID, "adapter": p.Adapter,
			"cwd": cwd, "exit_status": float64(0), "summary": prompt[:200]})
	}

	// Each slot resumed in its worktree, the message on agentctl's stdin (the
	// marker again): the same session answers, and the run ends with one more
	// webhook each, exit 0.
	for _, ad := range []string{"gemini", "qwen-code", "copilot"} {
		id := idOf[ad]
		out, errOut, code := runStdin(t, a, marker+" once more WORDS=2", "resume", id, "-")
		if code != 0 || !strings.HasPrefix(out, "resumed "+id+" ("+ad) {
			t.Fatalf("resume %s: exit %d %q\n%s\n%s", ad, code, out, errOut, readLog(a.State))
		}
	}
	for _, ad := range []string{"gemini", "qwen-code", "copilot"} {
		id := idOf[ad]
		if out, errOut, code := a.Run(t, "wait", "--timeout", "25s", id); code != 0 || out != id+" stopped (exit 0)\n" {
			t.Fatalf("wait after the resume of %s: exit %d %q\n%s", ad, code, out, errOut)
		}
	}
	harness.Eventually(t, 20*time.Second, func() string {
		if m := len(recv.deliveries()); m < 6 {
			return fmt.Sprintf("%d webhook deliveries; want 6 (3 launches, 3 resumes)", m)
		}
		return ""
	})
	resumed := map[string]int{}
	for _, d := range recv.deliveries()[3:] {
		var p struct {
			SessionID  string   `json:"session_id"`
			ExitStatus *float64 `json:"exit_status"`
		}
		json.Unmarshal(d.Body, &p)
		if p.ExitStatus == nil || *p.ExitStatus != 0 {
			t.Errorf("resume webhook %s", d.Body)
		}
		resumed[p.SessionID]++
	}
	for ad, id := range idOf {
		if resumed[id] != 1 {
			t.Errorf("%d webhooks for the resume of %s %s, want 1", resumed[id], ad, id)
		}
	}
	if got := hookLines(hookOut); len(got) != 3 {
		t.Errorf("on-complete ran %d times; the launch's hook is for the launch's runs only", len(got))
	}

	// compare --check: only qwen's edit passes.
	a.JSON(t, &cmp, "compare", group, "--check", "sh check.sh", "--sort", "check")
	if len(cmp.Slots) != 3 {
		t.Fatalf("compare --check: %+v", cmp)
	}
	win := cmp.Slots[0]
	if c := win.Check; win.Slot != "qwen" || c == nil || !c.Passed || c.ExitCode == nil || *c.ExitCode != 0 || c.Stale {
		t.Fatalf("--sort check: first row %s with %+v; want qwen passing", win.Slot, win.Check)
	}
	for _, s := range cmp.Slots[1:] {
		want := map[string]string{"gemini": "result: bad", "copilot": "result: worse"}[s.Slot]
		if c := s.Check; c == nil || c.Passed || c.ExitCode == nil || *c.ExitCode != 3 || c.OutputTail != want {
			t.Errorf("%s: check %+v, want exit 3 %q", s.Slot, s.Check, want)
		}
	}

	var acc struct {
		Commit, Before, Method, Into string
		LeftoversCommit              string `json:"leftovers_commit"`
		Cleaned                      []struct {
			Branch  string
			Removed bool
		}
	}
	a.JSON(t, &acc, "accept", win.SessionID, "--squash", "--clean")
	if acc.Method != "squash" || acc.Into != "main" || acc.Before != base || acc.LeftoversCommit == "" || len(acc.Cleaned) != 3 {
		t.Errorf("accept --json: %+v", acc)
	}
	samples, hits := w.finish()
	watching = false
	t.Logf("%d argv samples over %s", samples, time.Since(start).Round(time.Second))
	if samples < 50 {
		t.Errorf("only %d argv samples; want at least 50 to mean anything", samples)
	}
	if len(hits) > 0 {
		t.Errorf("the prompt was in a process's argv:\n%s", strings.Join(hits, "\n"))
	}
	if n := strings.TrimSpace(gittest.Run(t, repo, "rev-list", "--count", base+"..main")); n != "1" {
		t.Errorf("%s commits on main, want 1", n)
	}
	got := worktree.ParseShortstat(gittest.Run(t, repo, "diff", "--shortstat", "main^", "main"))
	want := worktree.ParseShortstat(gittest.Run(t, repo, "diff", "--shortstat", base, win.Branch))
	if !reflect.DeepEqual(got, want) || got.FilesChanged != 3 || got.Insertions != 7 || got.Deletions != 1 {
		t.Errorf("main's commit: %+v; the slot's diff: %+v (want 3 files +7 -1)", got, want)
	}
	if res := gittest.Run(t, repo, "show", "main:result.txt"); res != "ok\n" {
		t.Errorf("result.txt on main: %q", res)
	}
	if msg := gittest.Run(t, repo, "log", "-1", "--format=%B"); !strings.HasPrefix(msg, marker+" edit the ledger") ||
		!strings.Contains(msg, "qwen-code") || !strings.Contains(msg, "Session: "+win.SessionID) || !strings.Contains(msg, "Group: "+group) {
		t.Errorf("squash message:\n%s", msg)
	}
	if st := gittest.Run(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("target not clean: %s", st)
	}
	if wl := strings.TrimSpace(gittest.Run(t, repo, "worktree", "list")); strings.Count(wl, "\n") != 0 {
		t.Errorf("after --clean: %s", wl)
	}
}

// Budgets on each new agent: --max-tokens between one and two turns stops the
// run after its second turn (tokens from the agent's own files), with the
// on-complete hook and the webhook once with the reason (tokenBudget); then
// --max-duration on a run the stub holds stops it within the limit plus the
// stop's escalation.
func TestBudgetNewAgents(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	for _, name := range []string{"gemini", "qwen", "copilot"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hold := name + "-third"
			srv := stub.Start(t, budgetScript(hold))
			ag := newAgentCases(t, srv)[name].agent
			recv := newWebhookReceiver(t)
			a := agentctlFor(t, ag.Home, ag.Env, harness.Env{ag.BinVar: ag.Bin,
				"AGENTCTL_WEBHOOK_URL": recv.URL, "AGENTCTL_WEBHOOK_SECRET": recv.Secret})
			tokenBudget(t, ag.Name, srv, hold, a, recv, "--permission-mode", "bypassPermissions")

			// The script holds every turn after two tool results now: a new run
			// asks for "echo one", then waits for ever on its second turn.
			ac := &agentCase{adapter: ag.Name, a: a, srv: srv, cwd: harness.WorkDir(t, "slow")}
			l := ac.launch(t, a, "think long", "--max-duration", "5s", "--permission-mode", "bypassPermissions")
			out, errOut, code := a.Run(t, "wait", "--timeout", "60s", l.ID)
			if code != 1 || !strings.Contains(out, "budget:duration") {
				t.Fatalf("wait: exit %d %q; want 1 naming budget:duration\n%s\n%s", code, out, errOut, readLog(a.State))
			}
			recs, _ := meta.NewStore(a.State).ReadLaunches()
			r := meta.FindLaunch(recs, l.LaunchID)
			if r == nil || r.EndedAt == nil || r.ConfirmedAt == nil || r.ExitReason != meta.ReasonBudgetDuration {
				t.Fatalf("launch record: %+v", r)
			}
			took := r.EndedAt.Sub(*r.ConfirmedAt)
			if took < 5*time.Second || took > 5*time.Second+10*time.Second+2*time.Second {
				t.Errorf("ended %s after the confirmation; want 5 s + the escalation at most", took)
			}
			t.Logf("duration budget: stopped %s after the confirmation (signals %v)", took.Round(time.Millisecond), r.Stop)
			var st budgetStatus
			a.JSON(t, &st, "status", l.ID)
			if st.ExitReason != meta.ReasonBudgetDuration || st.Status != "stopped" {
				t.Errorf("status: %+v; want stopped with exit_reason budget:duration", st)
			}
		})
	}
}
