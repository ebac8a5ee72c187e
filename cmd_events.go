package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/internal/clock"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/remote/fleet"
)

// eventsOptions are `events`' inputs.
type eventsOptions struct {
	Since    time.Duration // history only; 0 = all of it
	Until    time.Time     // history only: events after it are left out; zero = none
	Types    map[string]bool
	Follow   bool
	Interval time.Duration
	JSON     bool // NDJSON even on a terminal
}

func eventsCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:  "events",
		Usage: "print the lifecycle journal as NDJSON; --follow for live events",
		Description: `Prints events.ndjson, one JSON object per line, oldest first:
  {"type","adapter","session_id","timestamp","session":{…},"meta":{…}}
` + wrapText("Types: "+strings.Join(eventTypes, ", ")+".", 0, 80) + `

--follow keeps printing new journal lines, and polls every adapter (every 2 s,
--interval) to print session.started, session.idle, session.waiting,
session.blocked (blocked_reason quota, auth or api-error appeared) and
session.stopped for sessions agentctl did not launch. An adapter that fails a
poll is a warning, never a stopped session. On a terminal the lines are shown
in a short human form unless --json is given.

A launch stopped for its budget journals session.budget_exceeded (data: reason,
limit, used, tokens, cost_usd, elapsed_seconds, by) and then session.stopped,
whose session carries exit_reason (budget:duration, budget:cost, budget:tokens).

Examples:
  agentctl events --since 1h
  agentctl events --type session.stopped --type session.failed | jq .session_id
  agentctl events --follow --type session.waiting     # who needs me, as it happens
  agentctl events --follow --type fuse --interval 5s`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "since", Usage: "only events from `WHEN` on: a duration back from now (30m, 2h, 7d, 2w) or a date (2026-11-01)"},
			&cli.StringFlag{Name: "until", Usage: "only events up to `WHEN` (same forms as --since; a date alone includes that day); not with --follow"},
			&cli.StringSliceFlag{Name: "type", Usage: "only events of type `T` (repeatable; session, lock, fuse, group or worktree for a whole family)"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing events as they happen, until interrupted"},
			&cli.StringFlag{Name: "interval", Usage: "with --follow, poll the adapters every `DUR` (default: 2s)"},
			&cli.BoolFlag{Name: "json", Usage: "NDJSON even on a terminal (the default elsewhere)"},
		},
		Action: func(c *cli.Context) error {
			o, err := eventsOptionsFrom(c, s.now())
			if err != nil {
				return err
			}
			e, err := setup(s, globalsFrom(c))
			if err != nil {
				return err
			}
			return runEvents(c.Context, e, o)
		},
	}
}

func eventsOptionsFrom(c *cli.Context, now time.Time) (eventsOptions, error) {
	o := eventsOptions{Follow: c.Bool("follow"), JSON: c.Bool("json"), Interval: 2 * time.Second}
	if c.NArg() > 0 {
		return o, usageErrorf("events takes no arguments")
	}
	if v := c.String("since"); v != "" {
		d, err := sinceWindow(v, now)
		if err != nil {
			return o, err
		}
		o.Since = d
	}
	if v := c.String("until"); v != "" {
		var since time.Time
		if o.Since > 0 {
			since = now.Add(-o.Since)
		}
		t, err := untilFlag(v, since, now)
		if err != nil {
			return o, err
		}
		if o.Follow {
			return o, usageErrorf("--until ends the history and --follow never ends: pick one")
		}
		o.Until = t
	}
	if v := c.String("interval"); v != "" {
		d, err := meta.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			return o, usageErrorf("--interval %q: want a duration of at least 100ms, such as 2s", v)
		}
		o.Interval = d
	}
	for _, v := range c.StringSlice("type") {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			known := false
			for _, k := range eventTypes {
				if k == t || strings.HasPrefix(k, t+".") {
					if o.Types == nil {
						o.Types = map[string]bool{}
					}
					o.Types[k] = true
					known = true
				}
			}
			if !known {
				return o, usageErrorf("--type %q: want one of %s (or session, lock, fuse)", t, strings.Join(eventTypes, ", "))
			}
		}
	}
	return o, nil
}

