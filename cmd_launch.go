package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/launch/worktree"
)

// slotArgs records --adapter and --model in command-line order, so that a
// --model binds to the --adapter before it (flags lose their order otherwise).
type slotArgs struct {
	slots []slotArg
	loose []string // --model before any --adapter
}

type slotArg struct {
	Adapter string
	Models  []string
}

type adapterArg struct{ l *slotArgs }

func (a adapterArg) Set(v string) error {
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			a.l.slots = append(a.l.slots, slotArg{Adapter: n})
		}
	}
	return nil
}

func (a adapterArg) String() string {
	if a.l == nil {
		return ""
	}
	var n []string
	for _, s := range a.l.slots {
		n = append(n, s.Adapter)
	}
	return strings.Join(n, ",")
}

type modelArg struct{ l *slotArgs }

func (m modelArg) Set(v string) error {
	var models []string
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			models = append(models, n)
		}
	}
	if len(m.l.slots) == 0 {
		m.l.loose = append(m.l.loose, models...)
		return nil
	}
	last := &m.l.slots[len(m.l.slots)-1]
	last.Models = append(last.Models, models...)
	return nil
}

func (m modelArg) String() string {
	if m.l == nil {
		return ""
	}
	return strings.Join(m.l.loose, ",")
}

// launchAgentFlags are agentFlags with launch's ordered --model and --adapter.
func launchAgentFlags() []cli.Flag {
	var fs []cli.Flag
	for _, f := range agentFlags() {
		if f.Names()[0] != "model" {
			fs = append(fs, f)
		}
	}
	l := &slotArgs{}
	return append(fs,
		&cli.GenericFlag{Name: "adapter", Value: adapterArg{l}, Usage: "start a slot of this `ADAPTER` (repeatable; several make a comparison group): " + strings.Join(agents.Names(), ", ")},
		&cli.GenericFlag{Name: "model", Value: modelArg{l}, Usage: "`MODEL` for the --adapter before it (a comma list, or repeated, makes one slot per model)"},
	)
}

func launchCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "launch",
		Usage:     "start an agent session, supervised without a daemon",
		ArgsUsage: "[ADAPTER]",
		Description: `Starts the agent (default: config "adapter", else claude-code) in --cwd under a
detached supervisor, and prints the session id once the agent itself confirmed it.
The prompt reaches the agent on stdin from a private temp file, never on the
command line. The directory is auto-locked while the agent runs (--force overrides).

Several agents at once (a comparison group): repeat --adapter (a --model binds
to the --adapter before it; --model a,b makes one slot per model), or give
--matrix FILE. Each slot gets its own git worktree of the launch repository
(--cwd, else the current directory) on a new branch try/<group>/<slot>, beside
the repository as <repo>-try-<group>-<slot>, all from one base commit
(--base-branch, else the current HEAD, which must then have no uncommitted
changes). Every worktree is made before any agent starts; if one slot cannot be
set up, nothing is launched and nothing is left behind. Then see the result
with: agentctl compare GROUP.

--file/--spec attach text files as "--- File: <path> ---" blocks before the prompt;
--issue N prepends a GitHub issue (needs gh). --worktree REPO --branch B runs the
agent in a new git worktree of REPO on a new branch B, based on --base-branch
(default: the repository's current HEAD).

With --home DIR the agent runs with HOME=DIR, so it writes where agentctl reads.

--background (claude-code, Claude Code 2.1.329+) starts a Claude Code background
session: Claude's own daemon hosts it and ` + "`claude attach <short>`" + ` opens it. The
prompt goes to a pre-warmed spare on stdin, never into any argv (agentctl holds a
lease on the daemon until a spare is ready). The supervisor watches the session's
process and Claude's job record: exit 0 when it ends by ` + "`claude stop`" + ` or on its
own; hooks, webhooks and budgets apply as for any launch. The workspace must be
trusted in Claude's config. In a group, it applies to the claude-code slots (a
--matrix slot: background: true).

--keep-open (pi) keeps the run open for messages: pi runs in RPC mode and reads
commands from a FIFO (0600) under agentctl's state dir, the prompt being the
first; agentctl send ID MESSAGE writes more (can_send pi-rpc). Such a run never
ends on its own: between turns it is idle, --wait and agentctl wait return once
it is idle (exit 1 if its turn failed on the provider), and agentctl stop ID
ends it (the FIFO goes with it). Hooks, webhooks and budgets apply as for any
launch; on-complete runs when it is stopped.

--on-create runs after the id is confirmed; if it fails, launch exits 1 but the
agent keeps running. --on-complete runs when the agent exits, with
AGENTCTL_EXIT_CODE. Both get AGENTCTL_SESSION_ID, AGENTCTL_CWD, AGENTCTL_ADAPTER,
AGENTCTL_MODEL, AGENTCTL_GROUP, AGENTCTL_BRANCH.

Examples:
  agentctl launch -p "fix the flaky test in ./store"
  agentctl launch claude-code --cwd ~/code/api --model claude-sonnet-4-5 -p "add pagination"
  agentctl launch --issue 42 --repo acme/api --worktree ~/code/api --branch fix/42
  agentctl launch -p "review this" --file ./design.md --wait
  agentctl launch --adapter claude-code --model claude-opus-4-6,claude-sonnet-4-5 --adapter codex -p "add a cache"
  agentctl launch --matrix compare.yaml --wait
  agentctl launch claude-code --background -p "triage the open issues"
  agentctl launch pi --keep-open -p "read the failing test" --wait`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "prompt", Aliases: []string{"p"}, Usage: "the task (`TEXT`; - reads stdin)"},
			&cli.StringFlag{Name: "cwd", Usage: "working `DIR` (default: config cwd, else the current directory)"},
			&cli.GenericFlag{Name: "file", Value: &multiFlag{}, Usage: "attach a text `FILE` before the prompt (repeatable)"},
			&cli.StringFlag{Name: "spec", Usage: "attach a spec `FILE` first"},
			&cli.Int64Flag{Name: "max-file-size", Value: launch.DefaultMaxFileSize, Usage: "per-file limit for --file/--spec in `BYTES`"},
			&cli.StringFlag{Name: "issue", Usage: "prepend GitHub issue `N` (gh issue view)"},
			&cli.StringFlag{Name: "repo", Usage: "`OWNER/REPO` for --issue"},
			&cli.StringFlag{Name: "worktree", Usage: "run in a new git worktree of `REPO` (with --branch)"},
			&cli.StringFlag{Name: "branch", Usage: "new branch for --worktree"},
			&cli.StringFlag{Name: "base-branch", Usage: "base of --branch or of a group's branches (default: the repository's current HEAD)"},
			&cli.StringFlag{Name: "matrix", Usage: "launch the slots of a YAML `FILE` (prompt, cwd, base_branch, matrix: [{adapter, model, background}])"},
			&cli.BoolFlag{Name: "background", Usage: "claude-code: run as a Claude Code background session (claude --bg, 2.1.329+; `claude attach <short>` opens it)"},
			&cli.BoolFlag{Name: "keep-open", Usage: "pi: keep the run open for agentctl send (RPC mode) until stopped"},
		}, launchAgentFlags()...),
		Action: func(c *cli.Context) error {
			o, err := launchOptionsFrom(c)
			if err != nil {
				return err
			}
			return runLaunch(c.Context, s, o)
		},
	}
}

