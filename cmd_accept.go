package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/launch/worktree"
	"github.com/agentctl/agentctl/meta"
)

// Journal events of the comparison workflow (README "Files").
const (
	eventGroupAccepted   = "group.accepted"
	eventWorktreeRemoved = "worktree.removed"
)

func acceptCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "accept",
		Usage:     "take one slot's work into the group's base branch (squash, merge or rebase)",
		ArgsUsage: "ID",
		Description: `ID is the session id of a launch group's slot (see agentctl compare GROUP).
First the slot's uncommitted work, untracked files included (ignored ones never),
is committed on its try/GROUP/SLOT branch ("agentctl: work of ADAPTER (MODEL)
session ID"); then the branch is brought into the target branch — the group's
base branch, or --into — where it is checked out (normally the repository's
main worktree):
  --squash (default)  one commit: the prompt's first line (or -m), then
                      adapter, model, session, group, tokens and cost
  --merge             a merge commit
  --rebase            the branch's commits replayed on the target

The new commit is built without touching any worktree, so a conflict changes
nothing: accept lists the conflicting paths and exits 5. Also refused, changing
nothing: a session still running (exit 5), a target worktree with uncommitted
changes (exit 5, naming them), a target branch checked out nowhere (exit 1), a
session that is not a slot of a launch group (exit 2). Running accept again
after it was interrupted completes it, or says the work is already in.

--clean then removes every worktree of the group, each slot's leftovers
committed on its branch first; --delete-branch deletes the branches too (the
accepted one always; another slot's only when merged, or with --force).

Examples:
  agentctl accept 3f2a9c1e
  agentctl accept 3f2a9c1e --clean --delete-branch
  agentctl accept 3f2a9c1e --merge --into release -m "Fix the parser"
  agentctl accept 3f2a9c1e --json | jq -r .commit`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "squash", Usage: "one commit on the target branch (unless --merge or --rebase)"},
			&cli.BoolFlag{Name: "merge", Usage: "a merge commit of the slot's branch"},
			&cli.BoolFlag{Name: "rebase", Usage: "replay the slot's commits on the target branch"},
			&cli.StringFlag{Name: "into", Usage: "the target `BRANCH` (default: the group's base branch)"},
			&cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "`MSG`: the commit's first line (default: the prompt's first line)"},
			&cli.BoolFlag{Name: "clean", Usage: "then remove every worktree of the group (leftovers committed first)"},
			&cli.BoolFlag{Name: "delete-branch", Usage: "with --clean: delete the group's branches too"},
			&cli.BoolFlag{Name: "force", Usage: "with --clean --delete-branch: delete unmerged branches of other slots too"},
			&cli.BoolFlag{Name: "json", Usage: "print {session_id, group, branch, into, method, before, commit, …}"},
		},
		Action: func(c *cli.Context) error {
			o, err := acceptOptionsFrom(c)
			if err != nil {
				return err
			}
			return runAccept(c.Context, s, o)
		},
	}
}

// acceptOptions are accept's flags and arguments.
type acceptOptions struct {
	globalOptions
	Args                             []string // ID
	Squash, Merge, Rebase            bool
	Into, Message                    string
	MessageSet                       bool
	Clean, DeleteBranch, Force, JSON bool
}

// acceptOut is `accept --json` (README "Picking the winner").
type acceptOut struct {
	SessionID       string              `json:"session_id"`
	Adapter         string              `json:"adapter"`
	Model           string              `json:"model,omitempty"`
	Group           string              `json:"group"`
	Slot            string              `json:"slot"`
	Branch          string              `json:"branch"`
	Into            string              `json:"into"`
	Target          string              `json:"target"` // the worktree the target branch is checked out in
	Method          string              `json:"method"`
	LeftoversCommit string              `json:"leftovers_commit,omitempty"`
	Before          string              `json:"before"`
	Commit          string              `json:"commit"`
	AlreadyIn       bool                `json:"already_in"`
	Diff            *worktree.DiffStats `json:"diff"` // the target's change: git diff --shortstat BEFORE COMMIT
	Cleaned         []cleanedSlot       `json:"cleaned,omitempty"`
}