func runEvents(ctx context.Context, e *cmdEnv, o eventsOptions) error {
	human := e.s.outTTY && !o.JSON
	emit := func(ev meta.Event, raw []byte) {
		if o.Types != nil && !o.Types[ev.Type] {
			return
		}
		if human {
			fmt.Fprintln(e.s.Out, humanEvent(ev, e.home, e.s.now()))
			return
		}
		if raw == nil {
			raw, _ = json.Marshal(ev)
		}
		e.s.Out.Write(append(raw, '\n'))
	}
	r := e.store.NewEventReader()
	var since time.Time
	if o.Since > 0 {
		since = e.s.now().Add(-o.Since)
	}
	err := r.Poll(func(ev meta.Event, raw []byte) {
		if ev.Timestamp.Before(since) || (!o.Until.IsZero() && ev.Timestamp.After(o.Until)) {
			return
		}
		emit(ev, raw)
	})
	if err != nil {
		return &exitError{exitFailed, err}
	}
	if !o.Follow {
		return nil
	}

	// Adapters are polled in their own goroutine: a slow fan-out (up to
	// --timeout) must not hold back the journal's lines.
	polled := make(chan []meta.Event)
	go (&sessionPoller{e: e, interval: o.Interval}).run(ctx, polled)
	tick := time.NewTicker(min(o.Interval, 500*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case evs := <-polled:
			for _, ev := range evs {
				emit(ev, nil)
			}
		case <-tick.C:
			if err := r.Poll(emit); err != nil {
				warn(e.s, fmt.Sprintf("events journal: %v", err))
			}
		}
	}
}

// sessionPoller is events --follow's watch on the adapters: the sessions
// agentctl did not launch have no journal lines of their own.
type sessionPoller struct {
	e        *cmdEnv
	interval time.Duration
}

// run runs the fan-out every interval and sends the lifecycle events between
// consecutive snapshots (diffSnapshots) until ctx ends.
func (p *sessionPoller) run(ctx context.Context, out chan<- []meta.Event) {
	e, interval := p.e, p.interval
	names := make([]string, 0, len(e.adapters))
	for _, a := range e.adapters {
		names = append(names, a.Name())
	}
	var snap snapshot
	for {
		res, _ := e.discoverAll(ctx)
		if ctx.Err() != nil {
			return
		}
		next, evs := diffSnapshots(snap, res, unsure(res, names), e.s.now())
		snap = next
		if e.only != nil {
			kept := evs[:0]
			for _, ev := range evs {
				if e.only[ev.Adapter] {
					kept = append(kept, ev)
				}
			}
			evs = kept
		}
		if len(evs) > 0 {
			select {
			case out <- evs:
			case <-ctx.Done():
				return
			}
		}
		if clock.Sleep(ctx, interval) != nil {
			return
		}
	}
}

// humanEvent is one event on one line, for a terminal. The lines stream, so
// the columns have fixed widths: the time (with the date when not today), the
// type, the adapter and the session id ("-" when the event has none), then
// what the event is about.
func humanEvent(ev meta.Event, home string, now time.Time) string {
	typeWidth, adapterWidth := 0, 0
	for _, t := range eventTypes {
		typeWidth = max(typeWidth, len(t))
	}
	for _, a := range agents.Names() {
		adapterWidth = max(adapterWidth, len(a))
	}
	pad := func(s string, n int) string {
		if s == "" {
			s = "-"
		}
		return s + strings.Repeat(" ", max(n-utf8.RuneCountInString(s), 0))
	}
	id := ev.SessionID
	if len(id) > 12 {
		id = id[:12]
	}
	cols := []string{clockAt(ev.Timestamp, now), pad(ev.Type, typeWidth), pad(ev.Adapter, adapterWidth), pad(id, 12)}
	if cwd, ok := ev.Session["cwd"].(string); ok && cwd != "" && ev.Directory == "" {
		cols = append(cols, shortHome(cwd, home))
	}
	if ev.Directory != "" {
		cols = append(cols, shortHome(ev.Directory, home))
	}
	if ev.Name != "" {
		cols = append(cols, ev.Name)
	}
	if l, ok := ev.Data["label"].(string); ok && l != "" {
		cols = append(cols, "("+l+")")
	}
	if r, ok := ev.Session["exit_reason"].(string); ok && r != "" {
		what := r
		if used, ok := ev.Data["used"].(string); ok {
			what += fmt.Sprintf(" (%s > %v)", used, ev.Data["limit"])
		}
		cols = append(cols, what)
	}
	return strings.TrimRight(strings.Join(cols, "  "), " ")
}

// eventsAcross is how events runs across hosts: every host's NDJSON lines,
// each with its host; with --follow, one stream per host.
func eventsAcross() remoteSpec {
	return same(fleet.Spec{Mode: fleet.Merged, Print: fleet.PrintNDJSON, Follow: true})
}
