package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/launch"
)

func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// A group launch SIGKILLed at varying moments (while it makes worktrees,
// between them and the agents, while they start) leaves nothing that
// `worktree list` cannot show and `worktree clean` cannot remove.
func TestKilledGroupLaunchIsCleanable(t *testing.T) {
	if testing.Short() {
		t.Skip("kills launches at several moments; slow")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	c := newCLI(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	repo := filepath.Join(dir, "repo")
	gitCmd(t, dir, "init", "-q", "-b", "main", repo)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	gitCmd(t, repo, "add", ".")
	gitCmd(t, repo, "commit", "-q", "-m", "init")
	before := gitCmd(t, repo, "worktree", "list") + gitCmd(t, repo, "branch")
	for _, delay := range []time.Duration{5, 40, 150, 200, 250, 300, 350, 400, 500, 700} {
		cmd := exec.Command(c.bin, "launch", "--cwd", repo, "--adapter", "claude-code", "--model", "a,b,c", "-p", "x")
		cmd.Env = c.env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		c.settle()
		// Whatever is left is listed, under its group, and cleaned by group id.
		wts, err := launch.ListWorktrees(context.Background(), repo)
		if err != nil {
			t.Fatal(err)
		}
		groups := map[string]bool{}
		for _, w := range wts[1:] {
			if w.Group == "" {
				t.Fatalf("after a kill at %dms: worktree %s has no group", delay, w.Path)
			}
			groups[w.Group] = true
		}
		for _, b := range strings.Fields(strings.ReplaceAll(gitCmd(t, repo, "branch", "--format=%(refname:short)"), "\n", " ")) {
			if g := launch.GroupOfBranch(b); g != "" {
				groups[g] = true
			}
		}
		for g := range groups {
			if out, errOut, code := c.run("worktree", "clean", "--force", "--delete-branch", g, "--repo", repo); code != 0 {
				t.Fatalf("after a kill at %dms: clean %s: exit %d\n%s%s", delay, g, code, out, errOut)
			}
		}
		if after := gitCmd(t, repo, "worktree", "list") + gitCmd(t, repo, "branch"); after != before {
			t.Fatalf("after a kill at %dms and clean: git state\n%s\nwant\n%s", delay, after, before)
		}
		t.Logf("kill at %dms: %d group(s) left, cleaned", delay, len(groups))
	}
}
