package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/clock"
	"github.com/agentctl/agentctl/proc"
)

// Accept methods (README "Picking the winner").
const (
	MethodSquash = "squash"
	MethodMerge  = "merge"
	MethodRebase = "rebase"
)

// identityArgs are the -c options that give git a committer when the user has
// none configured: agentctl's own commits (leftovers, the squash) must never
// fail for want of user.email.
func identityArgs(ctx context.Context, dir string) []string {
	if _, err := git(ctx, dir, "var", "GIT_COMMITTER_IDENT"); err == nil {
		if _, err := git(ctx, dir, "var", "GIT_AUTHOR_IDENT"); err == nil {
			return nil
		}
	}
	return []string{"-c", "user.name=agentctl", "-c", "user.email=agentctl@localhost"}
}

// gitCode runs git and returns stdout, the exit code and stderr; err is set only
// when git could not be run at all.
func gitCode(ctx context.Context, dir string, args ...string) (string, int, string, error) {
	cmd := gitCmd(ctx, dir, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode(), strings.TrimSpace(errb.String()), nil
	}
	if err != nil {
		return "", -1, "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), 0, strings.TrimSpace(errb.String()), nil
}

// CommitLeftovers commits everything uncommitted in the worktree at path on its
// branch — tracked changes and untracked files, never ignored ones — with msg.
// It returns the new commit, or "" when there was nothing to commit. Hooks do
// not run: this is a snapshot of the agent's work, not a user's commit.
//
// A marker in the worktree's git directory says a commit is under way, so
// that git's lock files left by a kill mid-commit are recognised as such and
// removed by the next run (they would refuse every git command there).
func (d Procs) CommitLeftovers(ctx context.Context, path, msg string) (string, error) {
	marker, err := gitPath(ctx, path, "AGENTCTL_LEFTOVERS")
	if err != nil {
		return "", err
	}
	if isFile(marker) {
		if err := d.waitForGit(ctx, path); err != nil {
			return "", err
		}
		removeLocksSince(ctx, path, marker)
		os.Remove(marker)
	}
	if err := inProgress(ctx, path); err != nil {
		return "", err
	}
	ch, err := Changes(ctx, path)
	if err != nil {
		return "", err
	}
	if len(ch) == 0 {
		return "", nil
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return "", err
	}
	defer os.Remove(marker)
	if _, err := git(ctx, path, "add", "-A"); err != nil {
		return "", err
	}
	// Only submodule or mode noise may leave nothing staged.
	if _, code, _, err := gitCode(ctx, path, "diff", "--cached", "--quiet"); err != nil || code == 0 {
		return "", err
	}
	args := append(append(identityArgs(ctx, path), noAutoMaintenance()...), "commit", "-q", "--no-verify", "-m", msg)
	if _, err := git(ctx, path, args...); err != nil {
		return "", err
	}
	return git(ctx, path, "rev-parse", "HEAD")
}

// inProgress refuses a worktree in the middle of a merge, rebase or cherry-pick:
// committing or integrating now would mix two operations.
func inProgress(ctx context.Context, path string) error {
	names := []string{"MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD"}
	paths, err := gitPaths(ctx, path, names...)
	if err != nil {
		return err
	}
	for i, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return &GitBusyError{Path: path, What: names[i]}
		}
	}
	return nil
}

// gitPaths resolves names inside the git directory of the worktree at dir
// (per-worktree or common, as git places them) to absolute paths, in one git
// run.
func gitPaths(ctx context.Context, dir string, names ...string) ([]string, error) {
	args := []string{"rev-parse", "--path-format=absolute"}
	for _, n := range names {
		args = append(args, "--git-path", n)
	}
	out, err := git(ctx, dir, args...)
	if err != nil {
		return nil, err
	}
	paths := strings.Split(out, "\n")
	if len(paths) != len(names) {
		return nil, fmt.Errorf("git rev-parse --git-path: %d paths for %d names", len(paths), len(names))
	}
	return paths, nil
}

