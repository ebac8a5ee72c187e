package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/launch/worktree"
	"github.com/agentctl/agentctl/meta"
)

func compareCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "compare the sessions of a launch group side by side",
		ArgsUsage: "GROUP",
		Description: `One row per slot of a group made by a launch with several --adapter/--model or
--matrix: adapter, model, status, exit code, duration, tokens, cost, the diff of
its worktree against the group's base commit and the on-complete hook's result.

The diff is "git diff --shortstat BASE" run in the slot's worktree: tracked
files, what the agent committed and what it left uncommitted alike. Files the
agent created but never added are not in git's count; they are shown apart as
"+N new" (JSON: diff.untracked, their paths).

A slot that still runs says so (its diff is what is there now). When agentctl's
launch records of the group expired, pass --repo: the slots are then found from
their try/GROUP/ branches, and the row says what is missing.

--check CMD (repeatable) runs CMD with "sh -c" in every ended slot's worktree,
several at once (at most one per core), each killed after --check-timeout
(default: 10m); a slot still running is skipped and says so. The table gets a
✓/✗ column per check; JSON rows a "check" {command, exit_code, passed,
duration_ms, output_tail} (a "checks" array for several). The results are kept
with the group: a later compare shows them, "stale" once the worktree's
content changed. compare itself exits 0 whatever the checks say.

--sort check|cost|tokens|duration|diff orders the rows: most checks passed
first, else the least cost, tokens, time or changed lines.

Examples:
  agentctl compare g-3f9a1c
  agentctl compare g-3f9a1c --check "go test ./..." --sort check
  agentctl compare g-3f9a1c --check "make lint" --check "make test" --check-timeout 20m
  agentctl compare g-3f9a1c --json | jq '.slots[] | {adapter, model, diff, passed: .check.passed}'
  agentctl compare g-3f9a1c --repo ~/code/api`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print {group, repo, base_commit, slots: [...]}"},
			&cli.StringFlag{Name: "repo", Usage: "the launch `REPO`, to find the group's worktrees by branch when its launch records expired"},
			&cli.GenericFlag{Name: "check", Value: &multiFlag{}, Usage: "run `CMD` (sh -c) in every ended slot's worktree (repeatable)"},
			&cli.StringFlag{Name: "check-timeout", Value: "10m", Usage: "kill a check after `DUR`"},
			&cli.StringFlag{Name: "sort", Usage: "order the rows by `KEY`: " + strings.Join(sortKeys, ", ")},
			&cli.BoolFlag{Name: "wide", Aliases: []string{"no-trunc"}, Usage: "on a terminal too, every column in full (no fitting to its width)"},
		},
		Action: func(c *cli.Context) error {
			o, err := compareOptionsFrom(c)
			if err != nil {
				return err
			}
			return runCompare(c.Context, s, o)
		},
	}
}

// comparer is what compare's rows, checks and table need of the command:
// its streams, home, store and config.
type comparer struct {
	s      *host
	home   string
	store  *meta.Store
	config *meta.Config
	wide   bool // --wide: every column in full on a terminal too
}

// compareOptions are compare's flags and arguments.
type compareOptions struct {
	globalOptions
	Args         []string // GROUP
	JSON         bool
	Repo         string
	Checks       []string // --check commands
	CheckTimeout string   // --check-timeout ("" = 10m)
	Sort         string   // --sort key ("" = by slot)
	Wide         bool     // --wide: no fitting to the terminal's width
}

