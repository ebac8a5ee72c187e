package main

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/gittest"

	"github.com/agentctl/agentctl/launch/worktree"
)

// acceptEnv is a state dir, a repository and a two-slot group of the fake
// Claude, each slot having appended its model's name to README and written
// new-<model>.txt (uncommitted).
type acceptEnv struct {
	t           *testing.T
	dir, repo   string
	env         []string
	group, base string
	ids         map[string]string // slot → session id
	worktrees   map[string]string // slot → worktree
}

func newAcceptEnv(t *testing.T) *acceptEnv {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	if _, err := exec.LookPath("agentctl"); err != nil {
		t.Skip("agentctl is not on PATH (testscript.Main puts it there)")
	}
	dir := t.TempDir()
	fake, _ := filepath.Abs("launch/testdata/fake-claude")
	a := &acceptEnv{t: t, dir: dir, repo: filepath.Join(dir, "repo")}
	a.env = append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "AGENTCTL_HOME="+filepath.Join(dir, "state"),
		"AGENTCTL_CLAUDE_BIN="+fake)
	a.env = append(a.env, gittest.Env...)
	os.MkdirAll(filepath.Join(dir, "home"), 0o755)
	a.git(dir, "init", "-q", "-b", "main", "repo")
	os.WriteFile(filepath.Join(a.repo, "README"), []byte("hello\n"), 0o644)
	a.git(a.repo, "add", "README")
	a.git(a.repo, "commit", "-q", "-m", "init")
	a.base = a.git(a.repo, "rev-parse", "HEAD")
	if out, code := a.run(nil, "launch", "--cwd", a.repo, "--adapter", "claude-code", "--model", "m1,m2",
		"--env", "FAKE_EDIT=1", "--wait", "-p", "edit the README"); code != 0 {
		t.Fatalf("launch: exit %d\n%s", code, out)
	}
	out, code := a.run(nil, "list", "-a", "--json")
	if code != 0 {
		t.Fatalf("list: %s", out)
	}
	var ls []struct{ Group string }
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) == 0 {
		t.Fatalf("list: %v %s", err, out)
	}
	a.group = ls[0].Group
	out, _ = a.run(nil, "compare", "--json", a.group)
	var cmp struct {
		Slots []struct{ Slot, ID, Worktree string }
	}
	if err := json.Unmarshal([]byte(out), &cmp); err != nil || len(cmp.Slots) != 2 {
		t.Fatalf("compare: %v %s", err, out)
	}
	a.ids, a.worktrees = map[string]string{}, map[string]string{}
	for _, s := range cmp.Slots {
		a.ids[s.Slot], a.worktrees[s.Slot] = s.ID, s.Worktree
	}
	return a
}

