package launch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// git runs git in dir and returns its trimmed stdout; errors carry git's stderr.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// WorktreePath is where a single launch's worktree for branch goes: beside the
// repository, <repo>-<branch with / as ->.
func WorktreePath(top, branch string) string {
	return filepath.Join(filepath.Dir(top), filepath.Base(top)+"-"+strings.ReplaceAll(branch, "/", "-"))
}

// AddWorktree creates a new branch and its worktree for `launch --worktree REPO
// --branch B [--base-branch X]`; the base defaults to the repository's current
// HEAD. It returns the worktree's realpath.
func AddWorktree(ctx context.Context, repo, branch, base string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", &InputError{"--worktree needs git on $PATH"}
	}
	top, err := git(ctx, repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", &InputError{fmt.Sprintf("--worktree %s: not a git repository (%v)", repo, err)}
	}
	if _, err := git(ctx, top, "check-ref-format", "--branch", branch); err != nil {
		return "", &InputError{fmt.Sprintf("--branch %q: not a valid branch name", branch)}
	}
	if _, err := git(ctx, top, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		return "", &InputError{fmt.Sprintf("--branch %s already exists in %s; pick a new branch name", branch, top)}
	}
	path := WorktreePath(top, branch)
	if _, err := os.Stat(path); err == nil {
		return "", &InputError{fmt.Sprintf("worktree path %s already exists; remove it or pick another --branch", path)}
	}
	args := []string{"worktree", "add", "-b", branch, path}
	if base != "" {
		if _, err := git(ctx, top, "rev-parse", "--verify", "--quiet", base+"^{commit}"); err != nil {
			return "", &InputError{fmt.Sprintf("--base-branch %s: no such branch or commit in %s", base, top)}
		}
		args = append(args, base)
	}
	if _, err := git(ctx, top, args...); err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return path, nil
}

// RemoveWorktree undoes AddWorktree after a launch that never started.
func RemoveWorktree(ctx context.Context, path, branch string) error {
	top := filepath.Dir(path)
	common, err := git(ctx, path, "rev-parse", "--git-common-dir")
	if err == nil {
		if !filepath.IsAbs(common) {
			common = filepath.Join(path, common)
		}
		top = filepath.Dir(common)
	}
	if _, err := git(ctx, top, "worktree", "remove", "--force", path); err != nil {
		return err
	}
	_, err = git(ctx, top, "branch", "-D", branch)
	return err
}
