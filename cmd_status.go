package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/send"
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
			o, err := statusOptionsFrom(c)
			if err != nil {
				return err
			}
			return runStatus(c.Context, s, o)
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

func statusOptionsFrom(c *cli.Context) (statusOptions, error) {
	o := statusOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(), JSON: c.Bool("json"), Explain: c.Bool("explain")}
	return o, o.check()
}

// check is every usage check of status's options; it reads nothing.
func (o statusOptions) check() error { return needArgs("status", o.Args, 1, "one session ID") }

// runStatus prints one session. It checks the options again (check, no I/O),
// so in-process callers that build them by hand get the same usage errors.
func runStatus(ctx context.Context, s *host, o statusOptions) error {
	if err := o.check(); err != nil {
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
		return explainStatus(ctx, e, env, sess, o.JSON)
	}
	sess.CanSend = send.CanSendAsking(ctx, env, &sess)
	if o.JSON {
		return writeJSON(s.Out, sess)
	}
	printStatus(e, sess)
	return nil
}

func printStatus(e *cmdEnv, s discover.Session) { writeStatus(e.s.Out, &s, e.s.now()) }

// writeStatus prints s as `status` does: one line per field of statusFields
// that has a value, in the table's order, aligned.
func writeStatus(w io.Writer, s *discover.Session, now time.Time) {
	var t table
	for _, f := range statusFields {
		if f.lines != nil {
			for _, l := range f.lines(s) {
				if l[1] != "" {
					t.add(l[0]+":", l[1])
				}
			}
		} else if v := f.value(s, now); v != "" {
			t.add(f.label+":", v)
		}
	}
	t.write(w, nil)
}

// statusField is one line of `status`: its label and the value it shows (an
// empty value leaves the line out), or, for a map, one line per key (lines).
type statusField struct {
	label string
	value func(s *discover.Session, now time.Time) string
	lines func(s *discover.Session) [][2]string // label, value; in order
}

// statusFields is what `status` shows of a session, in order: the one list of
// its lines (the JSON's is discover.Session itself). Never modified.
var statusFields = []statusField{
	{label: "id", value: func(s *discover.Session, _ time.Time) string { return s.ID }},
	{label: "adapter", value: func(s *discover.Session, _ time.Time) string { return s.Adapter }},
	{label: "status", value: func(s *discover.Session, _ time.Time) string {
		if s.Inferred {
			return s.Status + " (inferred)"
		}
		return s.Status
	}},
	{label: "blocked", value: func(s *discover.Session, _ time.Time) string {
		switch s.BlockedReason {
		case "":
			return ""
		case discover.BlockedAPIErrors:
			return s.BlockedReason + " (the provider's API kept failing until the agent gave up retrying; check the provider or switch model, then resume)"
		}
		return s.BlockedReason + " (the latest turn failed on the agent's account; fix it, then resume)"
	}},
	{label: "evidence", value: func(s *discover.Session, _ time.Time) string {
		if s.EvidenceDetail != "" {
			return s.Evidence + " — " + s.EvidenceDetail
		}
		return s.Evidence
	}},
	{label: "pid", value: func(s *discover.Session, _ time.Time) string {
		if s.PID > 0 {
			return fmt.Sprint(s.PID)
		}
		return ""
	}},
	{label: "cwd", value: func(s *discover.Session, _ time.Time) string { return s.Cwd }},
	{label: "last cwd", value: func(s *discover.Session, _ time.Time) string {
		if s.LastCwd != s.Cwd {
			return s.LastCwd
		}
		return ""
	}},
	{label: "model", value: func(s *discover.Session, _ time.Time) string { return s.Model }},
	{label: "models", value: func(s *discover.Session, _ time.Time) string {
		if len(s.Models) > 1 {
			return strings.Join(s.Models, ", ")
		}
		return ""
	}},
	{label: "title", value: func(s *discover.Session, _ time.Time) string { return discover.OneLine(s.Title, 200) }},
	{label: "prompt", value: func(s *discover.Session, _ time.Time) string { return discover.OneLine(s.Prompt, 200) }},
	{label: "started", value: func(s *discover.Session, now time.Time) string { return statusTime(s.StartedAt, now) }},
	{label: "last activity", value: func(s *discover.Session, now time.Time) string { return statusTime(s.LastActivity, now) }},
	{label: "ended", value: func(s *discover.Session, now time.Time) string { return statusTime(s.EndedAt, now) }},
	{label: "exit code", value: func(s *discover.Session, _ time.Time) string {
		if s.ExitCode != nil {
			return fmt.Sprint(*s.ExitCode)
		}
		return ""
	}},
	{label: "exit reason", value: func(s *discover.Session, _ time.Time) string { return s.ExitReason }},
	{label: "budget", value: func(s *discover.Session, _ time.Time) string { return s.Budget.String() }},
	{label: "tokens", value: func(s *discover.Session, _ time.Time) string {
		if s.Tokens != nil {
			return s.Tokens.String()
		}
		return ""
	}},
	{label: "cost", value: func(s *discover.Session, _ time.Time) string {
		if s.CostUSD == nil {
			return ""
		}
		src := s.CostSource
		if src == "estimate" {
			src = "estimate from the price table"
		}
		return fmt.Sprintf("%s (%s)", money(*s.CostUSD), src)
	}},
	{label: "git branch", value: func(s *discover.Session, _ time.Time) string { return s.GitBranch }},
	{label: "agent version", value: func(s *discover.Session, _ time.Time) string { return s.AgentVersion }},
	{label: "entrypoint", value: func(s *discover.Session, _ time.Time) string { return s.Entrypoint }},
	{label: "kind", value: func(s *discover.Session, _ time.Time) string {
		if s.Kind != "" && s.JobID != "" {
			return s.Kind + " (job " + s.JobID + "; `claude attach " + s.JobID + "` opens it)"
		}
		return s.Kind
	}},
	{label: "can send", value: func(s *discover.Session, _ time.Time) string {
		if s.CanSend != "" {
			return "via " + s.CanSend + " (agentctl send " + s.ID + " MESSAGE)"
		}
		return ""
	}},
	{label: "permission mode", value: func(s *discover.Session, _ time.Time) string { return s.PermissionMode }},
	{label: "group", value: func(s *discover.Session, _ time.Time) string { return s.Group }},
	{label: "spec", value: func(s *discover.Session, _ time.Time) string { return s.Spec }},
	{label: "launch id", value: func(s *discover.Session, _ time.Time) string { return s.LaunchID }},
	{label: "log", value: func(s *discover.Session, _ time.Time) string { return s.Log }},
	{label: "file", value: func(s *discover.Session, _ time.Time) string { return s.Path }},
	{label: "meta", lines: func(s *discover.Session) [][2]string {
		return sortedLines(s.Meta, func(k string) string { return "meta." + k }, func(v string) string { return v })
	}},
	{label: "extra", lines: func(s *discover.Session) [][2]string {
		return sortedLines(s.Extra, func(k string) string { return strings.ReplaceAll(k, "_", " ") }, func(v any) string { return fmt.Sprint(v) })
	}},
}

// statusTime shows a time in UTC with how long ago it was.
func statusTime(p *time.Time, now time.Time) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("%s (%s ago)", p.UTC().Format(time.RFC3339), age(now.Sub(*p)))
}

// sortedLines is one line per key of m, in key order.
func sortedLines[V any](m map[string]V, label func(string) string, value func(V) string) [][2]string {
	out := make([][2]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, [2]string{label(k), value(m[k])})
	}
	return out
}