func (a *acceptEnv) git(dir string, args ...string) string {
	a.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, a.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		a.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// run runs agentctl and returns its combined output and exit code.
func (a *acceptEnv) run(extra []string, args ...string) (string, int) {
	a.t.Helper()
	cmd := exec.Command("agentctl", args...)
	cmd.Env = append(append([]string(nil), a.env...), extra...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		a.t.Fatal(err)
	}
	return string(out), 0
}

// SIGKILL of accept at random points, over and over: the target branch is
// always either exactly as before or exactly the accepted commit, the slot's
// work is never lost, and a re-run completes.
func TestAcceptCrashSafety(t *testing.T) {
	a := newAcceptEnv(t)
	wt := a.worktrees["cc-m1"]
	ctx := context.Background()
	slotTree, err := worktree.WorktreeTree(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	// What the accepted commit must hold: the base plus the slot's work.
	// CI runs the full 24 rounds (every step killed 6 times, half of them
	// with git killed mid-step); -short a quick 8.
	rounds := 24
	if testing.Short() {
		rounds = 8
	}
	killedMidway := 0
	reached := map[string]int{} // the last step a killed run reached
	for i := 0; i < rounds; i++ {
		// Back to the start: the target at the base, the slot's work uncommitted.
		a.git(a.repo, "reset", "-q", "--hard", a.base)
		a.git(a.repo, "clean", "-qfd")
		a.git(wt, "reset", "-q", "--mixed", a.base)
		cmd := exec.Command("agentctl", "accept", a.ids["cc-m1"])
		cmd.Env = append(append([]string(nil), a.env...), "AGENTCTL_TEST_ACCEPT_STEP_DELAY=40ms")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for the k-th step (leftovers, commit, update, journal), then
		// kill within its delay or in the git work that follows.
		steps := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if name, ok := strings.CutPrefix(sc.Text(), "agentctl: test: step "); ok {
					steps <- name
				}
			}
			close(steps)
		}()
		var last string
		k := 1 + i%4
	wait:
		for n := 0; n < k; n++ {
			select {
			case name, ok := <-steps:
				if !ok {
					break wait
				}
				last = name
			case <-time.After(60 * time.Second):
				t.Fatalf("round %d: accept never reached step %d", i, n+1)
			}
		}
		time.Sleep(time.Duration(rand.IntN(80)) * time.Millisecond)
		// Half the rounds kill only accept (its git child finishes its
		// step), half the whole process group (git dies mid-step too).
		pid := cmd.Process.Pid
		if i/4%2 == 1 {
			pid = -pid
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		err = cmd.Wait()
		for name := range steps {
			last = name
		}
		if err != nil {
			killedMidway++
			reached[last]++
		}
		time.Sleep(50 * time.Millisecond) // an orphaned git child finishes
		head := a.git(a.repo, "rev-parse", "main")
		if head != a.base {
			if p := a.git(a.repo, "rev-parse", "main^"); p != a.base {
				t.Fatalf("round %d: main is %s, whose parent is %s, not the base", i, head, p)
			}
			if tr := a.git(a.repo, "rev-parse", "main^{tree}"); tr != slotTree {
				t.Fatalf("round %d: main's tree %s is not the slot's %s: a half-applied change", i, tr, slotTree)
			}
		}
		if tr, err := worktree.WorktreeTree(ctx, wt); err != nil || tr != slotTree {
			t.Fatalf("round %d: the slot's work changed: tree %s (%v), want %s", i, tr, err, slotTree)
		}
		if _, err := os.Stat(filepath.Join(a.repo, ".git", "MERGE_HEAD")); err == nil {
			t.Fatalf("round %d: MERGE_HEAD left behind", i)
		}
		// A re-run completes: it waits for a git the killed run left working,
		// removes the lock files a killed git left, and takes the slot.
		if out, code := a.run(nil, "accept", a.ids["cc-m1"]); code != 0 {
			t.Fatalf("round %d: re-run: exit %d\n%s", i, code, out)
		}
		if locks := gitLocks(t, filepath.Join(a.repo, ".git")); len(locks) > 0 {
			t.Fatalf("round %d: git lock files left after the re-run (every later git command there refuses): %v", i, locks)
		}
		if p := a.git(a.repo, "rev-parse", "main^"); p != a.base {
			t.Fatalf("round %d: after the re-run main^ is %s, not the base", i, p)
		}
		if tr := a.git(a.repo, "rev-parse", "main^{tree}"); tr != slotTree {
			t.Fatalf("round %d: after the re-run main's tree is %s, want %s", i, tr, slotTree)
		}
		if st := a.git(a.repo, "status", "--porcelain"); st != "" {
			t.Fatalf("round %d: the target is not clean after the re-run:\n%s", i, st)
		}
	}
	t.Logf("%d of %d runs were killed before they finished; the last step they reached: %v", killedMidway, rounds, reached)
	if killedMidway < rounds/2 || reached["update"]+reached["journal"] == 0 {
		t.Errorf("only %d of %d runs were killed before they finished; the test does not test much", killedMidway, rounds)
	}
}

// gitLocks lists the lock files under a git directory.
func gitLocks(t *testing.T, gitDir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(gitDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".lock") {
			out = append(out, strings.TrimPrefix(p, gitDir+"/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
