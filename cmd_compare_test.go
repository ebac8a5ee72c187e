package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/gittest"

	"github.com/agentctl/agentctl/launch/worktree"
	"github.com/agentctl/agentctl/locks"
)

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
	gittest.Run(t, dir, "init", "-q", "-b", "main", repo)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	gittest.Run(t, repo, "add", ".")
	gittest.Run(t, repo, "commit", "-q", "-m", "init")
	before := gittest.Run(t, repo, "worktree", "list") + gittest.Run(t, repo, "branch")
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
		// The kill does not reach a `git worktree add` the launch had started:
		// until it finishes writing its admin files git refuses to list (seen
		// in CI: "failed to read .git/worktrees/…/commondir"), so ask again.
		var wts []worktree.Worktree
		var err error
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if wts, err = worktree.ListWorktrees(context.Background(), repo); err == nil || time.Now().After(end) {
				break
			}
		}
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
		for _, b := range strings.Fields(strings.ReplaceAll(gittest.Run(t, repo, "branch", "--format=%(refname:short)"), "\n", " ")) {
			if g := worktree.GroupOfBranch(b); g != "" {
				groups[g] = true
			}
		}
		for g := range groups {
			if out, errOut, code := c.run("worktree", "clean", "--force", "--delete-branch", g, "--repo", repo); code != 0 {
				t.Fatalf("after a kill at %dms: clean %s: exit %d\n%s%s", delay, g, code, out, errOut)
			}
		}
		if after := gittest.Run(t, repo, "worktree", "list") + gittest.Run(t, repo, "branch"); after != before {
			t.Fatalf("after a kill at %dms and clean: git state\n%s\nwant\n%s", delay, after, before)
		}
		t.Logf("kill at %dms: %d group(s) left, cleaned", delay, len(groups))
	}
}

// Two group launches at once against one repository: two groups, each slot
// its own worktree and branch, none clobbered.
func TestTwoGroupLaunchesAtOnce(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	c := newCLI(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	repo := filepath.Join(dir, "repo")
	gittest.Run(t, dir, "init", "-q", "-b", "main", repo)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	gittest.Run(t, repo, "add", ".")
	gittest.Run(t, repo, "commit", "-q", "-m", "init")
	outs := make([]string, 2)
	done := make(chan int)
	for i := range outs {
		go func(i int) {
			defer func() { done <- i }()
			out, errOut, code := c.run("launch", "--json", "--cwd", repo, "--adapter", "claude-code", "--model", "a,b", "-p", "x")
			if code != 0 {
				t.Errorf("launch %d: exit %d %s", i, code, errOut)
			}
			outs[i] = out
		}(i)
	}
	<-done
	<-done
	groups := map[string]bool{}
	cwds := map[string]bool{}
	for _, out := range outs {
		for _, l := range strings.Split(out, "\n") {
			if g := strings.TrimSpace(l); strings.HasPrefix(g, `"group": "`) {
				groups[strings.Trim(strings.TrimPrefix(g, `"group": `), `",`)] = true
			}
			if g := strings.TrimSpace(l); strings.HasPrefix(g, `"cwd": "`) {
				cwds[g] = true
			}
		}
	}
	if len(groups) != 2 || len(cwds) != 4 {
		t.Fatalf("groups %v, cwds %v; want 2 groups of 2 distinct worktrees\n%s", groups, cwds, outs)
	}
	wts, err := worktree.ListWorktrees(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(wts) != 5 {
		t.Errorf("%d worktrees, want 5 (main + 4)", len(wts))
	}
	for _, w := range wts[1:] {
		if !groups[w.Group] || !strings.HasPrefix(w.Branch, "try/"+w.Group+"/cc-") {
			t.Errorf("worktree %+v", w)
		}
	}
}

// A group whose 3rd slot's directory is locked launches nothing: the lock
// refusal aborts the whole group before any agent starts, and git's worktrees
// and branches, the launch records and the locks are exactly as before.
func TestGroupLaunchLockedSlotLaunchesNothing(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	c := newCLI(t)
	for _, kv := range c.env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	repo := filepath.Join(dir, "repo")
	gittest.Run(t, dir, "init", "-q", "-b", "main", repo)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	gittest.Run(t, repo, "add", ".")
	gittest.Run(t, repo, "commit", "-q", "-m", "init")
	orig := worktree.NewGroupID
	worktree.NewGroupID = func() string { return "g-abc123" }
	t.Cleanup(func() { worktree.NewGroupID = orig })
	// The path the 3rd slot (cc-c) would run in and lock, held by someone else.
	st := c.store()
	exp := time.Now().Add(time.Hour)
	if _, err := locks.Acquire(st, locks.Lock{Directory: filepath.Join(dir, "repo-try-g-abc123-cc-c"), Type: locks.Manual,
		LockedBy: "someone", Reason: "reviewing", ExpiresAt: &exp}, false); err != nil {
		t.Fatal(err)
	}
	gitBefore := gittest.Run(t, repo, "worktree", "list") + gittest.Run(t, repo, "branch", "-a")
	locksBefore, _ := os.ReadFile(filepath.Join(c.state, locks.File))
	dirBefore, _ := os.ReadDir(dir)

	var out, errOut bytes.Buffer
	h := &host{IOStreams: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, getenv: os.Getenv, now: time.Now,
		executable: func() (string, error) { return c.bin, nil }}
	code := run(context.Background(), []string{"agentctl", "launch", "--cwd", repo, "--adapter", "claude-code", "--model", "a,b,c", "-p", "x"}, h)
	c.settle()
	t.Logf("exit %d: %s", code, errOut.String())
	if code != exitLocked || !strings.Contains(errOut.String(), "slot 3 (claude-code)") || !strings.Contains(errOut.String(), "nothing was launched") ||
		strings.Count(errOut.String(), "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want %d, one line naming slot 3 and saying nothing was launched\nstdout: %s", code, errOut.String(), exitLocked, out.String())
	}
	if after := gittest.Run(t, repo, "worktree", "list") + gittest.Run(t, repo, "branch", "-a"); after != gitBefore {
		t.Errorf("git worktrees and branches:\n%s\nwant as before:\n%s", after, gitBefore)
	}
	if recs, err := st.ReadLaunches(); err != nil || len(recs) != 0 {
		t.Errorf("launch records %+v (%v); want none", recs, err)
	}
	if locksAfter, _ := os.ReadFile(filepath.Join(c.state, locks.File)); !bytes.Equal(locksAfter, locksBefore) {
		t.Errorf("locks.json:\n%s\nwant as before:\n%s", locksAfter, locksBefore)
	}
	if dirAfter, _ := os.ReadDir(dir); len(dirAfter) != len(dirBefore) {
		t.Errorf("%s holds %d entries, %d before: a worktree directory was left", dir, len(dirAfter), len(dirBefore))
	}
}
