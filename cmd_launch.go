package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/user"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/launch/worktree"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// multiFlag is a repeatable string flag that never splits on commas (urfave's
// StringSlice does, which would cut `--env NO_PROXY=a,b` or a path with a comma).
type multiFlag struct{ vals []string }

func (m *multiFlag) Set(v string) error { m.vals = append(m.vals, v); return nil }
func (m *multiFlag) String() string     { return strings.Join(m.vals, ", ") }

func multi(c *cli.Context, name string) []string {
	if g, ok := c.Generic(name).(*multiFlag); ok && g != nil {
		return g.vals
	}
	return nil
}

// launchFlags are shared by launch and resume.
func agentFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "model", Usage: "model for the agent"},
		&cli.GenericFlag{Name: "env", Value: &multiFlag{}, Usage: "add `K=V` to the agent's environment (repeatable; never logged)"},
		&cli.StringFlag{Name: "permission-mode", Usage: "the agent's permission mode (claude-code: default, acceptEdits, plan, bypassPermissions, …)"},
		&cli.StringFlag{Name: "append-system-prompt", Usage: "text appended to the agent's system prompt"},
		&cli.BoolFlag{Name: "sandbox", Usage: "this machine is a sandbox: allow bypassPermissions as root (sets IS_SANDBOX=1 for claude-code)"},
		&cli.StringFlag{Name: "on-create", Usage: "run `CMD` (sh -c, in the session's cwd) once the session id is confirmed"},
		&cli.StringFlag{Name: "on-complete", Usage: "run `CMD` (sh -c, in the session's cwd) when the agent exits"},
		&cli.StringFlag{Name: "callback-session", Usage: "callback session key, stored in meta (callback_session_key)"},
		&cli.StringFlag{Name: "callback-agent", Usage: "callback agent id, stored in meta (callback_agent_id)"},
		&cli.BoolFlag{Name: "force", Usage: "override a directory lock"},
		&cli.BoolFlag{Name: "wait", Usage: "block until the session ends and exit with the agent's exit code"},
		&cli.BoolFlag{Name: "json", Usage: "print a JSON array of {id, adapter, model, cwd, group, branch, pid, log}"},
	}, budgetFlags()...)
}

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
  agentctl launch claude-code --background -p "triage the open issues"`,
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
		}, launchAgentFlags()...),
		Action: func(c *cli.Context) error {
			return runLaunch(c.Context, s, launchOptionsFrom(c))
		},
	}
}

// agentOptions are the flags launch and resume share (agentFlags).
type agentOptions struct {
	Model, PermissionMode, AppendSystemPrompt string
	Env                                       []string // K=V
	Sandbox                                   bool
	OnCreate, OnComplete                      string
	CallbackSession, CallbackAgent            string
	Force, Wait, JSON                         bool
	// --max-duration, --max-cost, --max-tokens as given ("" unset).
	MaxDuration, MaxCost, MaxTokens string
}

func agentOptionsFrom(c *cli.Context) agentOptions {
	return agentOptions{Model: c.String("model"), PermissionMode: c.String("permission-mode"),
		AppendSystemPrompt: c.String("append-system-prompt"), Env: multi(c, "env"), Sandbox: c.Bool("sandbox"),
		OnCreate: c.String("on-create"), OnComplete: c.String("on-complete"),
		CallbackSession: c.String("callback-session"), CallbackAgent: c.String("callback-agent"),
		Force: c.Bool("force"), Wait: c.Bool("wait"), JSON: c.Bool("json"),
		MaxDuration: c.String("max-duration"), MaxCost: c.String("max-cost"), MaxTokens: c.String("max-tokens")}
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
	// Slots are --adapter flags given after the command name, each with the
	// --model flags that followed it.
	Slots []slotArg
}

func launchOptionsFrom(c *cli.Context) launchOptions {
	o := launchOptions{globalOptions: globalsFrom(c), agentOptions: agentOptionsFrom(c), Args: c.Args().Slice(),
		Prompt: c.String("prompt"), Cwd: c.String("cwd"), Spec: c.String("spec"), Issue: c.String("issue"), Repo: c.String("repo"),
		Files: multi(c, "file"), MaxFileSize: c.Int64("max-file-size"),
		Worktree: c.String("worktree"), Branch: c.String("branch"), BaseBranch: c.String("base-branch"),
		Matrix: c.String("matrix"), Background: c.Bool("background")}
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
	return o
}

func runLaunch(ctx context.Context, s *host, o launchOptions) error {
	if len(o.Args) > 1 {
		return usageErrorf("launch takes at most one adapter (got %q); the prompt goes in -p", strings.Join(o.Args, " "))
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	e.rememberHome()
	slots := o.groupSlots()
	group := o.Matrix != "" || len(slots) > 1
	if group {
		switch {
		case o.Worktree != "" || o.Branch != "":
			return usageErrorf("a group launch makes one worktree per slot itself; drop --worktree/--branch (the repository is --cwd, else the current directory)")
		case o.Matrix != "" && (len(slots) > 0):
			return usageErrorf("--matrix and --adapter/ADAPTER exclude each other; put every slot in the matrix file")
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
	wt, branch := o.Worktree, o.Branch
	switch {
	case wt != "" && branch == "":
		return usageErrorf("--worktree needs --branch NAME for the new branch")
	case wt == "" && branch != "":
		return usageErrorf("--branch needs --worktree REPO")
	case wt == "" && o.BaseBranch != "" && !group:
		return usageErrorf("--base-branch needs --worktree REPO and --branch NAME")
	case wt != "" && o.Cwd != "":
		return usageErrorf("--worktree and --cwd exclude each other: the agent runs in the new worktree")
	}
	sp, err := e.agentSpec(o.agentOptions, o.globalOptions)
	if err != nil {
		return err
	}
	ask := launch.Ask{Slots: slots, DefaultAdapter: e.configAdapter(), ConfigAdapter: e.configAdapter(), ConfigModel: e.config.Model,
		Background: o.Background, Cwd: o.Cwd, ConfigCwd: e.config.Cwd, Worktree: wt, Expand: e.expand, Agent: *sp,
		Prompt: launch.PromptInput{Prompt: o.Prompt, Files: o.Files, Spec: o.Spec, MaxFileSize: o.MaxFileSize, Issue: o.Issue, Repo: o.Repo}}
	if !group && len(slots) == 0 && len(o.Adapters) == 1 {
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
	l := e.launcher()
	specs, err := l.PlanSlots(ctx, ask)
	if err != nil {
		return inputErr(err)
	}
	if group {
		return runGroupLaunch(ctx, s, e, l, o, specs, base)
	}
	one := specs[0].Spec
	if wt != "" {
		path, err := worktree.AddWorktree(ctx, one.Cwd, branch, o.BaseBranch)
		if err != nil {
			return inputErr(err)
		}
		one.Worktree, one.Branch, one.BaseBranch, one.Cwd = path, branch, o.BaseBranch, path
	}
	res, err := l.Start(ctx, one)
	if err != nil && one.Worktree != "" {
		if rerr := worktree.RemoveWorktree(context.Background(), one.Worktree, one.Branch); rerr != nil {
			warn(s, fmt.Sprintf("remove the worktree %s made for this launch: %v", one.Worktree, rerr))
		}
	}
	return e.reportStart(ctx, o.agentOptions, res, err, one.Adapter)
}

// agentSpec reads the flags launch and resume share.
func (e *cmdEnv) agentSpec(o agentOptions, g globalOptions) (*launch.Spec, error) {
	env := o.Env
	err := launch.ParseEnv(env)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	sp := &launch.Spec{Model: o.Model, PermissionMode: o.PermissionMode,
		AppendSystemPrompt: o.AppendSystemPrompt, Sandbox: o.Sandbox, UserEnv: env,
		OnCreate: o.OnCreate, OnComplete: o.OnComplete, Force: o.Force, User: userName(e.s)}
	if g.Home != "" {
		sp.Home = e.home
	}
	if v := o.CallbackSession; v != "" {
		sp.Meta = map[string]string{"callback_session_key": v}
	}
	if v := o.CallbackAgent; v != "" {
		if sp.Meta == nil {
			sp.Meta = map[string]string{}
		}
		sp.Meta["callback_agent_id"] = v
	}
	if sp.Budget, err = e.budget(o); err != nil {
		return nil, err
	}
	sp.WebhookURL, sp.WebhookSecret = e.config.WebhookURL, e.config.WebhookSecret
	if v := e.s.getenv("AGENTCTL_WEBHOOK_URL"); v != "" {
		sp.WebhookURL = v
	}
	if v := e.s.getenv("AGENTCTL_WEBHOOK_SECRET"); v != "" {
		sp.WebhookSecret = v
	}
	if sp.WebhookURL != "" {
		u, err := url.Parse(sp.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usageErrorf("webhook url %q (AGENTCTL_WEBHOOK_URL or config webhook_url): want an http(s) URL", sp.WebhookURL)
		}
	}
	return sp, nil
}

func (e *cmdEnv) configAdapter() string {
	if e.config.Adapter != "" {
		return e.config.Adapter
	}
	return "claude-code"
}

// inputErr maps launch errors to exit codes: bad input 2, a locked dir 5, else 1.
func inputErr(err error) error {
	var ie *launch.InputError
	var wie *worktree.InputError
	var ce *locks.ConflictError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie), errors.As(err, &wie):
		return &exitError{exitUsage, err}
	case errors.As(err, &ce):
		return &exitError{exitLocked, err}
	}
	return &exitError{exitFailed, err}
}

// deps wires the write side to this command's store and config.
func (e *cmdEnv) deps() *launch.Deps {
	if e.store.LaunchTTL == 0 {
		e.store.ApplyConfig(e.config) // once per command (it warns about a bad launch_ttl)
	}
	d := launch.DefaultDeps(e.store, e.config)
	d.Warn = func(m string) { warn(e.s, m) }
	d.Totals = sessionTotals(e.newEnv)
	return d
}

func (e *cmdEnv) launcher() *launch.Launcher {
	var self string
	if e.s.executable != nil {
		self, _ = e.s.executable()
	}
	return &launch.Launcher{Deps: e.deps(), Self: self, Euid: os.Geteuid()}
}

// launchOut is one element of `launch --json`.
type launchOut struct {
	ID      string `json:"id,omitempty"`
	Adapter string `json:"adapter"`
	Model   string `json:"model,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	Group   string `json:"group,omitempty"`
	Branch  string `json:"branch,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Log     string `json:"log,omitempty"`
	// LaunchID and ResumedFrom are agentctl's own additions.
	LaunchID    string `json:"launch_id,omitempty"`
	ResumedFrom string `json:"resumed_from,omitempty"`
	// Kind is "background" and JobID Claude's short id for a Claude Code
	// background session (launch --background).
	Kind  string `json:"kind,omitempty"`
	JobID string `json:"job_id,omitempty"`
	Error string `json:"error,omitempty"`
}

// reportStart prints a launch's (or resume's) outcome and handles --wait.
func (e *cmdEnv) reportStart(ctx context.Context, o agentOptions, res *launch.Result, err error, adapter string) error {
	asJSON := o.JSON
	if err != nil {
		if asJSON {
			_ = writeJSON(e.s.Out, []launchOut{{Adapter: adapter, Error: err.Error()}})
		}
		return inputErr(err)
	}
	for _, w := range res.Warnings {
		warn(e.s, w)
	}
	r := res.Record
	id := r.CurrentSessionID()
	model := r.Model
	if model == "" && r.Init != nil {
		model = r.Init.Model
	}
	if asJSON {
		o := launchOut{ID: id, Adapter: r.Adapter, Model: model, Cwd: r.Cwd, Group: r.Group, Branch: r.Branch, PID: r.PID, Log: r.Log, LaunchID: r.ID}
		if r.Kind == launch.KindResume && r.ResumedAs != "" {
			o.ResumedFrom = r.SessionID
		}
		if r.Background {
			o.Kind, o.JobID = "background", r.JobID
		}
		if err := writeJSON(e.s.Out, []launchOut{o}); err != nil {
			return err
		}
	} else {
		switch {
		case r.Kind == launch.KindResume && r.ResumedAs != "":
			printHuman(e.s.Out, "resumed %s as %s (%s, pid %d)\n", r.SessionID, r.ResumedAs, r.Adapter, r.PID)
		case r.Kind == launch.KindResume:
			printHuman(e.s.Out, "resumed %s (%s, pid %d)\n", id, r.Adapter, r.PID)
		case r.Background:
			printHuman(e.s.Out, "launched %s (%s background session %s, pid %d) in %s; `claude attach %s` opens it\n",
				id, r.Adapter, r.JobID, r.PID, shortHome(r.Cwd, e.home), r.JobID)
		default:
			printHuman(e.s.Out, "launched %s (%s, pid %d) in %s\n", id, r.Adapter, r.PID, shortHome(r.Cwd, e.home))
		}
	}
	if res.OnCreateErr != nil {
		return &exitError{exitFailed, fmt.Errorf("%v; the agent keeps running (%s)", res.OnCreateErr, id)}
	}
	if !o.Wait {
		return nil
	}
	end, err := e.deps().WaitLaunch(ctx, r.ID)
	if err != nil {
		return &exitError{exitFailed, err}
	}
	if asJSON {
		b, _ := json.Marshal(map[string]any{"id": id, "exit_code": end.ExitCode, "failure": end.Failure})
		fmt.Fprintln(e.s.Out, string(b))
	} else {
		printHuman(e.s.Out, "%s ended (%s)%s\n", id, launch.ExitStatus(end.ExitCode), failureSuffix(end))
	}
	if end.ExitCode == nil {
		return &exitError{exitFailed, fmt.Errorf("%s ended but its exit code is unknown (the supervisor did not see it)", id)}
	}
	return &exitError{*end.ExitCode, nil}
}

func failureSuffix(r *meta.Launch) string {
	if r.Failure == "" {
		return ""
	}
	return ": " + r.Failure
}

func userName(s *host) string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if v := s.getenv("USER"); v != "" {
		return v
	}
	return "unknown"
}

// finaliseDead is the lazy half of supervision, run by every command that reads
// sessions: launches whose agent and supervisor both died get finalised once,
// here, and the slow half (on-complete, the webhook, a gateway's answer) goes
// to a detached `agentctl __finalise`, so reading never waits on it.
func (e *cmdEnv) finaliseDead(ctx context.Context) {
	d := e.deps()
	if e.s.executable != nil {
		if self, err := e.s.executable(); err == nil {
			d.Detach = d.Detached(self)
		}
	}
	if _, err := d.FinaliseDead(ctx); err != nil {
		warn(e.s, fmt.Sprintf("finalise ended launches: %v", err))
	}
}
