// Package gittest runs real git for tests: an identity and no user or system
// config, so a commit works on any machine, and a failed command fails the test.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Env is what every test's git needs beyond os.Environ(): an author and
// committer, and no system config.
var Env = []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
	"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1"}

// Run runs git with args in dir and returns its combined output; any failure
// fails the test with that output.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), Env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// NewRepo makes a repository "repo" on branch main with one commit (a.txt
// holding "1\n2\n3\n") in its own temp dir, so worktrees can go beside it. The
// path has its symlinks resolved, as git reports it. Without git the test skips.
func NewRepo(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	Run(t, dir, "init", "-q", "-b", "main", repo)
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("1\n2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Run(t, repo, "add", ".")
	Run(t, repo, "commit", "-q", "-m", "init")
	return repo
}
