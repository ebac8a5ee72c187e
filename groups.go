package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/launch/worktree"
	"github.com/agentctl/agentctl/meta"
)

// The group glue compare, accept and worktree share: a group's repository,
// base branch and slots, and the cleaning of its worktrees. No command file
// reaches into another's for these.

// groupCleaner removes a group's worktrees (accept --clean, worktree clean).
type groupCleaner struct {
	s     *host
	home  string
	store *meta.Store
	git   worktree.Procs
}

func newGroupCleaner(e *cmdEnv) groupCleaner {
	return groupCleaner{s: e.s, home: e.home, store: e.store, git: e.deps().Git()}
}

// cleanedSlot is what cleaning did to one slot of a group.
type cleanedSlot struct {
	Branch          string `json:"branch"`
	Path            string `json:"path,omitempty"`
	LeftoversCommit string `json:"leftovers_commit,omitempty"`
	Removed         bool   `json:"removed"`
	BranchDeleted   bool   `json:"branch_deleted"`
	Error           string `json:"error,omitempty"`
}

// live says whether a slot's agent may still write to its worktree.
func live(sess discover.Session, st *meta.Store, rec *meta.Launch) bool {
	switch sess.Status {
	case discover.StatusRunning, discover.StatusIdle, discover.StatusWaiting:
		return true
	}
	return rec != nil && st.AgentAlive(rec)
}

// groupBaseBranch is the branch a group's slots started from: the base the
// launch named, or, when it branched from HEAD, the branch checked out in the
// main worktree now.
func groupBaseBranch(ctx context.Context, repo string, rec *meta.Launch) string {
	if b := rec.BaseBranch; b != "" && b != "HEAD" {
		if worktree.BranchExists(ctx, repo, b) {
			return b
		}
		return ""
	}
	return worktree.CurrentBranch(ctx, repo)
}

func leftoversMessage(adapter, model, id string) string {
	return fmt.Sprintf("agentctl: work of %s (%s) session %s", adapter, orDash(model), id)
}

// mainWorktreeOf is the main worktree of the repository path belongs to, or "".
func mainWorktreeOf(ctx context.Context, path string) string {
	wts, err := worktree.ListWorktrees(ctx, path)
	if err != nil || len(wts) == 0 {
		// The worktree is gone; its repository is beside it: <repo>-try-<group>-<suffix>.
		base := filepath.Base(path)
		if i := strings.Index(base, "-try-g-"); i > 0 {
			return filepath.Join(filepath.Dir(path), base[:i])
		}
		return ""
	}
	return wts[0].Path
}

