package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Slot is one worktree of a group: Suffix names its branch and path, Label
// names it in errors (the agent it is for); PrepareGroup fills in the rest.
type Slot struct {
	Suffix, Label string
	Branch, Path  string // try/<group>/<suffix> and <repo>-try-<group>-<suffix>
}

// GroupOf is a comparison group's worktrees, all made from one base commit,
// with S the slot: a worktree here (Group), an agent with its worktree in
// package launch.
type GroupOf[S any] struct {
	ID      string
	Repo    string // the repository's top level (realpath)
	Base    string // the base commit (full hash)
	BaseRef string // what the user named (--base-branch / base_branch), else the branch HEAD is on, else "HEAD"
	Slots   []S
}

// Group is a comparison group's worktrees.
type Group = GroupOf[Slot]

// PrepareGroup creates one branch and worktree per slot from the base, before
// any agent starts. If any of them cannot be made, every worktree and branch
// made so far is removed and the error says what to fix: all or nothing.
func PrepareGroup(ctx context.Context, repo, baseRef string, slots []Slot) (*Group, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, &InputError{"launching several agents needs git on $PATH (each gets its own worktree)"}
	}
	top, err := git(ctx, repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, &InputError{fmt.Sprintf("%s is not a git repository: several agents each get a worktree of the launch repository; run from inside one or pass --cwd REPO", repo)}
	}
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	ref := baseRef
	if ref == "" {
		ref = "HEAD"
	}
	base, err := git(ctx, top, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		if baseRef == "" {
			return nil, &InputError{fmt.Sprintf("%s has no commit to branch from; commit something first", top)}
		}
		return nil, &InputError{fmt.Sprintf("base branch %s: no such branch or commit in %s", baseRef, top)}
	}
	if baseRef == "" {
		// The slots start from HEAD's commit: uncommitted changes of the main
		// worktree would silently be missing from every slot.
		if st, err := git(ctx, top, "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
			return nil, &InputError{fmt.Sprintf("%s has uncommitted changes the agents would not see; commit or stash them, or name the base with --base-branch", top)}
		}
	}
	if baseRef == "" {
		// The branch the slots start from is where `accept` brings the winner.
		if b := CurrentBranch(ctx, top); b != "" {
			ref = b
		}
	}
	g := &Group{Repo: top, Base: base, BaseRef: ref, Slots: append([]Slot(nil), slots...)}
	// A group id not used in this repository yet (branches or paths): two
	// launches at once get two groups.
	for try := 0; ; try++ {
		g.ID = NewGroupID()
		if out, _ := git(ctx, top, "for-each-ref", "--count=1", "refs/heads/"+GroupBranchPrefix(g.ID)); out == "" {
			break
		}
		if try > 20 {
			return nil, errors.New("no unused group id found")
		}
	}
	var made []Slot
	for i := range g.Slots {
		s := &g.Slots[i]
		s.Branch = GroupBranchPrefix(g.ID) + s.Suffix
		s.Path = filepath.Join(filepath.Dir(top), filepath.Base(top)+"-try-"+g.ID+"-"+s.Suffix)
		if _, err := os.Lstat(s.Path); err == nil {
			err = fmt.Errorf("worktree path %s already exists", s.Path)
			return nil, undo(top, made, fmt.Errorf("slot %d (%s): %w", i+1, s.Label, err))
		}
		if _, err := git(ctx, top, "worktree", "add", "-b", s.Branch, s.Path, base); err != nil {
			// git may have made the branch before failing on the directory.
			made = append(made, *s)
			return nil, undo(top, made, fmt.Errorf("slot %d (%s): %w", i+1, s.Label, err))
		}
		if real, err := filepath.EvalSymlinks(s.Path); err == nil {
			s.Path = real
		}
		made = append(made, *s)
	}
	return g, nil
}

// undo removes the worktrees and branches in made and returns cause, with
// anything that could not be removed appended.
func undo(top string, made []Slot, cause error) error {
	if errs := RemoveSlots(top, made); len(errs) > 0 {
		return fmt.Errorf("%w; also could not remove: %v (see agentctl worktree list %s)", cause, errors.Join(errs...), top)
	}
	return cause
}

// RemoveSlots force-removes the worktrees and branches of slots that never ran.
func RemoveSlots(top string, slots []Slot) []error {
	ctx := context.Background()
	var errs []error
	for _, s := range slots {
		if _, err := os.Stat(s.Path); err == nil {
			if _, err := git(ctx, top, "worktree", "remove", "--force", s.Path); err != nil {
				errs = append(errs, err)
			}
		}
		if _, err := git(ctx, top, "rev-parse", "--verify", "--quiet", "refs/heads/"+s.Branch); err == nil {
			if _, err := git(ctx, top, "branch", "-D", s.Branch); err != nil {
				errs = append(errs, err)
			}
		}
	}
	_, _ = git(ctx, top, "worktree", "prune")
	return errs
}