// gitPath is gitPaths for one name.
func gitPath(ctx context.Context, dir, name string) (string, error) {
	ps, err := gitPaths(ctx, dir, name)
	if err != nil {
		return "", err
	}
	return ps[0], nil
}

// GitBusyError is a worktree with a git operation in progress.
type GitBusyError struct{ Path, What string }

func (e *GitBusyError) Error() string {
	how := "git merge --abort"
	switch {
	case strings.HasPrefix(e.What, "rebase"):
		how = "git rebase --abort"
	case e.What == "CHERRY_PICK_HEAD":
		how = "git cherry-pick --abort"
	case e.What == "REVERT_HEAD":
		how = "git revert --abort"
	}
	return fmt.Sprintf("%s has a git operation in progress (%s); finish it or run: git -C %s %s", e.Path, e.What, e.Path, strings.TrimPrefix(how, "git "))
}

// ConflictError is an accept that would conflict; nothing was changed.
type ConflictError struct {
	Branch, Into string
	Paths        []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s conflicts with %s in %s; nothing was changed. To resolve by hand: git merge %s (in the worktree of %s), fix the files, commit",
		e.Branch, e.Into, strings.Join(e.Paths, ", "), e.Branch, e.Into)
}

// AcceptPlan is one `accept`: bring Branch into Into, checked out at Target.
type AcceptPlan struct {
	Target  string // the worktree Into is checked out in
	Into    string // the target branch
	Branch  string // the slot's try branch
	Slot    string // the slot's worktree ("" once removed; --rebase needs it)
	Method  string // squash | merge | rebase
	Message string // the commit message (squash and merge)
	// Step, when set, is called before each step that changes something
	// (tests use it to kill accept between steps).
	Step func(name string)
}

// AcceptResult says what accept did.
type AcceptResult struct {
	Before string `json:"before"` // the target branch's commit before
	Commit string `json:"commit"` // the target branch's commit after
	// AlreadyIn: the branch's work was already in the target (a re-run after an
	// interrupted accept); nothing was changed.
	AlreadyIn bool `json:"already_in,omitempty"`
}

func (p AcceptPlan) step(name string) {
	if p.Step != nil {
		p.Step(name)
	}
}

