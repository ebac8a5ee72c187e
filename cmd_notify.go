package main

import (
	"context"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/meta"
)

func notifyCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:  "notify",
		Usage: "fire a command, a desktop notification or a webhook once per transition into a status",
		Description: `Tells you when a session needs you. Each run compares every session's status with
what this watcher saw before and fires once for each transition into an --on
status; the first run fires for the sessions already in one, unless
--skip-existing (the first run only records what it sees: only later
transitions fire) or --since (sessions not active since then are recorded, not
fired: "--on stopped --since 1h" leaves the week's older runs alone). Without
--follow it runs once (made for cron); --follow keeps polling every --interval.

A transition no target delivered (--desktop with neither notify-send nor
osascript, or notify-send failing, as the only target) is not marked fired: the
next run tries it again.

Exactly once per transition per watcher, however runs overlap: the marks live in
notify.json in the state dir. A watcher is --name, by default a hash of its --on
set and targets, so two cron lines with different commands each fire. A failed
adapter is a warning, never a transition.

--on takes running, idle, waiting, stopped, failed, unknown and blocked (a
blocked_reason appears: quota, auth, api-error).
Targets (at least one):
  --exec CMD     sh -c CMD with AGENTCTL_SESSION_ID, AGENTCTL_STATUS,
                 AGENTCTL_PREV_STATUS, AGENTCTL_ADAPTER, AGENTCTL_CWD,
                 AGENTCTL_DETAIL (what it waits for, why it is blocked),
                 AGENTCTL_HOST; 300 s timeout; output in logs/notify.log in the state dir
  --desktop      notify-send (Linux) or osascript (macOS)
  --webhook URL  POST the event JSON, signed like session webhooks
                 (webhook_secret / AGENTCTL_WEBHOOK_SECRET); a failed delivery
                 waits in the outbox for agentctl sweep

Examples:
  # crontab: a desktop notification when any session asks or is blocked
  * * * * * agentctl notify --on waiting,blocked --desktop --skip-existing
  # in a terminal, until Ctrl-C
  agentctl notify --follow --on waiting --exec 'printf "\a%s waits: %s\n" "$AGENTCTL_SESSION_ID" "$AGENTCTL_DETAIL"'
  agentctl notify --on failed,blocked --webhook https://hooks.example.com/agents

Exit codes: 0 ok; 1 a target failed (a transition another target delivered, or
whose --exec ran, still counts as fired), a transition no target delivered, or
the state dir is not writable; 2 usage.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "on", Usage: "fire on transitions into `STATUS[,…]`: running, idle, waiting, stopped, failed, unknown, blocked"},
			&cli.StringFlag{Name: "exec", Usage: "run `CMD` with sh -c for each transition"},
			&cli.BoolFlag{Name: "desktop", Usage: "show a desktop notification (notify-send or osascript)"},
			&cli.StringFlag{Name: "webhook", Usage: "POST the event JSON to `URL`"},
			&cli.StringFlag{Name: "name", Usage: "watcher `NAME` (default: a hash of --on and the targets)"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep polling until Ctrl-C"},
			&cli.StringFlag{Name: "interval", Value: "2s", Usage: "with --follow: poll every `DUR`"},
			&cli.BoolFlag{Name: "skip-existing", Usage: "the watcher's first run records the sessions' statuses without firing: only transitions after it fire"},
			&cli.StringFlag{Name: "since", Usage: "fire only for sessions active since `WHEN` (30m, 2h, 7d, 2w or a date); older ones are recorded, not fired"},
		},
		Action: func(c *cli.Context) error {
			o, err := notifyOptionsFrom(c)
			if err != nil {
				return err
			}
			return runNotify(c.Context, s, o)
		},
	}
}

// notifyOptions are notify's flags and arguments.
type notifyOptions struct {
	globalOptions
	notifyRule
	Args     []string // none are accepted
	Follow   bool
	Interval string
	// SkipExisting: the first run only records (--skip-existing); Since: fire
	// only for sessions active since then (--since).
	SkipExisting bool
	Since        string
}

// notifyOptionsFrom reads notify's command line and checks it, before any I/O.
func notifyOptionsFrom(c *cli.Context) (notifyOptions, error) {
	o := notifyOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(),
		notifyRule: notifyRule{Name: c.String("name"), On: c.String("on"), Exec: c.String("exec"),
			Desktop: c.Bool("desktop"), Webhook: c.String("webhook")},
		Follow: c.Bool("follow"), Interval: c.String("interval"), SkipExisting: c.Bool("skip-existing"), Since: c.String("since")}
	_, _, err := o.check()
	return o, err
}

// check checks the options and returns the watcher and the --follow
// interval. It reads nothing.
func (o notifyOptions) check() (*watcher, time.Duration, error) {
	if len(o.Args) > 0 {
		return nil, 0, usageErrorf("notify takes no arguments (got %q); see agentctl notify --help", o.Args[0])
	}
	w, err := parseRule(o.notifyRule)
	if err != nil {
		return nil, 0, err
	}
	interval := 2 * time.Second
	if v := o.Interval; v != "" {
		d, err := meta.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, 0, usageErrorf("--interval %q: want a duration such as 2s or 500ms", v)
		}
		interval = d
	}
	if v := o.Since; v != "" {
		// The syntax only: the window's start is taken when the run begins.
		if _, err := whenFlag("since", v, time.Time{}, false); err != nil {
			return nil, 0, err
		}
	}
	return w, interval, nil
}

// runNotify polls once, or until ctx ends with --follow. It checks the
// options again, so that a caller that builds them in code gets the same
// usage errors before any I/O.
func runNotify(ctx context.Context, s *host, o notifyOptions) error {
	w, interval, err := o.check()
	if err != nil {
		return err
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	if err := e.mustTrust("notify"); err != nil {
		return err
	}
	n := newNotifier(e)
	n.skipExisting = o.SkipExisting
	if v := o.Since; v != "" {
		now := s.now()
		d, err := sinceWindow(v, now)
		if err != nil {
			return err
		}
		n.since = now.Add(-d)
	}
	if !o.Follow {
		failed, err := n.poll(ctx, []*watcher{w}, "")
		if err != nil {
			return err
		}
		if failed {
			return &exitError{exitFailed, nil}
		}
		return nil
	}
	for {
		if _, err := n.poll(ctx, []*watcher{w}, ""); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// notifyPollLock serialises notify polls (store.Lock adds ".lock").
const notifyPollLock = "notify.poll"