// launchOptions are launch's flags and arguments.
type launchOptions struct {
	globalOptions
	agentOptions
	Args                           []string // [ADAPTER]
	Prompt, Cwd, Spec, Issue, Repo string
	Files                          []string
	MaxFileSize                    int64
	Worktree, Branch, BaseBranch   string
	Matrix                         string
	Background                     bool
	KeepOpen                       bool
	// Slots are --adapter flags given after the command name, each with the
	// --model flags that followed it.
	Slots []slotArg
}

// launchOptionsFrom reads launch's flags and makes every usage check.
func launchOptionsFrom(c *cli.Context) (launchOptions, error) {
	ao, err := agentOptionsFrom(c)
	if err != nil {
		return launchOptions{}, err
	}
	o := launchOptions{globalOptions: globalsFrom(c), agentOptions: ao, Args: c.Args().Slice(),
		Prompt: c.String("prompt"), Cwd: c.String("cwd"), Spec: c.String("spec"), Issue: c.String("issue"), Repo: c.String("repo"),
		Files: multi(c, "file"), MaxFileSize: c.Int64("max-file-size"),
		Worktree: c.String("worktree"), Branch: c.String("branch"), BaseBranch: c.String("base-branch"),
		Matrix: c.String("matrix"), Background: c.Bool("background"), KeepOpen: c.Bool("keep-open")}
	if a, ok := c.Generic("adapter").(adapterArg); ok && a.l != nil {
		o.Slots = a.l.slots
		if len(a.l.loose) > 0 {
			o.Model = a.l.loose[len(a.l.loose)-1]
		}
		if len(a.l.loose) > 1 && len(a.l.slots) == 0 {
			// --model a,b without --adapter: one slot per model of the default adapter.
			o.Slots = []slotArg{{Models: a.l.loose}}
			o.Model = ""
		}
	}
	return o, o.check()
}