// acceptOptionsFrom reads accept's flags and makes every usage check.
func acceptOptionsFrom(c *cli.Context) (acceptOptions, error) {
	o := acceptOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(),
		Squash: c.Bool("squash"), Merge: c.Bool("merge"), Rebase: c.Bool("rebase"), Into: c.String("into"),
		Message: c.String("message"), MessageSet: c.IsSet("message"), Clean: c.Bool("clean"),
		DeleteBranch: c.Bool("delete-branch"), Force: c.Bool("force"), JSON: c.Bool("json")}
	_, err := o.check()
	return o, err
}

// check is every usage check of accept, reading nothing; it returns the
// accept method the flags pick.
func (o acceptOptions) check() (string, error) {
	if err := needArgs("accept", o.Args, 1, "one session ID (a slot of a launch group; see agentctl compare GROUP)"); err != nil {
		return "", err
	}
	method := worktree.MethodSquash
	n := 0
	for m, on := range map[string]bool{worktree.MethodSquash: o.Squash, worktree.MethodMerge: o.Merge, worktree.MethodRebase: o.Rebase} {
		if on {
			n++
			method = m
		}
	}
	switch {
	case n > 1:
		return "", usageErrorf("accept: --squash, --merge and --rebase exclude each other; pick one")
	case method == worktree.MethodRebase && o.MessageSet:
		return "", usageErrorf("accept: --rebase replays the slot's own commits; -m applies to --squash and --merge")
	case o.MessageSet && strings.TrimSpace(o.Message) == "":
		return "", usageErrorf("accept: -m needs a message")
	case (o.DeleteBranch || o.Force) && !o.Clean:
		return "", usageErrorf("accept: --delete-branch and --force go with --clean")
	case o.Force && !o.DeleteBranch:
		return "", usageErrorf("accept: --force only decides which branches --delete-branch may delete; add --delete-branch")
	}
	return method, nil
}