// compareSlot is one row of `compare --json` (README "Comparing agents").
type compareSlot struct {
	ID              string              `json:"id"`   // the session id ("" without a session)
	Slot            string              `json:"slot"` // the branch suffix: cc, codex, cc-opus-4-6, …
	Adapter         string              `json:"adapter"`
	Model           string              `json:"model,omitempty"`
	SessionID       string              `json:"session_id,omitempty"`
	LaunchID        string              `json:"launch_id,omitempty"`
	Status          string              `json:"status"` // as `status` says; "unknown" without a session
	ExitCode        *int                `json:"exit_code"`
	ExitReason      string              `json:"exit_reason,omitempty"` // budget:duration|cost|tokens
	DurationSeconds *float64            `json:"duration_seconds"`
	Tokens          *discover.Tokens    `json:"tokens"`
	TokensTotal     *int64              `json:"tokens_total"`
	CostUSD         *float64            `json:"cost_usd"`
	Branch          string              `json:"branch,omitempty"`
	Worktree        string              `json:"worktree,omitempty"`
	Diff            *worktree.DiffStats `json:"diff"`
	DiffError       string              `json:"diff_error,omitempty"`
	OnComplete      string              `json:"on_complete,omitempty"` // the hook's result: ok, exit N, timeout, …
	Missing         []string            `json:"missing,omitempty"`     // what could not be known, and why
	// --check results (this run's, or the last kept ones): Check for one
	// command, Checks for several; CheckSkipped says why a slot was not checked.
	Check        *compareCheck  `json:"check,omitempty"`
	Checks       []compareCheck `json:"checks,omitempty"`
	CheckSkipped string         `json:"check_skipped,omitempty"`
	alive        bool           // the agent may still write to the worktree
}

type compareOut struct {
	Group      string        `json:"group"`
	Repo       string        `json:"repo,omitempty"`
	BaseCommit string        `json:"base_commit,omitempty"`
	BaseRef    string        `json:"base_ref,omitempty"`
	Slots      []compareSlot `json:"slots"`
}

// compareOptionsFrom reads compare's flags and makes every usage check.
func compareOptionsFrom(c *cli.Context) (compareOptions, error) {
	o := compareOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(),
		JSON: c.Bool("json"), Repo: c.String("repo"), Checks: multi(c, "check"), CheckTimeout: c.String("check-timeout"),
		Sort: c.String("sort"), Wide: c.Bool("wide")}
	_, err := o.check()
	return o, err
}

// check is every usage check of compare, reading nothing; it returns the
// --check-timeout.
func (o compareOptions) check() (time.Duration, error) {
	if err := needArgs("compare", o.Args, 1, "a GROUP id (g-xxxxxx, from launch)"); err != nil {
		return 0, err
	}
	timeout := defaultCheckTimeout
	if o.CheckTimeout != "" {
		d, err := meta.ParseDuration(o.CheckTimeout)
		if err != nil || d <= 0 {
			return 0, usageErrorf("--check-timeout %q: want a positive duration such as 90s or 10m", o.CheckTimeout)
		}
		timeout = d
	}
	if o.Sort != "" && !slices.Contains(sortKeys, o.Sort) {
		return 0, usageErrorf("--sort %q: want one of %s", o.Sort, strings.Join(sortKeys, ", "))
	}
	for _, c := range o.Checks {
		if strings.TrimSpace(c) == "" {
			return 0, usageErrorf("--check needs a command, such as --check \"go test ./...\"")
		}
	}
	return timeout, nil
}

