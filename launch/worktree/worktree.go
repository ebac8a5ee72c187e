package worktree

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// InputError is a problem with what the user asked for (a branch that exists,
// a directory that is no repository): the command exits 2, as for a
// launch.InputError.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// NewGroupID returns a launch group id: "g-" + 6 hex characters (README
// "Comparing agents"). A variable so that tests can name the group, and with
// it every path its slots lock.
var NewGroupID = func() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "g-" + hex.EncodeToString(b[:])
}

// groupIDRe is what NewGroupID makes; anything else is not a group id.
var groupIDRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^g-[0-9a-f]{6}$`) })

// IsGroupID says whether s looks like a launch group id.
func IsGroupID(s string) bool { return groupIDRe().MatchString(s) }

// GroupBranchPrefix is the prefix of every branch a group made.
func GroupBranchPrefix(group string) string { return "try/" + group + "/" }

// git runs git in dir and returns its trimmed stdout.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := gitRaw(ctx, dir, args...)
	return strings.TrimSpace(out), err
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

// Worktree is one entry of `git worktree list --porcelain`, with what agentctl
// knows about it.
type Worktree struct {
	Path     string   `json:"path"`
	Head     string   `json:"head,omitempty"`
	Branch   string   `json:"branch,omitempty"` // without refs/heads/
	Main     bool     `json:"main"`
	Detached bool     `json:"detached,omitempty"`
	Locked   bool     `json:"locked,omitempty"`
	Prunable bool     `json:"prunable,omitempty"` // its directory is gone
	Group    string   `json:"group,omitempty"`    // from a try/<group>/ branch
	Dirty    bool     `json:"dirty"`
	Changes  []string `json:"changes,omitempty"` // `git status --porcelain` lines
}

// RepoTop is the top level of the repository (or worktree) dir belongs to.
func RepoTop(ctx context.Context, dir string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", &InputError{"worktree commands need git on $PATH"}
	}
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", &InputError{fmt.Sprintf("%s is not a git repository (%v)", dir, err)}
	}
	return top, nil
}

// GroupOfBranch returns the group id of a try/<group>/<suffix> branch, or "".
func GroupOfBranch(branch string) string {
	rest, ok := strings.CutPrefix(branch, "try/")
	if !ok {
		return ""
	}
	g, _, ok := strings.Cut(rest, "/")
	if !ok || !IsGroupID(g) {
		return ""
	}
	return g
}

// ListWorktrees lists the worktrees of the repository dir belongs to, the main
// one first, each with its uncommitted changes.
func ListWorktrees(ctx context.Context, dir string) ([]Worktree, error) {
	top, err := RepoTop(ctx, dir)
	if err != nil {
		return nil, err
	}
	out, err := git(ctx, top, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var wts []Worktree
	for _, block := range strings.Split(out, "\n\n") {
		var w Worktree
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, " ")
			switch k {
			case "worktree":
				w.Path = v
			case "HEAD":
				w.Head = v
			case "branch":
				w.Branch = strings.TrimPrefix(v, "refs/heads/")
			case "detached":
				w.Detached = true
			case "locked":
				w.Locked = true
			case "prunable":
				w.Prunable = true
			}
		}
		if w.Path == "" {
			continue
		}
		w.Main = len(wts) == 0 // git lists the main worktree first
		w.Group = GroupOfBranch(w.Branch)
		if w.Group == "" && len(wts) > 0 {
			// A worktree git was still making (killed launch) has no branch
			// yet; its path says which group it belongs to.
			w.Group = groupOfPath(wts[0].Path, w.Path)
		}
		if _, err := os.Stat(w.Path); err != nil {
			// Its directory is gone (removed by hand, or a launch killed
			// while git made it): only the entry is left, for prune.
			w.Prunable = true
		}
		if !w.Prunable {
			if ch, err := Changes(ctx, w.Path); err == nil {
				w.Changes, w.Dirty = ch, len(ch) > 0
			}
		}
		wts = append(wts, w)
	}
	return wts, nil
}

// Changes are a worktree's uncommitted changes, untracked files included, as
// `git status --porcelain` lines.
func Changes(ctx context.Context, path string) ([]string, error) {
	return porcelain(ctx, path, "--untracked-files=all")
}

// porcelain is `git status --porcelain <untracked>` as non-empty lines.
func porcelain(ctx context.Context, path, untracked string) ([]string, error) {
	out, err := gitRaw(ctx, path, "status", "--porcelain", untracked)
	if err != nil {
		return nil, err
	}
	var ch []string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) != "" {
			ch = append(ch, l)
		}
	}
	return ch, nil
}

// gitCmd is every git agentctl runs. Optional locks are off: a reading
// command (status) then never takes the index lock to refresh it, so agentctl
// killed while it only reads leaves no lock behind.
func gitCmd(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	return cmd
}

// noAutoMaintenance goes before a git command that writes commits or moves a
// branch: git would otherwise start its auto maintenance after it, which a
// kill of agentctl can cut short holding objects/maintenance.lock. The user's
// own next git command runs it.
func noAutoMaintenance() []string {
	return []string{"-c", "maintenance.auto=false", "-c", "gc.auto=0"}
}

// gitRaw is git without trimming stdout (porcelain lines start with spaces);
// errors carry git's stderr.
func gitRaw(ctx context.Context, dir string, args ...string) (string, error) {
	if len(args) > 1 && args[0] == "worktree" && args[1] != "list" {
		unlock, err := lockWorktrees(ctx, dir)
		if err != nil {
			return "", err
		}
		defer unlock()
	}
	cmd := gitCmd(ctx, dir, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return out.String(), nil
}

// lockWorktrees serialises the worktree changes of one repository across
// processes. Two `git worktree add` at once in one repository can fail: one
// reads the other's half-made .git/worktrees/<name> ("failed to read
// .../commondir"), which two group launches started together hit. The flock
// lives in the repository's common git dir, so every worktree of it shares it.
func lockWorktrees(ctx context.Context, dir string) (func(), error) {
	common, err := gitPlain(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil, err
	}
	fl := flock.New(filepath.Join(strings.TrimSpace(common), "agentctl-worktrees.flock"))
	ok, err := fl.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		return nil, fmt.Errorf("locking the worktrees of %s: %v", dir, err)
	}
	return func() { _ = fl.Unlock() }, nil
}

// gitPlain runs git without taking the worktree lock.
func gitPlain(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := gitCmd(ctx, dir, args...)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// DirtyError is a worktree clean refused because work would be lost.
type DirtyError struct {
	Path    string
	Changes []string
}

func (e *DirtyError) Error() string {
	const max = 5
	shown := e.Changes
	more := ""
	if len(shown) > max {
		more = fmt.Sprintf(", and %d more", len(shown)-max)
		shown = shown[:max]
	}
	trimmed := make([]string, len(shown))
	for i := range shown {
		trimmed[i] = strings.TrimSpace(shown[i])
	}
	shown = trimmed
	return fmt.Sprintf("%s has %d uncommitted change(s) that removing it would lose (%s%s); commit them, or pass --force to discard them",
		e.Path, len(e.Changes), strings.Join(shown, "; "), more)
}

// CleanWorktree removes a linked worktree (never the main one). It refuses
// uncommitted changes (untracked files included) unless force. With
// deleteBranch the branch goes too: `git branch -d`, or `-D` with force.
func CleanWorktree(ctx context.Context, w Worktree, force, deleteBranch bool) error {
	if w.Main {
		return &InputError{fmt.Sprintf("%s is the repository's main worktree; agentctl never removes it", w.Path)}
	}
	top := w.Path
	if common, err := git(ctx, w.Path, "rev-parse", "--path-format=absolute", "--git-common-dir"); err == nil {
		top = filepath.Dir(common)
	}
	if !w.Prunable {
		ch, err := Changes(ctx, w.Path)
		if err != nil {
			return err
		}
		if len(ch) > 0 && !force {
			return &DirtyError{Path: w.Path, Changes: ch}
		}
		args := []string{"worktree", "remove", w.Path}
		if force {
			args = []string{"worktree", "remove", "--force", w.Path}
		}
		if _, err := git(ctx, top, args...); err != nil {
			return err
		}
	} else if _, err := git(ctx, top, "worktree", "prune"); err != nil {
		return err
	}
	if deleteBranch && w.Branch != "" {
		flag := "-d"
		if force {
			flag = "-D"
		}
		if _, err := git(ctx, top, "branch", flag, w.Branch); err != nil {
			return fmt.Errorf("worktree %s removed, but its branch stays: %v (merge it first, or --force to delete it with -D)", w.Path, err)
		}
	}
	return nil
}

// DiffStats is a worktree's change against a base commit.
type DiffStats struct {
	// FilesChanged, Insertions, Deletions are `git diff --shortstat BASE` in the
	// worktree: tracked files, committed and uncommitted alike.
	FilesChanged int `json:"files_changed"`
	Insertions   int `json:"insertions"`
	Deletions    int `json:"deletions"`
	// Untracked are files the agent created but never added (git diff does not
	// count them): their paths, not ignored by .gitignore.
	Untracked []string `json:"untracked,omitempty"`
}

var shortstatRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+) (file|insertion|deletion)`) })