// runAccept brings a slot's work into the target branch. o comes checked
// from acceptOptionsFrom, or built by hand (tests): it is checked again,
// before anything is read.
func runAccept(ctx context.Context, s *host, o acceptOptions) error {
	method, err := o.check()
	if err != nil {
		return err
	}
	e, sess, env, err := setupSession(ctx, s, o.globalOptions, o.Args[0])
	if err != nil {
		return err
	}
	rec := groupRecord(env.Launches, sess)
	if rec == nil {
		return &exitError{exitUsage, fmt.Errorf("session %s is not a slot of a launch group (accept takes the session id of a row of agentctl compare GROUP); to take a plain session's work, use git", sess.ID)}
	}
	if live(sess, e.store, rec) {
		return &exitError{exitLocked, fmt.Errorf("session %s is still %s; wait for it (agentctl wait %s) or stop it (agentctl stop %s), then accept again", sess.ID, orDash(sess.Status), sess.ID, sess.ID)}
	}
	repo := mainWorktreeOf(ctx, rec.Worktree)
	if repo == "" || !dirExists(repo) {
		return &exitError{exitFailed, fmt.Errorf("the repository of %s (%s) is gone", sess.ID, rec.Worktree)}
	}
	if !worktree.BranchExists(ctx, repo, rec.Branch) {
		return &exitError{exitFailed, fmt.Errorf("branch %s of session %s no longer exists in %s; nothing to accept", rec.Branch, sess.ID, repo)}
	}
	into := o.Into
	if into == "" {
		if into = groupBaseBranch(ctx, repo, rec); into == "" {
			return usageErrorf("the group's base %s is not a branch; pass --into BRANCH", rec.BaseBranch)
		}
	}
	if !worktree.BranchExists(ctx, repo, into) {
		return usageErrorf("--into %s: no such branch in %s", into, repo)
	}
	if into == rec.Branch {
		return usageErrorf("--into %s is the slot's own branch", into)
	}
	target, err := worktree.BranchWorktree(ctx, repo, into)
	if err != nil {
		return inputErr(err)
	}
	if target == "" {
		return &exitError{exitFailed, fmt.Errorf("branch %s is not checked out in any worktree of %s; run: git -C %s switch %s (or pass --into a checked-out branch), then agentctl accept %s again", into, repo, repo, into, o.Args[0])}
	}
	if undone, err := e.deps().Git().RecoverAccept(ctx, target); err != nil {
		return acceptErr(err)
	} else if undone {
		warn(s, "an earlier accept into "+into+" was interrupted while it updated "+target+"; its half-written files were reset")
	}
	if ch, err := worktree.TrackedChanges(ctx, target); err != nil {
		return inputErr(err)
	} else if len(ch) > 0 {
		return &exitError{exitLocked, fmt.Errorf("%s (where %s is checked out) has uncommitted changes: %s; commit or stash them, then accept again", target, into, joinChanges(ch))}
	}
	stepDelay := testStepDelay(s)
	step := func(name string) {
		if stepDelay > 0 {
			fmt.Fprintf(s.ErrOut, "agentctl: test: step %s\n", name)
			time.Sleep(stepDelay)
		}
	}

	out := acceptOut{SessionID: sess.ID, Adapter: rec.Adapter, Model: firstNonEmpty(rec.Model, sess.Model), Group: rec.Group,
		Slot: slotSuffix(rec.Group, rec.Branch), Branch: rec.Branch, Into: into, Target: target, Method: method}
	if err := worktree.CheckConflicts(ctx, target, into, rec.Branch, rec.Worktree); err != nil {
		return acceptErr(err)
	}
	if dirExists(rec.Worktree) {
		step("leftovers")
		c, err := e.deps().Git().CommitLeftovers(ctx, rec.Worktree, leftoversMessage(rec.Adapter, out.Model, sess.ID))
		if err != nil {
			return acceptErr(err)
		}
		out.LeftoversCommit = c
	}
	plan := worktree.AcceptPlan{Target: target, Into: into, Branch: rec.Branch, Slot: rec.Worktree, Method: method,
		Message: acceptMessage(o, method, rec, sess, out.Model), Step: step}
	res, err := worktree.Accept(ctx, plan)
	if err != nil {
		return acceptErr(err)
	}
	out.Before, out.Commit, out.AlreadyIn = res.Before, res.Commit, res.AlreadyIn
	if !res.AlreadyIn {
		if d, err := worktree.CommitDiff(ctx, target, res.Before, res.Commit); err == nil {
			out.Diff = &d
		}
		step("journal")
		if err := e.store.AppendEvent(meta.Event{Type: eventGroupAccepted, Adapter: rec.Adapter, SessionID: sess.ID,
			LaunchID: rec.ID, Timestamp: s.now(), Directory: target,
			Data: map[string]any{"session": sess.ID, "method": method, "commit": res.Commit, "before": res.Before,
				"group": rec.Group, "branch": rec.Branch, "into": into}}); err != nil {
			warn(s, "journal: "+err.Error())
		}
	}
	if !o.JSON {
		if res.AlreadyIn {
			printHuman(s.Out, "%s is already in %s (%s); nothing to do\n", rec.Branch, into, shortHash(res.Commit))
		} else {
			diff := ""
			if out.Diff != nil {
				diff = fmt.Sprintf(": %d %s +%d -%d", out.Diff.FilesChanged, plural(out.Diff.FilesChanged, "file", "files"), out.Diff.Insertions, out.Diff.Deletions)
			}
			printHuman(s.Out, "accepted %s (%s) into %s as %s (%s%s); see: git -C %s log -1\n", sess.ID, out.Slot, into, shortHash(res.Commit), method, diff, shortHome(target, e.home))
		}
	}
	var cleanErr error
	if o.Clean {
		step("clean")
		var failed int
		out.Cleaned, failed = newGroupCleaner(e).clean(ctx, repo, rec.Group, into, rec.Branch, o.DeleteBranch, o.Force, o.JSON)
		if failed > 0 {
			cleanErr = &exitError{exitFailed, fmt.Errorf("accepted, but %d worktree(s) or branches of %s were kept (see above)", failed, rec.Group)}
		}
	}
	if o.JSON {
		if err := writeJSON(s.Out, out); err != nil {
			return err
		}
	}
	return cleanErr
}

