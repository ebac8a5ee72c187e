package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
)

func statusCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show every field of one session",
		ArgsUsage: "ID",
		Description: `ID is a full session id or a prefix matching exactly one session.

Examples:
  agentctl status 75098152
  agentctl status --json 75098152 | jq .tokens
  agentctl status --explain 75098152     # every signal considered and why the status won
  agentctl status --explain --json 75098152 | jq .explain.signals`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
			&cli.BoolFlag{Name: "explain", Usage: "also list every signal considered (launch record, registry, argv, lock, process, last record) and why the status won"},
		},
		Action: func(c *cli.Context) error {
			return runStatus(c.Context, s, statusOptionsFrom(c))
		},
	}
}

// statusOptions are status's flags and arguments.
type statusOptions struct {
	globalOptions
	Args    []string // the session ID
	JSON    bool
	Explain bool
}

func statusOptionsFrom(c *cli.Context) statusOptions {
	return statusOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(), JSON: c.Bool("json"), Explain: c.Bool("explain")}
}

func runStatus(ctx context.Context, s *host, o statusOptions) error {
	if err := needArgs("status", o.Args, 1, "one session ID"); err != nil {
		return err
	}
	e, sess, env, err := setupSession(ctx, s, o.globalOptions, o.Args[0])
	if err != nil {
		return err
	}
	if d, ok := e.adapterFor(sess).(discover.Detailer); ok {
		ctx, cancel := context.WithTimeout(ctx, e.timeout)
		full, err := d.Detail(ctx, env.WithWarn(func(m string) { warn(s, sess.Adapter+": "+m) }), sess)
		cancel()
		if err != nil {
			warn(s, fmt.Sprintf("%s: details unavailable: %v", sess.Adapter, err))
		} else {
			sess = full
		}
	}
	for _, m := range scrubWarnings(&sess, scrubSession(&sess)) {
		warn(s, m)
	}
	if o.Explain {
		return e.explainStatus(ctx, env, sess, o.JSON)
	}
	if o.JSON {
		return writeJSON(s.Out, sess)
	}
	e.printStatus(sess)
	return nil
}

func (e *cmdEnv) printStatus(s discover.Session) {
	var t table
	add := func(k, v string) {
		if v != "" {
			t.add(k+":", v)
		}
	}
	ts := func(p *time.Time) string {
		if p == nil {
			return ""
		}
		return fmt.Sprintf("%s (%s ago)", p.UTC().Format(time.RFC3339), age(e.s.now().Sub(*p)))
	}
	add("id", s.ID)
	add("adapter", s.Adapter)
	status := s.Status
	if s.Inferred {
		status += " (inferred)"
	}
	add("status", status)
	if s.BlockedReason != "" {
		if s.BlockedReason == discover.BlockedAPIErrors {
			add("blocked", s.BlockedReason+" (the provider's API kept failing until the agent gave up retrying; check the provider or switch model, then resume)")
		} else {
			add("blocked", s.BlockedReason+" (the latest turn failed on the agent's account; fix it, then resume)")
		}
	}
	ev := s.Evidence
	if s.EvidenceDetail != "" {
		ev += " — " + s.EvidenceDetail
	}
	add("evidence", ev)
	if s.PID > 0 {
		add("pid", fmt.Sprint(s.PID))
	}
	add("cwd", s.Cwd)
	if s.LastCwd != "" && s.LastCwd != s.Cwd {
		add("last cwd", s.LastCwd)
	}
	add("model", s.Model)
	if len(s.Models) > 1 {
		add("models", strings.Join(s.Models, ", "))
	}
	add("title", discover.OneLine(s.Title, 200))
	add("prompt", discover.OneLine(s.Prompt, 200))
	add("started", ts(s.StartedAt))
	add("last activity", ts(s.LastActivity))
	add("ended", ts(s.EndedAt))
	if s.ExitCode != nil {
		add("exit code", fmt.Sprint(*s.ExitCode))
	}
	add("exit reason", s.ExitReason)
	add("budget", s.Budget.String())
	if s.Tokens != nil {
		add("tokens", s.Tokens.String())
	}
	if s.CostUSD != nil {
		src := s.CostSource
		if src == "estimate" {
			src = "estimate from the price table"
		}
		add("cost", fmt.Sprintf("$%.6f (%s)", *s.CostUSD, src))
	}
	add("git branch", s.GitBranch)
	add("agent version", s.AgentVersion)
	add("entrypoint", s.Entrypoint)
	if s.Kind != "" {
		k := s.Kind
		if s.JobID != "" {
			k += " (job " + s.JobID + "; `claude attach " + s.JobID + "` opens it)"
		}
		add("kind", k)
	}
	add("permission mode", s.PermissionMode)
	add("group", s.Group)
	add("spec", s.Spec)
	add("launch id", s.LaunchID)
	add("log", s.Log)
	add("file", s.Path)
	keys := make([]string, 0, len(s.Meta))
	for k := range s.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		add("meta."+k, s.Meta[k])
	}
	keys = keys[:0]
	for k := range s.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		add(strings.ReplaceAll(k, "_", " "), fmt.Sprint(s.Extra[k]))
	}
	t.write(e.s.Out, nil)
}