// ParseShortstat reads git's "N files changed, N insertions(+), N deletions(-)".
func ParseShortstat(s string) DiffStats {
	var d DiffStats
	for _, m := range shortstatRe().FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(m[1])
		switch m[2] {
		case "file":
			d.FilesChanged = n
		case "insertion":
			d.Insertions = n
		case "deletion":
			d.Deletions = n
		}
	}
	return d
}

// Diff measures the worktree at path against base.
func Diff(ctx context.Context, path, base string) (DiffStats, error) {
	out, err := git(ctx, path, "diff", "--shortstat", base)
	if err != nil {
		return DiffStats{}, err
	}
	d := ParseShortstat(out)
	un, err := git(ctx, path, "ls-files", "--others", "--exclude-standard")
	if err != nil {
		return d, err
	}
	for _, l := range strings.Split(un, "\n") {
		if l != "" {
			d.Untracked = append(d.Untracked, l)
		}
	}
	return d, nil
}

// GroupBase is the commit a group's branches started from when no launch
// record says it any more: the merge base of all of them.
func GroupBase(ctx context.Context, top string, branches []string) (string, error) {
	return git(ctx, top, append([]string{"merge-base", "--octopus", "HEAD"}, branches...)...)
}

// GroupBranches lists the try/<group>/ branches of the repository at top.
func GroupBranches(ctx context.Context, top, group string) ([]string, error) {
	out, err := git(ctx, top, "for-each-ref", "--format=%(refname:short)", "refs/heads/"+GroupBranchPrefix(group))
	if err != nil {
		return nil, err
	}
	var bs []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" {
			bs = append(bs, l)
		}
	}
	return bs, nil
}

// DeleteBranch deletes a branch with `git branch -d`, or -D with force.
func DeleteBranch(ctx context.Context, top, branch string, force bool) error {
	flag := "-d"
	if force {
		flag = "-D"
	}
	_, err := git(ctx, top, "branch", flag, branch)
	return err
}

// groupOfPath returns the group of a <repo>-try-<group>-<suffix> path beside
// the main worktree, or "".
func groupOfPath(main, path string) string {
	if filepath.Dir(main) != filepath.Dir(path) {
		return ""
	}
	rest, ok := strings.CutPrefix(filepath.Base(path), filepath.Base(main)+"-try-")
	if !ok || len(rest) < 9 || rest[8] != '-' || !IsGroupID(rest[:8]) {
		return ""
	}
	return rest[:8]
}