// runCompare shows a group's slots side by side. o comes checked from
// compareOptionsFrom, or built by hand (tests): it is checked again, before
// anything is read.
func runCompare(ctx context.Context, s *host, o compareOptions) error {
	timeout, err := o.check()
	if err != nil {
		return err
	}
	group := o.Args[0]
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	if len(o.Checks) > 0 {
		if err := e.mustTrust("compare --check"); err != nil {
			return err
		}
	}
	cp := &comparer{s: e.s, home: e.home, store: e.store, config: e.config, wide: o.Wide}
	res, env := e.discoverAll(ctx)
	var recs []meta.Launch
	for _, r := range env.Launches {
		if r.Group == group && r.Kind != launch.KindResume {
			recs = append(recs, r)
		}
	}
	out := compareOut{Group: group}
	repo := o.Repo
	for _, r := range recs {
		if out.BaseCommit == "" {
			out.BaseCommit, out.BaseRef = r.BaseCommit, r.BaseBranch
		}
		if repo == "" && r.Worktree != "" {
			repo = mainWorktreeOf(ctx, r.Worktree)
		}
	}
	var wts []worktree.Worktree
	if repo != "" {
		all, err := worktree.ListWorktrees(ctx, e.expand(repo))
		if err != nil && o.Repo != "" {
			return inputErr(err)
		}
		for _, w := range all {
			if w.Main {
				out.Repo = w.Path
			}
			if w.Group == group {
				wts = append(wts, w)
			}
		}
	}
	if len(recs) == 0 && len(wts) == 0 {
		hint := "see agentctl list -a --group, or pass --repo REPO if its launch records expired"
		if o.Repo != "" {
			hint = "no try/" + group + "/ branch has a worktree in " + o.Repo + "; see agentctl worktree list " + o.Repo
		}
		return &exitError{exitNotFound, fmt.Errorf("no launch group %s: %s", group, hint)}
	}
	if out.BaseCommit == "" && out.Repo != "" {
		var bs []string
		for _, w := range wts {
			bs = append(bs, w.Branch)
		}
		if b, err := worktree.GroupBase(ctx, out.Repo, bs); err == nil {
			out.BaseCommit = b
		}
	}
	sessions := map[string]discover.Session{}
	for _, ss := range res.Sessions {
		sessions[ss.Adapter+"\x00"+ss.ID] = ss
	}
	seen := map[string]bool{}
	now := s.now()
	for _, r := range recs {
		row := compareSlot{Slot: slotSuffix(group, r.Branch), Adapter: r.Adapter, Model: r.Model, LaunchID: r.ID,
			SessionID: r.CurrentSessionID(), Branch: r.Branch, Worktree: r.Worktree, ExitCode: r.ExitCode, ExitReason: r.ExitReason,
			OnComplete: r.OnCompleteResult, Status: "unknown"}
		seen[r.Branch] = true
		row.ID = row.SessionID
		row.alive = e.store.AgentAlive(&r)
		if ss, ok := sessions[r.Adapter+"\x00"+row.SessionID]; ok {
			row.Status = ss.Status
			row.alive = row.alive || live(ss, e.store, &r)
			row.Tokens, row.CostUSD = ss.Tokens, ss.CostUSD
			if row.Model == "" {
				row.Model = ss.Model
			}
		} else {
			row.Missing = append(row.Missing, "session: the agent's files of "+orDash(row.SessionID)+" were not found (status, tokens, cost unknown)")
			if r.Failure != "" {
				row.Status = "failed"
			}
		}
		if row.Tokens != nil {
			t := row.Tokens.Input + row.Tokens.Output + row.Tokens.CacheRead + row.Tokens.CacheWrite
			row.TokensTotal = &t
		}
		start := r.LaunchedAt
		if r.ConfirmedAt != nil {
			start = *r.ConfirmedAt
		}
		end := now
		if r.EndedAt != nil {
			end = *r.EndedAt
		}
		d := end.Sub(start).Round(time.Second).Seconds()
		row.DurationSeconds = &d
		if r.OnComplete != "" && r.OnCompleteResult == "" {
			row.OnComplete = "pending"
		}
		cp.diffRow(ctx, &row, out.BaseCommit)
		out.Slots = append(out.Slots, row)
	}
	for _, w := range wts {
		if seen[w.Branch] {
			continue
		}
		row := compareSlot{Slot: slotSuffix(group, w.Branch), Branch: w.Branch, Worktree: w.Path, Status: "unknown",
			Missing: []string{"launch record: expired or never written (adapter, model, session, exit code, tokens unknown)"}}
		cp.diffRow(ctx, &row, out.BaseCommit)
		out.Slots = append(out.Slots, row)
	}
	sort.SliceStable(out.Slots, func(i, j int) bool { return out.Slots[i].Slot < out.Slots[j].Slot })
	cp.attachChecks(ctx, &out)
	if len(o.Checks) > 0 {
		cp.runChecks(ctx, &out, o.Checks, timeout)
	}
	if o.Sort != "" {
		sortSlots(out.Slots, o.Sort)
	}
	if o.JSON {
		return writeJSON(s.Out, out)
	}
	cp.printCompare(out)
	return nil
}

// diffRow measures a slot's worktree against the group's base.
func (cp *comparer) diffRow(ctx context.Context, row *compareSlot, base string) {
	switch {
	case row.Worktree == "":
		row.Missing = append(row.Missing, "diff: the slot has no worktree")
	case !dirExists(row.Worktree):
		row.Missing = append(row.Missing, "diff: the worktree "+row.Worktree+" no longer exists (removed, or the slot never started)")
	case base == "":
		row.Missing = append(row.Missing, "diff: the group's base commit is unknown (pass --repo)")
	default:
		d, err := worktree.Diff(ctx, row.Worktree, base)
		if err != nil {
			row.DiffError = err.Error()
			return
		}
		row.Diff = &d
	}
}

