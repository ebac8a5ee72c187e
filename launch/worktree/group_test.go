package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/internal/gittest"
)

func TestPrepareGroupAllOrNothing(t *testing.T) {
	repo := gittest.NewRepo(t)
	ctx := context.Background()
	before := gittest.Run(t, repo, "worktree", "list") + gittest.Run(t, repo, "branch", "-a")
	entries, _ := os.ReadDir(filepath.Dir(repo))
	// The third slot's branch name is invalid: git refuses it after two
	// worktrees were made.
	_, err := PrepareGroup(ctx, repo, "", []Slot{{Suffix: "cc", Label: "claude-code"}, {Suffix: "codex", Label: "codex"}, {Suffix: "bad..name", Label: "bad..name"}})
	if err == nil || !strings.Contains(err.Error(), "slot 3 (bad..name)") {
		t.Fatalf("err = %v, want slot 3's git error", err)
	}
	after := gittest.Run(t, repo, "worktree", "list") + gittest.Run(t, repo, "branch", "-a")
	if before != after {
		t.Errorf("git state changed:\nbefore %s\nafter %s", before, after)
	}
	if now, _ := os.ReadDir(filepath.Dir(repo)); len(now) != len(entries) {
		t.Errorf("directories beside the repo: %d, want %d", len(now), len(entries))
	}
}

func TestPrepareGroupDirtyBaseAndNotARepo(t *testing.T) {
	repo := gittest.NewRepo(t)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ie *InputError
	if _, err := PrepareGroup(ctx, repo, "", []Slot{{Suffix: "codex", Label: "codex"}, {Suffix: "pi", Label: "pi"}}); !errors.As(err, &ie) || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Errorf("dirty HEAD: err = %v", err)
	}
	// Naming the base explicitly is fine: the user chose the commit.
	g, err := PrepareGroup(ctx, repo, "main", []Slot{{Suffix: "codex", Label: "codex"}, {Suffix: "pi", Label: "pi"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Slots) != 2 || !strings.HasPrefix(g.Slots[0].Branch, "try/"+g.ID+"/codex") {
		t.Errorf("slots %+v", g.Slots)
	}
	if _, err := PrepareGroup(ctx, t.TempDir(), "", []Slot{{Suffix: "codex", Label: "codex"}}); !errors.As(err, &ie) || !strings.Contains(err.Error(), "not a git repository") {
		t.Errorf("not a repo: err = %v", err)
	}
}

func TestPrepareGroupConcurrent(t *testing.T) {
	repo := gittest.NewRepo(t)
	var wg sync.WaitGroup
	groups := make([]*Group, 2)
	errs := make([]error, 2)
	for i := range groups {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			groups[i], errs[i] = PrepareGroup(context.Background(), repo, "main", []Slot{{Suffix: "cc-a", Label: "claude-code"}, {Suffix: "cc-b", Label: "claude-code"}})
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			// git serialises worktree adds on its own lock files; a loser
			// must have cleaned up after itself.
			t.Logf("group %d: %v", i, err)
		}
	}
	if errs[0] == nil && errs[1] == nil && groups[0].ID == groups[1].ID {
		t.Fatalf("two launches got one group id %s", groups[0].ID)
	}
	wts, err := ListWorktrees(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	want := 1
	for i := range groups {
		if errs[i] == nil {
			want += 2
		}
	}
	if len(wts) != want {
		t.Errorf("%d worktrees, want %d: %+v", len(wts), want, wts)
	}
	seen := map[string]bool{}
	for _, w := range wts {
		if seen[w.Path] {
			t.Errorf("worktree %s listed twice", w.Path)
		}
		seen[w.Path] = true
	}
}

func TestDiffAndClean(t *testing.T) {
	repo := gittest.NewRepo(t)
	ctx := context.Background()
	g, err := PrepareGroup(ctx, repo, "", []Slot{{Suffix: "codex", Label: "codex"}})
	if err != nil {
		t.Fatal(err)
	}
	wt := g.Slots[0].Path
	// A commit, an uncommitted edit and an untracked file.
	os.WriteFile(filepath.Join(wt, "a.txt"), []byte("1\n2\n3\n4\n"), 0o644)
	gittest.Run(t, wt, "commit", "-q", "-am", "agent commit")
	os.WriteFile(filepath.Join(wt, "a.txt"), []byte("1\n3\n4\n5\n"), 0o644)
	os.WriteFile(filepath.Join(wt, "new.txt"), []byte("x\n"), 0o644)
	d, err := Diff(ctx, wt, g.Base)
	if err != nil {
		t.Fatal(err)
	}
	want := ParseShortstat(gittest.Run(t, wt, "diff", "--shortstat", g.Base))
	if d.FilesChanged != 1 || d.Insertions != want.Insertions || d.Deletions != want.Deletions || want.Insertions != 2 || want.Deletions != 1 {
		t.Errorf("diff %+v, git says %+v", d, want)
	}
	if len(d.Untracked) != 1 || d.Untracked[0] != "new.txt" {
		t.Errorf("untracked %v", d.Untracked)
	}
	wts, _ := ListWorktrees(ctx, repo)
	if len(wts) != 2 || !wts[0].Main || wts[1].Group != g.ID || !wts[1].Dirty {
		t.Fatalf("worktrees %+v", wts)
	}
	var de *DirtyError
	if err := CleanWorktree(ctx, wts[1], false, true); !errors.As(err, &de) || !strings.Contains(err.Error(), "new.txt") {
		t.Fatalf("clean of a dirty worktree: %v", err)
	}
	if _, err := os.Stat(wt); err != nil {
		t.Fatal("refused clean removed the worktree")
	}
	if err := CleanWorktree(ctx, wts[0], true, false); err == nil {
		t.Fatal("removed the main worktree")
	}
	// Committed but unmerged: -d refuses, the worktree goes, the branch stays.
	gittest.Run(t, wt, "checkout", "-q", "--", "a.txt")
	os.Remove(filepath.Join(wt, "new.txt"))
	err = CleanWorktree(ctx, wts[1], false, true)
	if err == nil || !strings.Contains(err.Error(), "branch stays") {
		t.Fatalf("unmerged branch: %v", err)
	}
	if out := gittest.Run(t, repo, "branch", "--list", g.Slots[0].Branch); out == "" {
		t.Error("unmerged branch deleted without --force")
	}
}
