package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/gittest"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/launch/worktree"
)

// The whole loop with real agents: a matrix of two Claude Code models against
// the stub, which makes one slot's edit pass the repository's check script and
// the other's fail. compare --check must say exactly that; accept of the
// passing slot lands one commit on main whose diff is that slot's worktree
// diff; refusals (a dirty target, the loser conflicting with the accepted
// work) change nothing; --clean leaves the main worktree only, the loser's
// edit still on its branch.
func TestAcceptWinnerRealAgents(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	os.MkdirAll(filepath.Join(c.Home, ".claude"), 0o700)
	os.WriteFile(filepath.Join(c.Home, ".claude", "settings.json"), []byte(`{"permissions":{"allow":["Bash"]}}`), 0o600)
	a := agentctlFor(t, c.Home, c.Env, harness.Env{"AGENTCTL_CLAUDE_BIN": c.Bin})
	repo := harness.WorkDir(t, "calc")
	gittest.Run(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "result.txt"), []byte("pending\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "check.sh"), []byte("grep -qx ok result.txt || { echo \"result: $(cat result.txt)\"; exit 3; }\n"), 0o644)
	gittest.Run(t, repo, "add", ".")
	gittest.Run(t, repo, "commit", "-q", "-m", "init")
	base := strings.TrimSpace(gittest.Run(t, repo, "rev-parse", "HEAD"))

	// opus: a passing edit, tracked and untracked; sonnet: a failing one on the same line.
	prompt := `fix result TOOLCMD: case "$PWD" in *cc-opus-4-6) echo ok > result.txt; seq 3 >> a.txt; echo n > notes.txt ;; *) echo bad > result.txt ;; esac`
	out, errOut, code := a.Run(t, "launch", "--json", "--cwd", repo, "--adapter", "claude-code",
		"--model", "claude-opus-4-6,claude-sonnet-4-5", "--wait", "-p", prompt)
	if code != 0 {
		t.Fatalf("launch: exit %d\n%s\n%s\n%s", code, out, errOut, readLog(a.State))
	}
	var ls []struct{ Group string }
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 2 || ls[0].Group == "" {
		t.Fatalf("launch --json: %v\n%s", err, out)
	}
	group := ls[0].Group

	type check struct {
		Command    string `json:"command"`
		ExitCode   *int   `json:"exit_code"`
		Passed     bool   `json:"passed"`
		DurationMS *int64 `json:"duration_ms"`
		OutputTail string `json:"output_tail"`
		Stale      bool   `json:"stale"`
	}
	var cmp struct {
		Slots []struct {
			ID, Slot, Branch, Worktree string
			Check                      *check `json:"check"`
		} `json:"slots"`
	}
	a.JSON(t, &cmp, "compare", group, "--check", "sh check.sh", "--sort", "check")
	if len(cmp.Slots) != 2 {
		t.Fatalf("compare --check: %+v", cmp)
	}
	win, lose := cmp.Slots[0], cmp.Slots[1]
	if win.Slot != "cc-opus-4-6" || lose.Slot != "cc-sonnet-4-5" {
		t.Fatalf("--sort check: rows %s, %s; want the passing cc-opus-4-6 first", win.Slot, lose.Slot)
	}
	if c := win.Check; c == nil || !c.Passed || c.ExitCode == nil || *c.ExitCode != 0 || c.Command != "sh check.sh" || c.DurationMS == nil || c.Stale {
		t.Errorf("winner's check: %+v", win.Check)
	}
	if c := lose.Check; c == nil || c.Passed || c.ExitCode == nil || *c.ExitCode != 3 || c.OutputTail != "result: bad" {
		t.Errorf("loser's check: %+v", lose.Check)
	}
	// Kept with the group: a later compare shows them, not stale.
	a.JSON(t, &cmp, "compare", group)
	for _, s := range cmp.Slots {
		if s.Check == nil || s.Check.Stale || s.Check.Passed != (s.Slot == "cc-opus-4-6") {
			t.Errorf("%s: kept check %+v", s.Slot, s.Check)
		}
	}

	state := func() string {
		return gittest.Run(t, repo, "rev-parse", "HEAD") + gittest.Run(t, repo, "status", "--porcelain") + gittest.Run(t, repo, "worktree", "list")
	}
	// A dirty target: refused, exit 5, naming the file; nothing changes.
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\nmine\n"), 0o644)
	before := state()
	if _, errOut, code := a.Run(t, "accept", win.ID); code != 5 || !strings.Contains(errOut, "M a.txt") {
		t.Errorf("accept into a dirty target: exit %d %s", code, errOut)
	}
	if after := state(); after != before {
		t.Errorf("a refused accept changed the target:\n%s\nwas\n%s", after, before)
	}
	gittest.Run(t, repo, "checkout", "a.txt")

	var acc struct {
		Commit, Before, Method, Into string
		LeftoversCommit              string `json:"leftovers_commit"`
		Cleaned                      []struct {
			Branch  string
			Removed bool
		}
	}
	a.JSON(t, &acc, "accept", win.ID, "--squash", "--clean")
	if acc.Method != "squash" || acc.Into != "main" || acc.Before != base || acc.LeftoversCommit == "" || len(acc.Cleaned) != 2 {
		t.Errorf("accept --json: %+v", acc)
	}
	// One commit on main, whose diff is the slot's worktree diff (its
	// leftovers, notes.txt included, are committed on its branch now).
	if n := strings.TrimSpace(gittest.Run(t, repo, "rev-list", "--count", base+"..main")); n != "1" {
		t.Errorf("%s commits on main, want 1", n)
	}
	got := worktree.ParseShortstat(gittest.Run(t, repo, "diff", "--shortstat", "main^", "main"))
	want := worktree.ParseShortstat(gittest.Run(t, repo, "diff", "--shortstat", base, win.Branch))
	if !reflect.DeepEqual(got, want) || got.FilesChanged != 3 || got.Insertions != 5 || got.Deletions != 1 {
		t.Errorf("main's commit: %+v; the slot's diff: %+v (want 3 files +5 -1)", got, want)
	}
	if msg := gittest.Run(t, repo, "log", "-1", "--format=%B"); !strings.HasPrefix(msg, "fix result TOOLCMD") ||
		!strings.Contains(msg, "Model: claude-opus-4-6") || !strings.Contains(msg, "Session: "+win.ID) ||
		!strings.Contains(msg, "Group: "+group) || !strings.Contains(msg, "Tokens: ") {
		t.Errorf("squash message:\n%s", msg)
	}
	if st := gittest.Run(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("target not clean: %s", st)
	}
	if wl := strings.TrimSpace(gittest.Run(t, repo, "worktree", "list")); strings.Count(wl, "\n") != 0 || !strings.Contains(wl, "[main]") {
		t.Errorf("after --clean: %s", wl)
	}
	if res := gittest.Run(t, repo, "show", lose.Branch+":result.txt"); res != "bad\n" {
		t.Errorf("the loser's edit on %s: %q", lose.Branch, res)
	}

	// The loser edits the same line: a conflict, exit 5, nothing changed.
	before = state()
	if _, errOut, code := a.Run(t, "accept", lose.ID); code != 5 || !strings.Contains(errOut, "result.txt") || !strings.Contains(errOut, "git merge "+lose.Branch) {
		t.Errorf("conflicting accept: exit %d %s", code, errOut)
	}
	if after := state(); after != before {
		t.Errorf("a conflicting accept changed the target:\n%s\nwas\n%s", after, before)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "MERGE_HEAD")); err == nil {
		t.Error("MERGE_HEAD left behind")
	}
	// The journal.
	evs, _, _ := a.Run(t, "events", "--json")
	if !strings.Contains(evs, `"type":"group.accepted"`) || strings.Count(evs, `"type":"worktree.removed"`) != 2 {
		t.Errorf("events: %s", evs)
	}
}