// Accept integrates the slot's branch into the target branch where it is
// checked out. The new commit is made without touching any worktree (git
// merge-tree, commit-tree), so a conflict changes nothing; only the final
// fast-forward touches the target, and git refuses it before changing a file
// when it would overwrite something. The target branch is therefore always
// either exactly as before or exactly the accepted commit.
func Accept(ctx context.Context, p AcceptPlan) (AcceptResult, error) {
	var res AcceptResult
	before, err := git(ctx, p.Target, "rev-parse", "--verify", "refs/heads/"+p.Into)
	if err != nil {
		return res, err
	}
	res.Before, res.Commit = before, before
	if err := inProgress(ctx, p.Target); err != nil {
		return res, err
	}
	branchHead, err := git(ctx, p.Target, "rev-parse", "--verify", "refs/heads/"+p.Branch)
	if err != nil {
		return res, err
	}
	if _, code, _, _ := gitCode(ctx, p.Target, "merge-base", "--is-ancestor", branchHead, before); code == 0 {
		res.AlreadyIn = true
		return res, nil
	}
	var next string
	switch p.Method {
	case MethodSquash, MethodMerge, "":
		tree, conflicts, err := mergeTree(ctx, p.Target, before, branchHead)
		if err != nil {
			return res, err
		}
		if len(conflicts) > 0 {
			return res, &ConflictError{Branch: p.Branch, Into: p.Into, Paths: conflicts}
		}
		cur, err := git(ctx, p.Target, "rev-parse", before+"^{tree}")
		if err != nil {
			return res, err
		}
		if tree == cur && p.Method != MethodMerge {
			// The squash of an earlier, interrupted run already landed.
			res.AlreadyIn = true
			return res, nil
		}
		args := append(identityArgs(ctx, p.Target), "commit-tree", tree, "-p", before)
		if p.Method == MethodMerge {
			args = append(args, "-p", branchHead)
		}
		p.step("commit")
		next, err = gitStdin(ctx, p.Target, p.Message, append(args, "-F", "-")...)
		if err != nil {
			return res, err
		}
	case MethodRebase:
		if p.Slot == "" || !isDir(p.Slot) {
			return res, &InputError{fmt.Sprintf("--rebase replays %s in its worktree, which is gone; use --squash or --merge", p.Branch)}
		}
		if err := inProgress(ctx, p.Slot); err != nil {
			return res, err
		}
		p.step("rebase")
		_, code, _, err := gitCode(ctx, p.Slot, append(append(identityArgs(ctx, p.Slot), noAutoMaintenance()...), "rebase", "-q", before)...)
		if err != nil {
			return res, err
		}
		if code != 0 {
			paths, _ := git(ctx, p.Slot, "diff", "--name-only", "--diff-filter=U")
			_, _ = git(ctx, p.Slot, "rebase", "--abort")
			return res, &ConflictError{Branch: p.Branch, Into: p.Into, Paths: nonEmptyLines(paths)}
		}
		if next, err = git(ctx, p.Slot, "rev-parse", "HEAD"); err != nil {
			return res, err
		}
	default:
		return res, &InputError{fmt.Sprintf("unknown accept method %q (want squash, merge or rebase)", p.Method)}
	}
	p.step("update")
	// The fast-forward is the one step that writes files of the target; a
	// marker says what it was doing, so a run killed half-way through it is
	// recognised and undone by the next (RecoverAccept).
	marker, err := markerPath(ctx, p.Target)
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(marker, []byte(before+" "+next+"\n"), 0o644); err != nil {
		return res, err
	}
	// --ff-only: the target moved since we read it (another accept) is refused,
	// never merged a second time.
	if out, code, stderr, err := gitCode(ctx, p.Target, append(noAutoMaintenance(), "merge", "--ff-only", "-q", next)...); err != nil {
		os.Remove(marker)
		return res, err
	} else if code != 0 {
		os.Remove(marker)
		return res, &UpdateRefusedError{Into: p.Into, Target: p.Target, Git: strings.TrimSpace(out + "\n" + stderr)}
	}
	os.Remove(marker)
	res.Commit = next
	return res, nil
}

// UpdateRefusedError is git refusing the fast-forward of the target (an
// untracked file in the way, the branch moved meanwhile); nothing was changed.
type UpdateRefusedError struct{ Into, Target, Git string }

func (e *UpdateRefusedError) Error() string {
	return fmt.Sprintf("git refused to update %s in %s, nothing was changed: %s; move the files it names out of the way, then accept again", e.Into, e.Target, e.Git)
}

// markerPath is where Accept notes an update of the target in progress: in
// the target worktree's own git directory.
func markerPath(ctx context.Context, target string) (string, error) {
	return gitPath(ctx, target, "AGENTCTL_ACCEPT")
}

