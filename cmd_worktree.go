package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/launch/worktree"
)

func worktreeCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:  "worktree",
		Usage: "list and remove the git worktrees launches made",
		Description: `A launch with several agents (or --worktree) runs each agent in its own git
worktree beside the repository, on a try/<group>/<slot> branch (or --branch).

Examples:
  agentctl worktree list ~/code/api
  agentctl worktree clean ~/code/api-try-g-3f9a1c-cc
  agentctl worktree clean --delete-branch g-3f9a1c --repo ~/code/api`,
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list a repository's worktrees: the main one, which group made each, dirty or clean",
				ArgsUsage: "[REPO]",
				Description: `REPO defaults to the current directory. The main worktree is marked "*";
GROUP is the launch group whose try/<group>/ branch the worktree is on.

Examples:
  agentctl worktree list
  agentctl worktree list ~/code/api --json`,
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print a JSON array of {path, head, branch, main, group, dirty, changes, …}"}},
				Action: func(c *cli.Context) error {
					o := worktreeOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(), JSON: c.Bool("json")}
					if err := o.checkList(); err != nil {
						return err
					}
					return runWorktreeList(c.Context, s, o)
				},
			},
			{
				Name:      "clean",
				Usage:     "remove worktrees (a PATH, or every worktree of a GROUP)",
				ArgsUsage: "PATH|GROUP…",
				Description: `A PATH: removes the worktree with "git worktree remove". One with uncommitted
changes (untracked files included) is refused, naming what would be lost, unless
--force, which discards them. The main worktree is never removed.
--delete-branch also deletes the worktree's branch with "git branch -d" (refused
by git when it is not merged), or "git branch -D" with --force.

A GROUP id (g-xxxxxx) removes every worktree of the group, in --repo (default:
the repository its launch records name, else the current directory). Each
slot's uncommitted work, untracked files included, is first committed on its
try/GROUP/SLOT branch, so nothing an agent wrote is lost; a slot whose agent
still runs is kept. --delete-branch deletes the group's branches whose work is
in the group's base branch (accepted); the others only with --force.

Every git error is reported; the exit code is 1 if anything was kept.

Examples:
  agentctl worktree clean ../api-try-g-3f9a1c-codex
  agentctl worktree clean g-3f9a1c --repo ~/code/api --delete-branch
  agentctl worktree clean --force --delete-branch g-3f9a1c`,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "force", Usage: "discard uncommitted changes; delete unmerged branches (git branch -D)"},
					&cli.BoolFlag{Name: "delete-branch", Usage: "delete the worktree's branch too"},
					&cli.StringFlag{Name: "repo", Usage: "the `REPO` a GROUP argument's worktrees belong to (default: the current directory)"},
				},
				Action: func(c *cli.Context) error {
					o := worktreeOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(),
						Force: c.Bool("force"), DeleteBranch: c.Bool("delete-branch"), Repo: c.String("repo")}
					if err := o.checkClean(); err != nil {
						return err
					}
					return runWorktreeClean(c.Context, s, o)
				},
			},
		},
		Action: func(c *cli.Context) error { return unknownCommand(c, c.Command.Subcommands, "agentctl worktree") },
	}
}

// worktreeOptions are the flags and arguments of worktree list and clean.
type worktreeOptions struct {
	globalOptions
	Args                      []string
	JSON, Force, DeleteBranch bool
	Repo                      string
}

// checkList is every usage check of worktree list; it reads nothing.
func (o worktreeOptions) checkList() error {
	if len(o.Args) > 1 {
		return usageErrorf("worktree list takes at most one REPO (got %d arguments)", len(o.Args))
	}
	return nil
}

// checkClean is every usage check of worktree clean; it reads nothing.
func (o worktreeOptions) checkClean() error {
	if len(o.Args) == 0 {
		return usageErrorf("worktree clean needs a worktree PATH or a GROUP id (see agentctl worktree list)")
	}
	return nil
}

