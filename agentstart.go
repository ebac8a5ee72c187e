package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/meta"
)

// The start glue launch and resume share: the agent flags, the Spec they make,
// the report of a start, and what a driver sees of a session (stop too).
// No command reaches into another's file for these.

// starter starts agents for one launch or resume: the write side wired to
// the command's store, config and streams.
type starter struct {
	s        *host
	e        *cmdEnv
	home     string
	config   *meta.Config
	launcher *launch.Launcher
}

func newStarter(e *cmdEnv) *starter {
	var self string
	if e.s.executable != nil {
		self, _ = e.s.executable()
	}
	return &starter{s: e.s, e: e, home: e.home, config: e.config,
		launcher: &launch.Launcher{Deps: e.deps(), Self: self, Euid: os.Geteuid()}}
}

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
		&cli.StringFlag{Name: "model", Usage: "the agent's `MODEL`"},
		&cli.GenericFlag{Name: "env", Value: &multiFlag{}, Usage: "add `K=V` to the agent's environment (repeatable; never logged)"},
		&cli.StringFlag{Name: "permission-mode", Usage: "the agent's permission mode (claude-code: default, acceptEdits, plan, bypassPermissions, …)"},
		&cli.StringFlag{Name: "append-system-prompt", Usage: "`TEXT` appended to the agent's system prompt"},
		&cli.BoolFlag{Name: "sandbox", Usage: "this machine is a sandbox: allow bypassPermissions as root (sets IS_SANDBOX=1 for claude-code)"},
		&cli.StringFlag{Name: "on-create", Usage: "run `CMD` (sh -c, in the session's cwd) once the session id is confirmed"},
		&cli.StringFlag{Name: "on-complete", Usage: "run `CMD` (sh -c, in the session's cwd) when the agent exits"},
		&cli.StringFlag{Name: "callback-session", Usage: "callback session `KEY`, stored in meta (callback_session_key)"},
		&cli.StringFlag{Name: "callback-agent", Usage: "callback agent `ID`, stored in meta (callback_agent_id)"},
		&cli.BoolFlag{Name: "force", Usage: "override a directory lock"},
		&cli.BoolFlag{Name: "wait", Usage: "block until the session ends and exit with the agent's exit code"},
		&cli.BoolFlag{Name: "json", Usage: "print a JSON array of {id, adapter, model, cwd, group, branch, pid, log}"},
	}, budgetFlags()...)
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

// agentOptionsFrom reads agentFlags and checks what can be checked without
// reading anything: the --env pairs and the budget flags.
func agentOptionsFrom(c *cli.Context) (agentOptions, error) {
	o := agentOptions{Model: c.String("model"), PermissionMode: c.String("permission-mode"),
		AppendSystemPrompt: c.String("append-system-prompt"), Env: multi(c, "env"), Sandbox: c.Bool("sandbox"),
		OnCreate: c.String("on-create"), OnComplete: c.String("on-complete"),
		CallbackSession: c.String("callback-session"), CallbackAgent: c.String("callback-agent"),
		Force: c.Bool("force"), Wait: c.Bool("wait"), JSON: c.Bool("json"),
		MaxDuration: c.String("max-duration"), MaxCost: c.String("max-cost"), MaxTokens: c.String("max-tokens")}
	return o, o.check()
}

