package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/remote/fleet"
	"github.com/agentctl/agentctl/send"
)

func listCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:    "list",
		Aliases: []string{"ls"},
		Usage:   "list agent sessions (alive ones; -a adds ended ones)",
		Description: `Shows every agent session on this machine, whoever started it. Without -a only
sessions that are alive (running, idle, waiting) or unknown are shown; -a adds
stopped and failed ones from the last 7 days (--since to change the window,
--until to end it). An unknown session whose files have not changed inside the
window is listed like an ended one (with -a), still unknown: nothing proves it
alive.

STATUS is running, idle (alive, its turn over), waiting (alive, asking you: a
permission prompt), stopped, failed or unknown (the evidence conflicts or is
missing). A "?" after it marks weak evidence (a process matched by its cwd
only: --json says inferred); "!quota", "!auth" or "!api-error" after it is why
the latest turn failed (blocked_reason: you must act). LAST ACTIVE is the time
since the session's last recorded activity. On a terminal the table fits its
width (long prompts and paths shortened, then MODEL, GROUP, ADAPTER, COST
dropped); --wide prints every column in full, as a pipe gets it.

Examples:
  agentctl list
  agentctl list -a --since 30d --adapter codex
  agentctl list --status running --json | jq -r '.[].id'
  agentctl list --cwd ~/code/webapp
  agentctl list --status waiting,blocked -q     full ids of the sessions that need you
  agentctl list --status waiting,blocked --count`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "include stopped and failed sessions"},
			&cli.StringSliceFlag{Name: "status", Usage: "only sessions with this `STATUS[,…]` (repeatable): running, idle, waiting, stopped, failed, unknown, blocked"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print full session ids only, one per line"},
			&cli.BoolFlag{Name: "count", Usage: "print the number of sessions only (0 included)"},
			&cli.StringFlag{Name: "group", Usage: "only sessions of this launch group"},
			&cli.StringFlag{Name: "cwd", Usage: "only sessions started in `DIR` or below"},
			&cli.StringFlag{Name: "since", Usage: "window for ended sessions, from `WHEN`: a duration back from now (2h, 30d, 2w) or a date (2026-11-01) (default: 7d)"},
			&cli.StringFlag{Name: "until", Usage: "end the window at `WHEN` (same forms as --since; a date alone includes that day): sessions last active later are left out, as in usage (default: now)"},
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array of session objects"},
			&cli.BoolFlag{Name: "watch", Usage: "redraw every 2 s until Ctrl-C"},
			&cli.BoolFlag{Name: "strict", Usage: "exit 1 when an adapter failed"},
			&cli.BoolFlag{Name: "wide", Aliases: []string{"no-trunc"}, Usage: "on a terminal too, every column in full (no fitting to its width)"},
		},
		Action: func(c *cli.Context) error {
			o, err := listOptionsFrom(c, s.now())
			if err != nil {
				return err
			}
			return runList(c.Context, s, o)
		},
	}
}

// listOptions are list's flags and arguments.
type listOptions struct {
	globalOptions
	Args              []string // none are accepted
	All, JSON, Watch  bool
	Wide              bool // --wide: no fitting to the terminal's width
	Strict            bool
	Quiet, Count      bool // -q: ids only; --count: the number only
	Statuses          []string
	Group, Cwd, Since string
	Until             string
}

// listOptionsFrom reads list's command line and checks it, before any I/O.
func listOptionsFrom(c *cli.Context, now time.Time) (listOptions, error) {
	o := listOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(), All: c.Bool("all"), JSON: c.Bool("json"),
		Watch: c.Bool("watch"), Wide: c.Bool("wide"), Strict: c.Bool("strict"), Quiet: c.Bool("quiet"), Count: c.Bool("count"), Statuses: c.StringSlice("status"),
		Group: c.String("group"), Cwd: c.String("cwd"), Since: c.String("since"), Until: c.String("until")}
	_, err := o.filter(now)
	return o, err
}

// filter checks the options and builds the listing's filter (all but --cwd,
// which is resolved under the home once it is known). It reads nothing.
func (o listOptions) filter(now time.Time) (discover.Filter, error) {
	if len(o.Args) > 0 {
		return discover.Filter{}, usageErrorf("list takes no arguments (got %q); filter with --cwd, --status or --adapter", o.Args[0])
	}
	if n := countTrue(o.Quiet, o.Count, o.JSON); n > 1 {
		return discover.Filter{}, usageErrorf("-q, --count and --json exclude each other: pick one output")
	}
	f := discover.Filter{All: o.All, Group: o.Group, Since: 7 * 24 * time.Hour}
	for _, st := range o.Statuses {
		for _, st := range strings.Split(st, ",") {
			st = strings.TrimSpace(st)
			switch st {
			case discover.StatusRunning, discover.StatusIdle, discover.StatusWaiting, discover.StatusStopped, discover.StatusFailed, discover.StatusUnknown, "blocked":
				f.Statuses = append(f.Statuses, st)
			default:
				return f, usageErrorf("--status %q: want one of running, idle, waiting, stopped, failed, unknown, blocked", st)
			}
		}
	}
	if v := o.Since; v != "" {
		d, err := sinceWindow(v, now)
		if err != nil {
			return f, err
		}
		f.Since = d
		f.All = true
	}
	if v := o.Until; v != "" {
		t, err := untilFlag(v, now.Add(-f.Since), now)
		if err != nil {
			return f, err
		}
		f.Until = t
		f.All = true
	}
	return f, nil
}