// RecoverAccept undoes what an accept killed while it fast-forwarded the target
// left: HEAD still at the old commit and some files already at the new
// version. It resets only when every changed file is exactly the old or the
// new version of a file the accept was changing — never someone's own edit —
// and reports whether it did.
//
// The killed accept's git may outlive it (accept alone was killed: git
// finishes the fast-forward as an orphan) or die with it, holding git's lock
// files (HEAD.lock, the branch's, the index's), which would refuse every later
// git command in the target. RecoverAccept waits for a git still working in
// the target, then removes the locks that git left: those made after the
// marker, when no git works there any more.
func (d Procs) RecoverAccept(ctx context.Context, target string) (bool, error) {
	marker, err := markerPath(ctx, target)
	if err != nil {
		return false, err
	}
	b, err := os.ReadFile(marker)
	if err != nil {
		return false, nil
	}
	f := strings.Fields(string(b))
	if err := d.waitForGit(ctx, target); err != nil {
		return false, err
	}
	head, herr := git(ctx, target, "rev-parse", "HEAD")
	if len(f) != 2 || herr != nil || (head != f[0] && head != f[1]) {
		// The target moved on since: the marker is stale, and so is anything
		// it could say about lock files.
		os.Remove(marker)
		return false, nil
	}
	removeLocksSince(ctx, target, marker)
	if head == f[1] {
		// Done: HEAD is the new commit.
		os.Remove(marker)
		return false, nil
	}
	before, next := f[0], f[1]
	changing := map[string]bool{}
	names, err := git(ctx, target, "diff", "--name-only", "--no-renames", before, next)
	if err != nil {
		return false, err
	}
	for _, n := range nonEmptyLines(names) {
		changing[n] = true
	}
	st, err := gitRaw(ctx, target, "status", "--porcelain", "--untracked-files=all", "--no-renames")
	if err != nil {
		return false, err
	}
	for _, l := range strings.Split(st, "\n") {
		if len(l) < 4 {
			continue
		}
		path := l[3:]
		if !changing[path] || !(oneOf(ctx, target, path, before, next) || partOf(ctx, target, path, next)) {
			return false, nil // someone's own change: leave it to the user
		}
	}
	if _, err := git(ctx, target, "reset", "-q", "--hard", before); err != nil {
		return false, err
	}
	// Files the interrupted update had added are untracked now.
	for n := range changing {
		if blob(ctx, target, before, n) == "" {
			os.Remove(filepath.Join(target, n))
		}
	}
	os.Remove(marker)
	return true, nil
}

// Procs is how accept sees git processes at work in a worktree: a killed
// agentctl's git may still be finishing there, and its lock files must not be
// touched until it is done. The zero value sees no processes and waits for
// nothing.
type Procs struct {
	Snapshot func() proc.Table
	Sleep    func(ctx context.Context, d time.Duration) error // nil: a timer
}

func (d Procs) sleep(ctx context.Context, dur time.Duration) error {
	if d.Sleep != nil {
		return d.Sleep(ctx, dur)
	}
	return clock.Sleep(ctx, dur)
}

// gitWait is how long RecoverAccept waits for a git still working in the
// target (an orphan of a killed accept finishing its step) before it refuses.
const gitWait = 10 * time.Second

// GitRunningError is a git process still working in a worktree that
// RecoverAccept would have to repair.
type GitRunningError struct {
	Path string
	PID  int
}

func (e *GitRunningError) Error() string {
	return fmt.Sprintf("git (pid %d) is still working in %s, where an earlier accept was interrupted; wait for it to finish (or stop it), then accept again", e.PID, e.Path)
}

// waitForGit waits until no git process works in dir (its working directory
// is dir or below it), for up to gitWait.
func (d Procs) waitForGit(ctx context.Context, dir string) error {
	if d.Snapshot == nil {
		return nil
	}
	const poll = 50 * time.Millisecond
	for n := 0; ; n++ {
		pid := gitIn(d.Snapshot(), dir)
		if pid == 0 {
			return nil
		}
		if n >= int(gitWait/poll) {
			return &GitRunningError{Path: dir, PID: pid}
		}
		if err := d.sleep(ctx, poll); err != nil {
			return err
		}
	}
}

// gitIn is the PID of a git process whose working directory is dir or below
// it (0 when there is none, or the table cannot tell).
func gitIn(t proc.Table, dir string) int {
	if t == nil || !t.Available() {
		return 0
	}
	dir = filepath.Clean(dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	self := os.Getpid()
	for _, p := range t.All() {
		if p.PID == self || (p.Comm != "git" && !strings.HasPrefix(p.Comm, "git-")) {
			continue
		}
		cwd, err := t.Cwd(p.PID)
		if err != nil {
			continue
		}
		if cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			return p.PID
		}
	}
	return 0
}