// check is every usage check of the shared flags; it reads nothing.
func (o agentOptions) check() error {
	if err := launch.ParseEnv(o.Env); err != nil {
		return usageErrorf("%v", err)
	}
	if _, err := meta.ParseBudget(o.MaxDuration, o.MaxCost, o.MaxTokens); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// atHome runs sp's agent with HOME=home (`--home DIR`, or a resumed session of
// such a run). HOME=DIR must not move the state of agentctl run inside the
// agent or by its hooks to DIR/.agentctl, so AGENTCTL_HOME joins the base
// environment both start from (not --env, which a gateway agent refuses and
// which may still say otherwise).
func (st *starter) atHome(sp *launch.Spec, home string) {
	sp.Home = home
	dir, err := filepath.Abs(st.launcher.Deps.Store.Dir)
	if err != nil {
		return
	}
	env := slices.DeleteFunc(slices.Clone(st.launcher.Environ), func(kv string) bool { return strings.HasPrefix(kv, "AGENTCTL_HOME=") })
	st.launcher.Environ = append(env, "AGENTCTL_HOME="+dir)
}

// agentSpec reads the flags launch and resume share.
func (st *starter) agentSpec(o agentOptions, g globalOptions) (*launch.Spec, error) {
	env := o.Env
	sp := &launch.Spec{Model: o.Model, PermissionMode: o.PermissionMode,
		AppendSystemPrompt: o.AppendSystemPrompt, Sandbox: o.Sandbox, UserEnv: env,
		OnCreate: o.OnCreate, OnComplete: o.OnComplete, Force: o.Force, User: userName(st.s)}
	if g.Home != "" {
		st.atHome(sp, st.home)
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
	var err error
	if sp.Budget, err = budgetOf(o, st.config); err != nil {
		return nil, err
	}
	sp.WebhookURL, sp.WebhookSecret = st.config.WebhookURL, st.config.WebhookSecret
	if v := st.s.getenv("AGENTCTL_WEBHOOK_URL"); v != "" {
		sp.WebhookURL = v
	}
	if v := st.s.getenv("AGENTCTL_WEBHOOK_SECRET"); v != "" {
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

// configAdapter is config's "adapter", else claude-code: the adapter of a
// launch (or slot) that names none.
func (st *starter) configAdapter() string {
	if st.config.Adapter != "" {
		return st.config.Adapter
	}
	return "claude-code"
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
func (st *starter) reportStart(ctx context.Context, o agentOptions, res *launch.Result, err error, adapter string) error {
	asJSON := o.JSON
	if err != nil {
		if asJSON {
			_ = writeJSON(st.s.Out, []launchOut{{Adapter: adapter, Error: err.Error()}})
		}
		return inputErr(err)
	}
	for _, w := range res.Warnings {
		warn(st.s, w)
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
		if err := writeJSON(st.s.Out, []launchOut{o}); err != nil {
			return err
		}
	} else {
		switch {
		case r.Kind == launch.KindResume && r.ResumedAs != "":
			printHuman(st.s.Out, "resumed %s as %s (%s, pid %d)\n", r.SessionID, r.ResumedAs, r.Adapter, r.PID)
		case r.Kind == launch.KindResume:
			printHuman(st.s.Out, "resumed %s (%s, pid %d)\n", id, r.Adapter, r.PID)
		case r.Background:
			printHuman(st.s.Out, "launched %s (%s background session %s, pid %d) in %s; `claude attach %s` opens it\n",
				id, r.Adapter, r.JobID, r.PID, shortHome(r.Cwd, st.home), r.JobID)
		default:
			printHuman(st.s.Out, "launched %s (%s, pid %d) in %s\n", id, r.Adapter, r.PID, shortHome(r.Cwd, st.home))
		}
	}
	if res.OnCreateErr != nil {
		return &exitError{exitFailed, fmt.Errorf("%v; the agent keeps running (%s)", res.OnCreateErr, id)}
	}
	if !o.Wait {
		return nil
	}
	if r.Input != "" {
		if done, err := st.waitKeptOpen(ctx, id, asJSON); done {
			return err
		}
	}
	end, err := st.launcher.WaitLaunch(ctx, r.ID)
	if err != nil {
		return &exitError{exitFailed, err}
	}
	if asJSON {
		b, _ := json.Marshal(map[string]any{"id": id, "exit_code": end.ExitCode, "failure": end.Failure})
		fmt.Fprintln(st.s.Out, string(b))
	} else {
		printHuman(st.s.Out, "%s ended (%s)%s\n", id, launch.ExitStatus(end.ExitCode), failureSuffix(end))
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

// seenOf is what the drivers' policies need to know about a session.
func seenOf(sess discover.Session, env *discover.Env) launch.Seen {
	s := launch.Seen{ID: sess.ID, Adapter: sess.Adapter, Status: sess.Status, Alive: discover.Alive(sess.Status),
		Unknown: sess.Status == discover.StatusUnknown, Evidence: sess.Evidence, PID: sess.PID, Cwd: sess.Cwd}
	if sess.LaunchID != "" && env != nil {
		s.Launch = meta.FindLaunch(env.Launches, sess.LaunchID)
	}
	return s
}

// waitKeptOpen is --wait for a kept-open run (launch --keep-open), which never
// ends on its own: it returns once the session is idle, its prompt's turn
// over (exit 0, or 1 when that turn failed on the provider: blocked_reason).
// done false: the run ended first, and its end is reported as any other's.
func (st *starter) waitKeptOpen(ctx context.Context, id string, asJSON bool) (bool, error) {
	for {
		sess, _, err := st.e.resolve(ctx, id)
		switch {
		case err != nil:
		case sess.Status == discover.StatusIdle:
			if asJSON {
				b, _ := json.Marshal(map[string]any{"id": id, "status": sess.Status, "blocked_reason": sess.BlockedReason})
				fmt.Fprintln(st.s.Out, string(b))
			} else {
				why := ""
				if sess.BlockedReason != "" {
					why = " (its turn failed: " + sess.BlockedReason + ")"
				}
				printHuman(st.s.Out, "%s idle%s; it stays open: agentctl send %s MESSAGE, agentctl stop %s\n", id, why, id, id)
			}
			if sess.BlockedReason != "" {
				return true, &exitError{exitFailed, nil}
			}
			return true, nil
		case !discover.Alive(sess.Status) && sess.Status != discover.StatusUnknown:
			return false, nil
		}
		if err := st.launcher.Sleep(ctx, keptOpenPoll); err != nil {
			return true, &exitError{exitFailed, err}
		}
	}
}

// keptOpenPoll is how often launch --wait looks at a kept-open run's status.
const keptOpenPoll = 500 * time.Millisecond