// runList prints the listing. It checks the options again (filter), so that a
// caller that builds them in code gets the same usage errors before any I/O.
func runList(ctx context.Context, s *host, o listOptions) error {
	f, err := o.filter(s.now())
	if err != nil {
		return err
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	l := &lister{e: e, wide: o.Wide}
	if v := o.Cwd; v != "" {
		abs, err := filepath.Abs(e.expand(v))
		if err != nil {
			return usageErrorf("--cwd %s: %v", v, err)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		f.Cwd = abs
	}
	if o.Watch {
		return l.watch(ctx, f, o.JSON)
	}
	var failed bool
	if o.Quiet || o.Count {
		failed, err = l.ids(ctx, f, o.Count)
	} else {
		failed, err = l.once(ctx, f, o.JSON)
	}
	if err != nil {
		return err
	}
	if failed && o.Strict {
		return &exitError{exitFailed, fmt.Errorf("some adapters failed (--strict)")}
	}
	return nil
}

// lister prints listings: list's own methods over the command's environment.
type lister struct {
	e        *cmdEnv
	watching bool // --watch: no hints under the listing (cmd_list_hint.go)
	wide     bool // --wide: every column in full on a terminal too
}

// once prints one listing; failed reports whether any adapter failed.
func (l *lister) once(ctx context.Context, f discover.Filter, asJSON bool) (failed bool, err error) {
	e := l.e
	e.onlyAlive = !f.All && len(f.Statuses) == 0 // adapters may skip the dead; Keep drops them anyway
	res, ls := e.listing(ctx)
	f.Now = e.s.now()
	var left discover.Left
	counted := false
	if !asJSON && !l.watching {
		left, counted = l.hintsBefore(ls, f)
	}
	ls.Filter(f)
	if asJSON {
		// A value left out (out of range) fails --strict like a failed adapter.
		dropped := false
		mark := send.NewMarker(proc.Snapshot) // can_send: how agentctl send would reach each live session
		err := writeSessionsJSON(e.s.Out, ls.Len(), func(i int) *discover.Session { return mark.Mark(ls.View(i)) },
			func(m string) { warn(e.s, m); dropped = true })
		return len(res.Warnings) > 0 || dropped, err
	}
	l.sessions(ls.Len(), ls.View, f.Now)
	if !l.watching {
		l.hintsAfter(ctx, f, ls.Len(), left, counted)
	}
	return len(res.Warnings) > 0, nil
}

// sessions prints n sessions, the i-th at(i) (used only until the next call,
// as Listing.View's); a HOST column when they come from several machines
// (listAcross).
func (l *lister) sessions(n int, at func(int) *discover.Session, now time.Time) {
	e := l.e
	if n == 0 {
		fmt.Fprintln(e.s.Out, "No sessions found.")
		return
	}
	groups, hosts := false, false
	for i := 0; i < n; i++ {
		if at(i).Group != "" {
			groups = true
		}
		if at(i).Host != "" {
			hosts = true
		}
	}
	var t table
	head := []string{"ID", "ADAPTER", "STATUS", "MODEL"}
	statusCol := 2
	if hosts {
		head = append([]string{"HOST"}, head...)
		statusCol = 3
	}
	if groups {
		head = append(head, "GROUP")
	}
	head = append(head, "CWD", "LAST ACTIVE", "COST", "PROMPT")
	t.add(head...)
	// On a terminal the table fits its width: the prompt, then the cwd and
	// the model shorten (to 20, 14, 14 runes); then MODEL, GROUP, ADAPTER,
	// COST go, in that order; then the three shorten further.
	var fit []colFit
	if hosts {
		fit = append(fit, colFit{min: 8})
	}
	fit = append(fit, colFit{}, colFit{drop: 3}, colFit{}, colFit{min: 10, soft: 14, drop: 1})
	if groups {
		fit = append(fit, colFit{drop: 2})
	}
	fit = append(fit, colFit{min: 12, soft: 14, keepEnd: true}, colFit{}, colFit{drop: 4}, colFit{min: 10, soft: 20})
	if !l.wide {
		t.fitTo(e.s.outWidth, fit...)
	}
	for i := 0; i < n; i++ {
		s := at(i)
		status := s.Status
		if s.Inferred {
			status += "?"
		}
		if s.BlockedReason != "" {
			status += "!" + s.BlockedReason // e.g. failed!quota: the user must act
		}
		model := s.Model
		if model == "" {
			model = "-"
		}
		row := []string{discover.Truncate(s.ID, 12), s.Adapter, status, model}
		if hosts {
			row = append([]string{s.Host}, row...)
		}
		if groups {
			row = append(row, orDash(s.Group))
		}
		ago := "-"
		if t := s.LastSeen(); !t.IsZero() {
			ago = age(now.Sub(t)) + " ago"
		}
		prompt := discover.OneLine(s.Prompt, 60)
		row = append(row, orDash(shortHome(s.Cwd, e.home)), ago, costString(*s), prompt)
		t.add(row...)
	}
	var colorize func(int, int, string) string
	if e.color {
		colorize = func(row, col int, cell string) string {
			if row == 0 {
				return "\x1b[1m" + cell + ansiReset
			}
			if col == statusCol {
				return statusColor(at(row-1).Status) + cell + ansiReset
			}
			return cell
		}
	}
	t.write(e.s.Out, colorize)
}

// watch redraws the listing every 2 s until the context ends (Ctrl-C).
func (l *lister) watch(ctx context.Context, f discover.Filter, asJSON bool) error {
	e := l.e
	l.watching = true
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		if e.s.IsTTY() && !asJSON {
			fmt.Fprint(e.s.Out, "\x1b[H\x1b[2J")
			fmt.Fprintf(e.s.Out, "agentctl list — %s (Ctrl-C to stop)\n\n", e.s.now().Format("15:04:05"))
		}
		if _, err := l.once(ctx, f, asJSON); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// listAcross is how list runs across hosts: on every host named, the
// sessions merged with their host; -q and --count apply here, to the merged
// sessions (each host answers --json); --watch redraws them every 2 s.
func listAcross(s *host) remoteSpec {
	return func(c *cli.Context) fleet.Spec {
		o := listAcrossOptions{json: c.Bool("json"), quiet: c.Bool("quiet"), count: c.Bool("count"), wide: c.Bool("wide")}
		sp := fleet.Spec{Mode: fleet.Merged, AskJSON: true,
			Drop: []string{"-q", "--quiet", "-quiet", "--count", "-count"},
			Print: func(_ *fleet.Streams, outs []fleet.Answer) (bool, error) {
				failed := false
				err := printRemoteList(s, o, outs, &failed)
				return failed, err
			}}
		sp.Watch, sp.Clear = c.Bool("watch"), watchClear(s, "list", o.json)
		return sp
	}
}

// listAcrossOptions are the flags list across hosts applies here.
type listAcrossOptions struct{ json, quiet, count, wide bool }

// mergeSessions decodes each host's `list --json` and marks every session
// with its host, keeping each host's order, hosts in the order named.
func mergeSessions(outs []fleet.Answer) ([]discover.Session, error) {
	var all []discover.Session
	for _, h := range outs {
		var ss []discover.Session
		if err := json.Unmarshal(h.Out, &ss); err != nil {
			return nil, fmt.Errorf("%s: the answer of list --json is not a JSON array of sessions: %v; is agentctl there the same version?", h.Host.Name, err)
		}
		for i := range ss {
			ss[i].Host = h.Host.Name
		}
		all = append(all, ss...)
	}
	return all, nil
}

func printRemoteList(s *host, o listAcrossOptions, outs []fleet.Answer, failed *bool) error {
	ss, err := mergeSessions(outs)
	if err != nil {
		warn(s, err.Error())
		*failed = true
	}
	at := func(i int) *discover.Session { return &ss[i] }
	switch {
	case o.count:
		fmt.Fprintln(s.Out, len(ss))
		return nil
	case o.quiet:
		for _, x := range ss {
			if !idLineSafe(x.ID) {
				warnUnsafeID(s, x.Host+": "+x.Adapter, x.ID)
				*failed = true
				continue
			}
			fmt.Fprintln(s.Out, x.Host+":"+x.ID)
		}
		return nil
	}
	if o.json {
		return writeSessionsJSON(s.Out, len(ss), at, func(m string) { warn(s, m); *failed = true })
	}
	// No ~ shortening: each cwd is under its own host's home, not this one's.
	l := &lister{e: &cmdEnv{s: s, color: s.IsTTY() && s.getenv("NO_COLOR") == ""}, wide: o.wide}
	l.sessions(len(ss), at, s.now())
	return nil
}