// removeLocksSince removes the lock files `git merge --ff-only` holds in the
// target (the index's, HEAD's, ORIG_HEAD's and the checked-out branch's)
// that were made after the marker: a git killed in the update left them.
// The caller has made sure no git works in the target now.
func removeLocksSince(ctx context.Context, target, marker string) {
	mi, err := os.Stat(marker)
	if err != nil {
		return
	}
	// Two seconds of slack for file systems that keep coarse times.
	since := mi.ModTime().Add(-2 * time.Second)
	names := []string{"index.lock", "HEAD.lock", "ORIG_HEAD.lock"}
	if ref, err := git(ctx, target, "symbolic-ref", "-q", "HEAD"); err == nil && strings.HasPrefix(ref, "refs/heads/") {
		names = append(names, ref+".lock")
	}
	paths, err := gitPaths(ctx, target, names...)
	if err != nil {
		return
	}
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && !fi.ModTime().Before(since) {
			os.Remove(p)
		}
	}
}

// oneOf reports whether path in the worktree is exactly its version in one of
// the commits (absent counts when the commit lacks it).
func oneOf(ctx context.Context, dir, path string, commits ...string) bool {
	var have string
	if isFile(filepath.Join(dir, path)) {
		h, err := git(ctx, dir, "hash-object", "--", path)
		if err != nil {
			return false
		}
		have = h
	}
	for _, c := range commits {
		if blob(ctx, dir, c, path) == have {
			return true
		}
	}
	return false
}

// partOf reports whether the file at path is a part of its version in commit
// cut short: git killed while it wrote the file (an empty file included).
func partOf(ctx context.Context, dir, path, commit string) bool {
	have, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		return false
	}
	id := blob(ctx, dir, commit, path)
	if id == "" {
		return false
	}
	want, err := gitRaw(ctx, dir, "cat-file", "blob", id)
	return err == nil && len(have) < len(want) && strings.HasPrefix(want, string(have))
}

func blob(ctx context.Context, dir, commit, path string) string {
	b, _ := git(ctx, dir, "rev-parse", "--verify", "--quiet", commit+":"+path)
	return b
}

func isFile(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && !st.IsDir()
}