// check is every usage check of launch; it reads nothing (the adapter, the
// directories and the files are checked by launch.Launcher.PlanSlots).
func (o launchOptions) check() error {
	if len(o.Args) > 1 {
		return usageErrorf("launch takes at most one adapter (got %q); the prompt goes in -p", strings.Join(o.Args, " "))
	}
	if o.group() {
		switch {
		case o.Worktree != "" || o.Branch != "":
			return usageErrorf("a group launch makes one worktree per slot itself; drop --worktree/--branch (the repository is --cwd, else the current directory)")
		case o.Matrix != "" && len(o.groupSlots()) > 0:
			return usageErrorf("--matrix and --adapter/ADAPTER exclude each other; put every slot in the matrix file")
		case o.KeepOpen:
			return usageErrorf("--keep-open applies to a single launch, not a group; launch each run on its own")
		}
	}
	if o.MaxFileSize <= 0 {
		return usageErrorf("--max-file-size %d: want a positive number of bytes", o.MaxFileSize)
	}
	if v := o.Issue; v != "" {
		if err := launch.ValidIssue(v); err != nil {
			return usageErrorf("%v", err)
		}
	} else if o.Repo != "" {
		return usageErrorf("--repo only applies to --issue")
	}
	switch wt, branch := o.Worktree, o.Branch; {
	case wt != "" && branch == "":
		return usageErrorf("--worktree needs --branch NAME for the new branch")
	case wt == "" && branch != "":
		return usageErrorf("--branch needs --worktree REPO")
	case wt == "" && o.BaseBranch != "" && !o.group():
		return usageErrorf("--base-branch needs --worktree REPO and --branch NAME")
	case wt != "" && o.Cwd != "":
		return usageErrorf("--worktree and --cwd exclude each other: the agent runs in the new worktree")
	}
	return o.agentOptions.check()
}

// group says whether this is a comparison group: a matrix file or several slots.
func (o launchOptions) group() bool { return o.Matrix != "" || len(o.groupSlots()) > 1 }

// runLaunch starts the agents o asks for. o comes checked from
// launchOptionsFrom, or built by hand (tests): it is checked again, still
// before anything is read or written.
func runLaunch(ctx context.Context, s *host, o launchOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	if err := e.mustTrust("launch"); err != nil {
		return err
	}
	st := newStarter(e)
	sp, err := st.agentSpec(o.agentOptions, o.globalOptions)
	if err != nil {
		return err
	}
	sp.KeepOpen = o.KeepOpen
	ask := launch.Ask{Slots: o.groupSlots(), DefaultAdapter: st.configAdapter(), ConfigAdapter: st.configAdapter(), ConfigModel: e.config.Model,
		Background: o.Background, Cwd: o.Cwd, ConfigCwd: e.config.Cwd, Worktree: o.Worktree, Expand: e.expand, Agent: *sp,
		Prompt: launch.PromptInput{Prompt: o.Prompt, Files: o.Files, Spec: o.Spec, MaxFileSize: o.MaxFileSize, Issue: o.Issue, Repo: o.Repo}}
	if len(ask.Slots) == 0 && len(o.Adapters) == 1 {
		// `agentctl --adapter X launch`: the one adapter named before the command.
		ask.DefaultAdapter = o.Adapters[0]
	}
	base := o.BaseBranch
	if o.Matrix != "" {
		m, ms, err := launch.ReadMatrix(o.Matrix, e.expand)
		if err != nil {
			return inputErr(err)
		}
		ask.Slots, ask.Matrix = ms, true
		if ask.Prompt.Prompt == "" {
			ask.Prompt.Prompt = m.Prompt
		}
		if ask.Cwd == "" {
			ask.Cwd = m.Cwd
		}
		if base == "" {
			base = m.BaseBranch
		}
	}
	if ask.Prompt.Prompt == "-" {
		b, err := io.ReadAll(s.In)
		if err != nil {
			return &exitError{exitFailed, fmt.Errorf("read the prompt from stdin: %w", err)}
		}
		ask.Prompt.Prompt = string(b)
	}
	l := st.launcher
	specs, err := l.PlanSlots(ctx, ask)
	if err != nil {
		return inputErr(err)
	}
	if o.group() {
		return runGroupLaunch(ctx, st, o, specs, base)
	}
	one := specs[0].Spec
	if o.Worktree != "" {
		path, err := worktree.AddWorktree(ctx, one.Cwd, o.Branch, o.BaseBranch)
		if err != nil {
			return inputErr(err)
		}
		one.Worktree, one.Branch, one.BaseBranch, one.Cwd = path, o.Branch, o.BaseBranch, path
	}
	res, err := l.Start(ctx, one)
	if err != nil && one.Worktree != "" {
		if rerr := worktree.RemoveWorktree(context.Background(), one.Worktree, one.Branch); rerr != nil {
			warn(s, fmt.Sprintf("remove the worktree %s made for this launch: %v", one.Worktree, rerr))
		}
	}
	return st.reportStart(ctx, o.agentOptions, res, err, one.Adapter)
}