func (cp *comparer) printCompare(out compareOut) {
	printHuman(cp.s.Out, "group %s", out.Group)
	if out.BaseCommit != "" {
		printHuman(cp.s.Out, " (base %.12s", out.BaseCommit)
		if out.BaseRef != "" && out.BaseRef != "HEAD" {
			printHuman(cp.s.Out, " %s", out.BaseRef)
		}
		fmt.Fprint(cp.s.Out, ")")
	}
	if out.Repo != "" {
		printHuman(cp.s.Out, " in %s", shortHome(out.Repo, cp.home))
	}
	fmt.Fprintln(cp.s.Out)
	var t table
	checks := checkColumns(out)
	head := []string{"SLOT", "ADAPTER", "MODEL", "STATUS", "EXIT", "DURATION", "TOKENS", "COST", "DIFF", "HOOK"}
	for i := range checks {
		if len(checks) == 1 {
			head = append(head, "CHECK")
		} else {
			head = append(head, fmt.Sprintf("CHECK%d", i+1))
		}
	}
	t.add(head...)
	var notes []string
	for _, r := range out.Slots {
		exit := "-"
		if r.ExitCode != nil {
			exit = strconv.Itoa(*r.ExitCode)
		}
		if r.ExitReason != "" {
			exit += " " + r.ExitReason
		}
		dur := "-"
		if r.DurationSeconds != nil {
			dur = (time.Duration(*r.DurationSeconds) * time.Second).String()
		}
		tok := "-"
		if r.TokensTotal != nil {
			tok = strconv.FormatInt(*r.TokensTotal, 10)
		}
		cost := "-"
		if r.CostUSD != nil {
			cost = money(*r.CostUSD)
		}
		diff := "-"
		switch {
		case r.Diff != nil:
			diff = fmt.Sprintf("%d %s +%d -%d", r.Diff.FilesChanged, plural(r.Diff.FilesChanged, "file", "files"), r.Diff.Insertions, r.Diff.Deletions)
			if n := len(r.Diff.Untracked); n > 0 {
				diff += fmt.Sprintf(" +%d new", n)
			}
		case r.DiffError != "":
			diff = "error"
			notes = append(notes, r.Slot+": "+r.DiffError)
		}
		for _, m := range r.Missing {
			notes = append(notes, r.Slot+": missing "+m)
		}
		if r.CheckSkipped != "" {
			notes = append(notes, r.Slot+": check skipped: "+r.CheckSkipped)
		}
		for i, c := range rowChecks(r) {
			if !c.Passed {
				last := c.Error
				if ls := strings.Split(strings.TrimSpace(c.OutputTail), "\n"); last == "" && len(ls) > 0 {
					last = ls[len(ls)-1]
				}
				if last == "" {
					last = "(no output)"
				}
				notes = append(notes, fmt.Sprintf("%s: check %d failed: %s", r.Slot, i+1, last))
			}
		}
		cells := []string{r.Slot, orDash(r.Adapter), orDash(r.Model), r.Status, exit, dur, tok, cost, diff, orDash(r.OnComplete)}
		t.add(append(cells, checkCells(r, len(checks))...)...)
	}
	if !cp.wide {
		// On a terminal: the model shortens, then HOOK, EXIT, ADAPTER and
		// DURATION go; the slot, status, tokens, cost, diff and checks stay.
		fit := []colFit{{}, {drop: 3}, {min: 10, soft: 14}, {}, {drop: 2}, {drop: 4}, {}, {}, {min: 12}, {drop: 1}}
		for range checks {
			fit = append(fit, colFit{})
		}
		t.fitTo(cp.s.outWidth, fit...)
	}
	t.write(cp.s.Out, nil)
	for i, c := range checks {
		name := "CHECK"
		if len(checks) > 1 {
			name = fmt.Sprintf("CHECK%d", i+1)
		}
		printHuman(cp.s.Out, "  %s: %s\n", name, c)
	}
	for _, n := range notes {
		printHuman(cp.s.Out, "  %s\n", n)
	}
}
