package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/launch"
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
					return runWorktreeList(c.Context, s, worktreeOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(), JSON: c.Bool("json")})
				},
			},
			{
				Name:      "clean",
				Usage:     "remove worktrees (a PATH, or every worktree of a GROUP)",
				ArgsUsage: "PATH|GROUP…",
				Description: `Removes each worktree with "git worktree remove". A worktree with uncommitted
changes (untracked files included) is refused, naming what would be lost, unless
--force. The main worktree is never removed. --delete-branch also deletes the
worktree's branch with "git branch -d" (refused by git when it is not merged),
or "git branch -D" with --force. A GROUP id (g-xxxxxx) cleans every worktree of
the group, in --repo (default: the current directory). Every git error is
reported; the exit code is 1 if any worktree could not be removed.

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
					return runWorktreeClean(c.Context, s, worktreeOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(),
						Force: c.Bool("force"), DeleteBranch: c.Bool("delete-branch"), Repo: c.String("repo")})
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

func runWorktreeList(ctx context.Context, s *host, o worktreeOptions) error {
	if len(o.Args) > 1 {
		return usageErrorf("worktree list takes at most one REPO (got %d arguments)", len(o.Args))
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
	wts, err := launch.ListWorktrees(ctx, repo)
	if err != nil {
		return inputErr(err)
	}
	if o.JSON {
		if wts == nil {
			wts = []launch.Worktree{}
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
			state = fmt.Sprintf("dirty (%d changes)", len(w.Changes))
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

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func runWorktreeClean(ctx context.Context, s *host, o worktreeOptions) error {
	if len(o.Args) == 0 {
		return usageErrorf("worktree clean needs a worktree PATH or a GROUP id (see agentctl worktree list)")
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	var targets []launch.Worktree
	type orphan struct{ top, branch string }
	var orphans []orphan // group branches without a worktree (a launch killed half-way)
	for _, arg := range o.Args {
		if launch.IsGroupID(arg) {
			repo := o.Repo
			if repo == "" {
				repo = e.groupRepo(ctx, arg)
			}
			if repo == "" {
				repo = "."
			}
			wts, err := launch.ListWorktrees(ctx, e.expand(repo))
			if err != nil {
				return inputErr(err)
			}
			n := 0
			has := map[string]bool{}
			for _, w := range wts {
				if w.Group == arg && !w.Main {
					targets = append(targets, w)
					has[w.Branch] = true
					n++
				}
			}
			if bs, err := launch.GroupBranches(ctx, wts[0].Path, arg); err == nil {
				for _, b := range bs {
					if !has[b] {
						orphans = append(orphans, orphan{wts[0].Path, b})
						n++
					}
				}
			}
			if n == 0 {
				return &exitError{exitNotFound, fmt.Errorf("group %s has no worktree or branch in %s; see agentctl worktree list %s", arg, repo, repo)}
			}
			continue
		}
		w, err := findWorktree(ctx, e.expand(arg), o.Repo)
		if err != nil {
			return err
		}
		targets = append(targets, w)
	}
	failed := 0
	for _, w := range targets {
		err := launch.CleanWorktree(ctx, w, o.Force, o.DeleteBranch)
		var de *launch.DirtyError
		switch {
		case errors.As(err, &de):
			failed++
			fmt.Fprintf(s.ErrOut, "agentctl: kept %v\n", err)
		case err != nil:
			failed++
			fmt.Fprintf(s.ErrOut, "agentctl: %s: %v\n", w.Path, err)
		default:
			msg := "removed " + shortHome(w.Path, e.home)
			if o.DeleteBranch && w.Branch != "" {
				msg += " and branch " + w.Branch
			}
			fmt.Fprintln(s.Out, msg)
		}
	}
	for _, b := range orphans {
		if !o.DeleteBranch {
			printHuman(s.Out, "kept branch %s (it has no worktree; --delete-branch deletes it)\n", b.branch)
			continue
		}
		if err := launch.DeleteBranch(ctx, b.top, b.branch, o.Force); err != nil {
			failed++
			fmt.Fprintf(s.ErrOut, "agentctl: branch %s stays: %v (merge it first, or --force to delete it with -D)\n", b.branch, err)
			continue
		}
		printHuman(s.Out, "deleted branch %s\n", b.branch)
	}
	if failed > 0 {
		return &exitError{exitFailed, fmt.Errorf("%d of %d worktrees not removed (see above)", failed, len(targets))}
	}
	return nil
}

// findWorktree finds the worktree at path among its repository's worktrees.
func findWorktree(ctx context.Context, path, repo string) (launch.Worktree, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return launch.Worktree{}, usageErrorf("%s: %v", path, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	from := abs
	if repo != "" {
		from = repo
	} else if _, err := os.Stat(abs); err != nil {
		return launch.Worktree{}, usageErrorf("%s does not exist; pass --repo REPO to remove its stale entry", path)
	}
	wts, err := launch.ListWorktrees(ctx, from)
	if err != nil {
		return launch.Worktree{}, inputErr(err)
	}
	for _, w := range wts {
		if w.Path == abs && w.Main {
			return w, usageErrorf("%s is the repository's main worktree; agentctl never removes it", path)
		}
		if w.Path == abs {
			return w, nil
		}
	}
	return launch.Worktree{}, usageErrorf("%s is not a worktree of its repository (its top level is not a linked worktree); see agentctl worktree list", path)
}

// groupRepo is the repository a group's launch records point at, or "".
func (e *cmdEnv) groupRepo(ctx context.Context, group string) string {
	recs, _ := e.store.ReadLaunches()
	for _, r := range recs {
		if r.Group == group && r.Worktree != "" {
			if repo := mainWorktreeOf(ctx, r.Worktree); repo != "" {
				return repo
			}
		}
	}
	return ""
}