// mergeTree merges two commits without a worktree (git merge-tree
// --write-tree, git ≥ 2.38): the result tree, or the conflicting paths.
func mergeTree(ctx context.Context, dir, ours, theirs string) (string, []string, error) {
	out, code, stderr, err := gitCode(ctx, dir, "merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs)
	if err != nil {
		return "", nil, err
	}
	switch code {
	case 0:
		return strings.TrimSpace(out), nil, nil
	case 1:
		ls := nonEmptyLines(out)
		if len(ls) < 2 {
			return "", []string{"(unknown paths)"}, nil
		}
		return ls[0], ls[1:], nil
	}
	return "", nil, fmt.Errorf("git merge-tree: %s (agentctl accept needs git 2.38 or later)", stderr)
}

func gitStdin(ctx context.Context, dir, stdin string, args ...string) (string, error) {
	cmd := gitCmd(ctx, dir, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

func nonEmptyLines(s string) []string {
	var ls []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// TrackedChanges are the target worktree's uncommitted changes to tracked
// files (untracked files do not block an accept: git refuses to overwrite one).
func TrackedChanges(ctx context.Context, path string) ([]string, error) {
	return porcelain(ctx, path, "--untracked-files=no")
}

// BranchWorktree is the worktree of the repository at dir where branch is
// checked out, or "".
func BranchWorktree(ctx context.Context, dir, branch string) (string, error) {
	wts, err := ListWorktrees(ctx, dir)
	if err != nil {
		return "", err
	}
	for _, w := range wts {
		if w.Branch == branch && !w.Prunable {
			return w.Path, nil
		}
	}
	return "", nil
}

// CurrentBranch is the branch checked out at dir, or "" when detached.
func CurrentBranch(ctx context.Context, dir string) string {
	b, _ := git(ctx, dir, "symbolic-ref", "--short", "-q", "HEAD")
	return b
}

// BranchExists reports whether refs/heads/branch exists in the repository at dir.
func BranchExists(ctx context.Context, dir, branch string) bool {
	_, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// Contains reports whether the work of branch is in into: its commits are
// ancestors, or merging it would change nothing (it was squashed in).
func Contains(ctx context.Context, dir, into, branch string) bool {
	if _, code, _, _ := gitCode(ctx, dir, "merge-base", "--is-ancestor", "refs/heads/"+branch, "refs/heads/"+into); code == 0 {
		return true
	}
	tree, conflicts, err := mergeTree(ctx, dir, "refs/heads/"+into, "refs/heads/"+branch)
	if err != nil || len(conflicts) > 0 {
		return false
	}
	cur, err := git(ctx, dir, "rev-parse", "refs/heads/"+into+"^{tree}")
	return err == nil && cur == tree
}

// WorktreeTree is the tree the worktree at path holds now — HEAD plus every
// uncommitted change, untracked files included, ignored ones not — computed in
// a throw-away index so nothing of the worktree changes. Two calls agree
// exactly when the content is the same, whether it is committed or not.
func WorktreeTree(ctx context.Context, path string) (string, error) {
	f, err := os.CreateTemp("", "agentctl-index-*")
	if err != nil {
		return "", err
	}
	idx := f.Name()
	f.Close()
	os.Remove(idx) // git wants to create it
	defer os.Remove(idx)
	run := func(args ...string) (string, error) {
		cmd := gitCmd(ctx, path, args...)
		cmd.Env = append(cmd.Env, "GIT_INDEX_FILE="+idx)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), strings.TrimSpace(errb.String()))
		}
		return strings.TrimSpace(out.String()), nil
	}
	if _, err := run("read-tree", "HEAD"); err != nil {
		return "", err
	}
	if _, err := run("add", "-A"); err != nil {
		return "", err
	}
	return run("write-tree")
}

// RepoOf is the main worktree of the repository path belongs to.
func RepoOf(ctx context.Context, path string) (string, error) {
	common, err := git(ctx, path, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", err
	}
	return filepath.Dir(common), nil
}

// CommitDiff is `git diff --shortstat FROM TO`.
func CommitDiff(ctx context.Context, dir, from, to string) (DiffStats, error) {
	out, err := git(ctx, dir, "diff", "--shortstat", from, to)
	if err != nil {
		return DiffStats{}, err
	}
	return ParseShortstat(out), nil
}

// WorktreeHead is the commit checked out at path.
func WorktreeHead(ctx context.Context, path string) (string, error) {
	return git(ctx, path, "rev-parse", "HEAD")
}

// TreeOf is the tree of a branch's last commit.
func TreeOf(ctx context.Context, dir, branch string) (string, error) {
	return git(ctx, dir, "rev-parse", "refs/heads/"+branch+"^{tree}")
}

// CheckConflicts tells, changing nothing, whether bringing the slot's whole
// work — its branch plus what its worktree at slot holds uncommitted — into
// the branch into would conflict: accept asks before it commits the slot's
// leftovers, so a refused accept leaves the slot exactly as it was too.
func CheckConflicts(ctx context.Context, dir, into, branch, slot string) error {
	head, err := git(ctx, dir, "rev-parse", "--verify", "refs/heads/"+branch)
	if err != nil {
		return err
	}
	c := head
	if slot != "" && isDir(slot) {
		tree, err := WorktreeTree(ctx, slot)
		if err != nil {
			return err
		}
		if cur, _ := git(ctx, dir, "rev-parse", head+"^{tree}"); cur != tree {
			// A commit object no ref points at: git's gc drops it.
			args := append(identityArgs(ctx, dir), "commit-tree", tree, "-p", head, "-m", "agentctl: preview of "+branch)
			if c, err = git(ctx, dir, args...); err != nil {
				return err
			}
		}
	}
	_, conflicts, err := mergeTree(ctx, dir, "refs/heads/"+into, c)
	if err != nil {
		return err
	}
	if len(conflicts) > 0 {
		return &ConflictError{Branch: branch, Into: into, Paths: conflicts}
	}
	return nil
}