func slotSuffix(group, branch string) string {
	if s, ok := strings.CutPrefix(branch, worktree.GroupBranchPrefix(group)); ok {
		return s
	}
	return branch
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// cleanGroup removes every worktree of group in repo, each slot's leftovers
// committed on its branch first; a slot whose agent still runs is kept. With
// deleteBranch the branches go too: accepted (and any whose work is in into)
// always, an unmerged one only with force. It reports what it did per slot
// (and prints it unless quiet) and how many things it had to keep.
func (g groupCleaner) clean(ctx context.Context, repo, group, into, accepted string, deleteBranch, force, quiet bool) ([]cleanedSlot, int) {
	s := g.s
	say := func(format string, args ...any) {
		if !quiet {
			printHuman(s.Out, format, args...)
		}
	}
	recs, _ := g.store.ReadLaunches()
	byBranch := map[string]*meta.Launch{}
	for i := range recs {
		if recs[i].Group == group && recs[i].Branch != "" && recs[i].Kind != launch.KindResume {
			byBranch[recs[i].Branch] = &recs[i]
		}
	}
	wts, err := worktree.ListWorktrees(ctx, repo)
	if err != nil {
		fmt.Fprintf(s.ErrOut, "agentctl: %v\n", err)
		return nil, 1
	}
	var out []cleanedSlot
	failed := 0
	has := map[string]bool{}
	for _, w := range wts {
		if w.Group != group || w.Main {
			continue
		}
		has[w.Branch] = true
		c := cleanedSlot{Branch: w.Branch, Path: w.Path}
		rec := byBranch[w.Branch]
		keep := func(err error) {
			failed++
			c.Error = err.Error()
			fmt.Fprintf(s.ErrOut, "agentctl: kept %s: %s\n", termSafe(w.Path), termSafe(err.Error()))
			out = append(out, c)
		}
		if rec != nil && g.store.AgentAlive(rec) {
			keep(fmt.Errorf("its session %s is still running; stop it or wait for it, then clean again", rec.CurrentSessionID()))
			continue
		}
		if !w.Prunable {
			msg := "agentctl: work left in " + w.Branch
			if rec != nil {
				msg = leftoversMessage(rec.Adapter, rec.Model, rec.CurrentSessionID())
			}
			commit, err := g.git.CommitLeftovers(ctx, w.Path, msg)
			if err != nil {
				keep(err)
				continue
			}
			if commit != "" {
				c.LeftoversCommit = commit
				say("committed the leftovers of %s on its branch as %s\n", w.Branch, shortHash(commit))
			}
		}
		if err := worktree.CleanWorktree(ctx, w, false, false); err != nil {
			keep(err)
			continue
		}
		c.Removed = true
		say("removed %s\n", shortHome(w.Path, g.home))
		ev := meta.Event{Type: eventWorktreeRemoved, Timestamp: s.now(), Directory: w.Path,
			Data: map[string]any{"group": group, "branch": w.Branch, "path": w.Path}}
		if c.LeftoversCommit != "" {
			ev.Data["leftovers_commit"] = c.LeftoversCommit
		}
		if rec != nil {
			ev.Adapter, ev.SessionID, ev.LaunchID = rec.Adapter, rec.CurrentSessionID(), rec.ID
		}
		if err := g.store.AppendEvent(ev); err != nil {
			warn(s, "journal: "+err.Error())
		}
		if deleteBranch && w.Branch != "" {
			if err := deleteGroupBranch(ctx, repo, into, accepted, w.Branch, force); err != nil {
				failed++
				c.Error = err.Error()
				fmt.Fprintf(s.ErrOut, "agentctl: %s\n", termSafe(err.Error()))
			} else {
				c.BranchDeleted = true
				say("deleted branch %s\n", w.Branch)
			}
		}
		out = append(out, c)
	}
	// Group branches without a worktree (removed by hand, or a launch killed
	// half-way).
	bs, _ := worktree.GroupBranches(ctx, repo, group)
	for _, b := range bs {
		if has[b] {
			continue
		}
		c := cleanedSlot{Branch: b}
		if !deleteBranch {
			say("kept branch %s (it has no worktree; --delete-branch deletes it)\n", b)
			out = append(out, c)
			continue
		}
		if err := deleteGroupBranch(ctx, repo, into, accepted, b, force); err != nil {
			failed++
			c.Error = err.Error()
			fmt.Fprintf(s.ErrOut, "agentctl: %s\n", termSafe(err.Error()))
		} else {
			c.BranchDeleted = true
			say("deleted branch %s\n", b)
		}
		out = append(out, c)
	}
	return out, failed
}

// deleteGroupBranch deletes a slot's branch: with -D when its work is in into
// (it was accepted, perhaps squashed) or with force, else git's own -d, which
// refuses an unmerged branch.
func deleteGroupBranch(ctx context.Context, repo, into, accepted, branch string, force bool) error {
	in := branch == accepted || (into != "" && worktree.Contains(ctx, repo, into, branch))
	if err := worktree.DeleteBranch(ctx, repo, branch, force || in); err != nil {
		return fmt.Errorf("branch %s stays: its work is not in %s (%v); --force deletes it anyway", branch, orDash(into), err)
	}
	return nil
}

// groupRepo is the repository a group's launch records point at, or "".
func groupRepo(ctx context.Context, st *meta.Store, group string) string {
	recs, _ := st.ReadLaunches()
	for _, r := range recs {
		if r.Group == group && r.Worktree != "" {
			if repo := mainWorktreeOf(ctx, r.Worktree); repo != "" {
				return repo
			}
		}
	}
	return ""
}
