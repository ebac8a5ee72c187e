package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/gittest"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/launch/worktree"
)

// The comparison workflow with real agents: one matrix launch of two Claude Code
// slots (two models), Codex, Pi and OpenCode slots over a real git repository; the stub makes each run a
// tool that edits a different number of lines (the command picks by the
// worktree it runs in). compare --json must report, per slot, exactly what
// `git diff --shortstat BASE` measures in its worktree, the exit code, and the
// tokens `status` reports.
func TestCompareGroupRealAgents(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	cx := harness.NewCodex(t, srv)
	pi := harness.NewPi(t, srv)
	oc := harness.NewOpenCode(t, srv)
	// OpenCode reads its config from $XDG_CONFIG_HOME; in one shared HOME its
	// slot needs bash allowed there, or `opencode run` rejects the tool call
	// (docs/agents/opencode.md).
	ocCfg := filepath.Join(c.Home, ".config", "opencode")
	if err := os.MkdirAll(ocCfg, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := harness.OpenCodeAllowBash(filepath.Join(oc.Home, ".config", "opencode", "opencode.json"), filepath.Join(ocCfg, "opencode.json")); err != nil {
		t.Fatal(err)
	}
	// Pi reads its provider config from $HOME/.pi, and HOME is Claude's here.
	piDir := filepath.Join(c.Home, ".pi", "agent")
	if err := os.MkdirAll(piDir, 0o700); err != nil {
		t.Fatal(err)
	}
	models, err := os.ReadFile(filepath.Join(pi.Home, ".pi", "agent", "models.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(piDir, "models.json"), models, 0o600)
	// The launch flags apply to every slot, and only Claude asks before a
	// tool runs: its user settings allow Bash instead of a permission mode.
	os.MkdirAll(filepath.Join(c.Home, ".claude"), 0o700)
	settings := filepath.Join(c.Home, ".claude", "settings.json")
	if b, err := os.ReadFile(settings); err == nil && len(b) > 0 {
		t.Logf("existing claude settings: %s", b)
	}
	os.WriteFile(settings, []byte(`{"permissions":{"allow":["Bash"]}}`), 0o600)
	// One agentctl launches both: Claude's HOME, Codex's own CODEX_HOME.
	a := agentctlFor(t, c.Home, c.Env, harness.Env{"AGENTCTL_CLAUDE_BIN": c.Bin, "AGENTCTL_CODEX_BIN": cx.Bin,
		"AGENTCTL_PI_BIN": pi.Bin, "PI_OFFLINE": "1", "CODEX_HOME": cx.Env["CODEX_HOME"], "FAKE_API_KEY": cx.Env["FAKE_API_KEY"],
		"AGENTCTL_OPENCODE_BIN": oc.Bin, "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
		"XDG_CONFIG_HOME": filepath.Join(c.Home, ".config"), "XDG_DATA_HOME": filepath.Join(c.Home, ".local", "share"),
		"XDG_STATE_HOME": filepath.Join(c.Home, ".local", "state"), "XDG_CACHE_HOME": filepath.Join(c.Home, ".cache")})
	repo := harness.WorkDir(t, "shop")
	gittest.Run(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\ntwo\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "b.txt"), []byte("x\ny\nz\n"), 0o644)
	gittest.Run(t, repo, "add", ".")
	gittest.Run(t, repo, "commit", "-q", "-m", "init")
	before := gittest.Run(t, repo, "worktree", "list")

	prompt := `edit TOOLCMD: case "$PWD" in *cc-opus-4-6) seq 3 >> a.txt ;; *codex) seq 5 >> a.txt ;; *-pi) seq 4 >> a.txt ;; *-opencode) seq 2 >> a.txt; seq 9 > c.txt; git add c.txt ;; *) seq 7 >> a.txt; rm b.txt; echo n > new.txt ;; esac`
	// One matrix file beside the repository (cwd relative to it); -p gives
	// the prompt, which holds a shell case that YAML need not quote.
	matrix := filepath.Join(filepath.Dir(repo), "compare.yaml")
	os.WriteFile(matrix, []byte(`cwd: `+filepath.Base(repo)+`
matrix:
  - adapter: claude-code
    model: [claude-opus-4-6, claude-sonnet-4-5]
  - adapter: codex
  - adapter: pi
    model: fakeoai/fake-model
  - adapter: opencode
    model: fake/fake-model
`), 0o644)
	// Five agents start at once on two shared cores: OpenCode alone takes
	// 15-20 s from start to its session row then (~1 s when alone), so the
	// group's --wait gets a longer limit than a single command.
	out, errOut, code := a.RunLong(t, 3*time.Minute, "launch", "--json", "--matrix", matrix, "--wait", "-p", prompt)
	if code != 0 {
		t.Fatalf("launch: exit %d\n%s\n%s\n%s", code, out, errOut, readLog(a.State))
	}
	var ls []struct{ ID, Group, Branch, Cwd, Model string }
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 5 || ls[0].Group == "" || ls[0].Group != ls[1].Group || ls[2].Group != ls[0].Group || ls[4].Group != ls[0].Group {
		t.Fatalf("launch --json: %v\n%s", err, out)
	}
	group := ls[0].Group
	// Where the group's time goes: each slot's confirmation, then its run.
	if b, err := os.ReadFile(filepath.Join(a.State, "launches.json")); err == nil {
		var lr struct {
			Launches []struct {
				Adapter, Model string
				LaunchedAt     time.Time  `json:"launched_at"`
				ConfirmedAt    *time.Time `json:"confirmed_at"`
				Ended          *time.Time `json:"ended_at"`
			} `json:"launches"`
		}
		if json.Unmarshal(b, &lr) == nil {
			for _, r := range lr.Launches {
				if r.ConfirmedAt != nil && r.Ended != nil {
					t.Logf("%s %s: confirmed after %s, ended %s later", r.Adapter, r.Model,
						r.ConfirmedAt.Sub(r.LaunchedAt).Round(100*time.Millisecond), r.Ended.Sub(*r.ConfirmedAt).Round(100*time.Millisecond))
				}
			}
		}
	}

	var cmp struct {
		Group      string `json:"group"`
		BaseCommit string `json:"base_commit"`
		Slots      []struct {
			Slot      string              `json:"slot"`
			SessionID string              `json:"session_id"`
			ExitCode  *int                `json:"exit_code"`
			Status    string              `json:"status"`
			Tokens    *harness.Tokens     `json:"tokens"`
			Worktree  string              `json:"worktree"`
			Diff      *worktree.DiffStats `json:"diff"`
			Duration  *float64            `json:"duration_seconds"`
		} `json:"slots"`
	}
	a.JSON(t, &cmp, "compare", group)
	if cmp.Group != group || len(cmp.Slots) != 5 || cmp.BaseCommit == "" {
		t.Fatalf("compare: %+v", cmp)
	}
	wantIns := map[string]int{"cc-opus-4-6": 3, "cc-sonnet-4-5": 7, "codex": 5, "pi": 4, "opencode": 11}
	for _, s := range cmp.Slots {
		if s.Duration != nil {
			t.Logf("%s ran %.1f s", s.Slot, *s.Duration)
		}
		got := worktree.ParseShortstat(gittest.Run(t, s.Worktree, "diff", "--shortstat", cmp.BaseCommit))
		if s.Diff == nil || s.Diff.FilesChanged != got.FilesChanged || s.Diff.Insertions != got.Insertions || s.Diff.Deletions != got.Deletions {
			t.Errorf("%s: compare diff %+v, git diff --shortstat says %+v", s.Slot, s.Diff, got)
		}
		if got.Insertions != wantIns[s.Slot] {
			t.Errorf("%s: %d insertions, want %d (did the tool run?)", s.Slot, got.Insertions, wantIns[s.Slot])
		}
		if s.Slot == "cc-sonnet-4-5" && (got.Deletions != 3 || len(s.Diff.Untracked) != 1 || s.Diff.Untracked[0] != "new.txt") {
			t.Errorf("%s: deletions %d, untracked %v; want 3 and [new.txt]", s.Slot, got.Deletions, s.Diff.Untracked)
		}
		if s.ExitCode == nil || *s.ExitCode != 0 || s.Status != "stopped" {
			t.Errorf("%s: exit %v status %s", s.Slot, s.ExitCode, s.Status)
		}
		st := a.Status(t, s.SessionID)
		if s.Tokens == nil || st.Tokens == nil || !reflect.DeepEqual(*s.Tokens, *st.Tokens) {
			t.Errorf("%s: compare tokens %+v, status says %+v", s.Slot, s.Tokens, st.Tokens)
		}
	}
	// Cleaning a group commits each slot's leftovers on its branch first, then
	// removes the worktrees; the unmerged branches go only with --force.
	if out, errOut, code := a.Run(t, "worktree", "clean", group, "--repo", repo); code != 0 || strings.Count(out, "committed the leftovers") != 5 {
		t.Errorf("clean of the group: exit %d %s %s", code, out, errOut)
	}
	if got := gittest.Run(t, repo, "show", "try/"+group+"/cc-sonnet-4-5:new.txt"); got != "n\n" {
		t.Errorf("the untracked new.txt on its branch after clean: %q", got)
	}
	if out, errOut, code := a.Run(t, "worktree", "clean", "--force", "--delete-branch", group, "--repo", repo); code != 0 {
		t.Fatalf("clean --force: exit %d %s %s", code, out, errOut)
	}
	if after := gittest.Run(t, repo, "worktree", "list"); after != before || strings.Contains(gittest.Run(t, repo, "branch"), group) {
		t.Errorf("after clean: worktrees %q (before %q), branches %q", after, before, gittest.Run(t, repo, "branch"))
	}
}