// acceptErr maps accept's failures: a conflict, a busy worktree or git
// refusing the fast-forward refuse (exit 5), bad input 2, the rest 1.
func acceptErr(err error) error {
	var ce *worktree.ConflictError
	var be *worktree.GitBusyError
	var ue *worktree.UpdateRefusedError
	var ge *worktree.GitRunningError
	if errors.As(err, &ce) || errors.As(err, &be) || errors.As(err, &ue) || errors.As(err, &ge) {
		return &exitError{exitLocked, err}
	}
	return inputErr(err)
}

// groupRecord is the launch record that made sess as a slot of a group.
func groupRecord(recs []meta.Launch, sess discover.Session) *meta.Launch {
	for i := range recs {
		r := &recs[i]
		if r.Group != "" && r.Branch != "" && r.Worktree != "" && r.Kind != launch.KindResume &&
			r.Adapter == sess.Adapter && (r.CurrentSessionID() == sess.ID || r.SessionID == sess.ID) {
			return r
		}
	}
	return nil
}

// acceptMessage is the squash (or merge) commit's message: the prompt's first
// line (or -m), then where the work came from.
func acceptMessage(o acceptOptions, method string, rec *meta.Launch, sess discover.Session, model string) string {
	subject := strings.TrimSpace(o.Message)
	if subject == "" {
		p := strings.TrimSpace(rec.Prompt)
		if p == "" {
			p = sess.Prompt
		}
		subject, _, _ = strings.Cut(strings.TrimSpace(p), "\n")
		subject = strings.TrimSpace(subject)
		if r := []rune(subject); len(r) > 72 {
			subject = string(r[:71]) + "…"
		}
		if subject == "" {
			subject = "agentctl: accept " + rec.Branch
		}
		if method == worktree.MethodMerge {
			subject = "Merge " + rec.Branch + ": " + subject
		}
	}
	var b strings.Builder
	b.WriteString(subject + "\n\n")
	fmt.Fprintf(&b, "Adapter: %s\nModel: %s\nSession: %s\nGroup: %s\n", rec.Adapter, orDash(model), sess.ID, rec.Group)
	if t := sess.Tokens; t != nil {
		fmt.Fprintf(&b, "Tokens: %d (input %d, output %d, cache read %d, cache write %d)\n",
			t.Input+t.Output+t.CacheRead+t.CacheWrite, t.Input, t.Output, t.CacheRead, t.CacheWrite)
	} else {
		b.WriteString("Tokens: unknown\n")
	}
	if sess.CostUSD != nil {
		fmt.Fprintf(&b, "Cost: %s\n", money(*sess.CostUSD))
	} else {
		b.WriteString("Cost: unknown\n")
	}
	return b.String()
}

func joinChanges(ch []string) string {
	const max = 10
	var names []string
	for i, c := range ch {
		if i == max {
			names = append(names, fmt.Sprintf("and %d more", len(ch)-max))
			break
		}
		names = append(names, strings.TrimSpace(c))
	}
	return strings.Join(names, "; ")
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// testStepDelay is AGENTCTL_TEST_ACCEPT_STEP_DELAY: tests stretch the time
// between accept's steps to kill it there.
func testStepDelay(s *host) time.Duration {
	d, _ := time.ParseDuration(s.getenv("AGENTCTL_TEST_ACCEPT_STEP_DELAY"))
	return d
}

func init() {
	// events --type group.accepted, worktree.removed (or the families group, worktree).
	eventTypes = append(eventTypes, eventGroupAccepted, eventWorktreeRemoved)
}