// runWorktreeList lists a repository's worktrees; o is checked again (tests
// build it by hand) before anything is read.
func runWorktreeList(ctx context.Context, s *host, o worktreeOptions) error {
	if err := o.checkList(); err != nil {
		return err
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	repo := "."
	if len(o.Args) == 1 {
		repo = e.expand(o.Args[0])
	}
	if _, err := os.Stat(repo); err != nil {
		return usageErrorf("worktree list %s: %v", repo, err)
	}
	wts, err := worktree.ListWorktrees(ctx, repo)
	if err != nil {
		return inputErr(err)
	}
	if o.JSON {
		if wts == nil {
			wts = []worktree.Worktree{}
		}
		return writeJSON(s.Out, wts)
	}
	var t table
	t.add("", "PATH", "BRANCH", "GROUP", "STATE")
	for _, w := range wts {
		mark := ""
		if w.Main {
			mark = "*"
		}
		state := "clean"
		switch {
		case w.Prunable:
			state = "missing (worktree clean removes the entry)"
		case w.Dirty:
			state = fmt.Sprintf("dirty (%d %s)", len(w.Changes), plural(len(w.Changes), "change", "changes"))
		}
		br := w.Branch
		if w.Detached {
			br = "(detached " + shortHash(w.Head) + ")"
		}
		t.add(mark, shortHome(w.Path, e.home), orDash(br), orDash(w.Group), state)
	}
	t.write(s.Out, nil)
	return nil
}

// runWorktreeClean removes worktrees; o is checked again (tests build it by
// hand) before anything is read.
func runWorktreeClean(ctx context.Context, s *host, o worktreeOptions) error {
	if err := o.checkClean(); err != nil {
		return err
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	var targets []worktree.Worktree
	type groupClean struct{ repo, group string }
	var groups []groupClean
	for _, arg := range o.Args {
		if worktree.IsGroupID(arg) {
			repo := o.Repo
			if repo == "" {
				repo = groupRepo(ctx, e.store, arg)
			}
			if repo == "" {
				repo = "."
			}
			wts, err := worktree.ListWorktrees(ctx, e.expand(repo))
			if err != nil {
				return inputErr(err)
			}
			n := 0
			for _, w := range wts {
				if w.Group == arg && !w.Main {
					n++
				}
			}
			bs, _ := worktree.GroupBranches(ctx, wts[0].Path, arg)
			if n+len(bs) == 0 {
				return &exitError{exitNotFound, fmt.Errorf("group %s has no worktree or branch in %s; see agentctl worktree list %s", arg, repo, repo)}
			}
			groups = append(groups, groupClean{repo: wts[0].Path, group: arg})
			continue
		}
		w, err := findWorktree(ctx, e.expand(arg), o.Repo)
		if err != nil {
			return err
		}
		targets = append(targets, w)
	}
	failed, total := 0, len(targets)
	for _, w := range targets {
		err := worktree.CleanWorktree(ctx, w, o.Force, o.DeleteBranch)
		var de *worktree.DirtyError
		switch {
		case errors.As(err, &de):
			failed++
			printHuman(s.ErrOut, "agentctl: kept %v\n", err)
		case err != nil:
			failed++
			printHuman(s.ErrOut, "agentctl: %s: %v\n", w.Path, err)
		default:
			msg := "removed " + shortHome(w.Path, e.home)
			if o.DeleteBranch && w.Branch != "" {
				msg += " and branch " + w.Branch
			}
			printHuman(s.Out, "%s\n", msg)
		}
	}
	// A group: every slot's leftovers are committed on its branch before its
	// worktree goes, so nothing an agent wrote is lost (README "Picking the
	// winner").
	for _, g := range groups {
		into := ""
		recs, _ := e.store.ReadLaunches()
		for i := range recs {
			if recs[i].Group == g.group {
				into = groupBaseBranch(ctx, g.repo, &recs[i])
				break
			}
		}
		if into == "" {
			into = worktree.CurrentBranch(ctx, g.repo)
		}
		cs, n := newGroupCleaner(e).clean(ctx, g.repo, g.group, into, "", o.DeleteBranch, o.Force, false)
		failed += n
		for _, c := range cs {
			if c.Path != "" {
				total++
			}
		}
	}
	if failed > 0 {
		return &exitError{exitFailed, fmt.Errorf("%d of %d worktrees or branches not removed (see above)", failed, total)}
	}
	return nil
}

// findWorktree finds the worktree at path among its repository's worktrees.
func findWorktree(ctx context.Context, path, repo string) (worktree.Worktree, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return worktree.Worktree{}, usageErrorf("%s: %v", path, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	from := abs
	if repo != "" {
		from = repo
	} else if _, err := os.Stat(abs); err != nil {
		return worktree.Worktree{}, usageErrorf("%s does not exist; pass --repo REPO to remove its stale entry", path)
	}
	wts, err := worktree.ListWorktrees(ctx, from)
	if err != nil {
		return worktree.Worktree{}, inputErr(err)
	}
	for _, w := range wts {
		if w.Path == abs && w.Main {
			return w, usageErrorf("%s is the repository's main worktree; agentctl never removes it", path)
		}
		if w.Path == abs {
			return w, nil
		}
	}
	return worktree.Worktree{}, usageErrorf("%s is not a worktree of its repository (its top level is not a linked worktree); see agentctl worktree list", path)
}
