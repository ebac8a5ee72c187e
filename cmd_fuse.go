package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// defaultFuseTTL is `fuse set`'s TTL without --ttl (product.md §6).
const defaultFuseTTL = 10 * time.Minute

func fuseCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "fuse",
		Usage:     "set, extend or cancel a directory's TTL timer (see agentctl fuses)",
		ArgsUsage: "set|extend|cancel DIR",
		Description: `A fuse is a timer on a directory with actions to run when it expires: a script,
a webhook, a journal event. There is no daemon: an expired fuse fires from the
next agentctl command that notices it, or from "agentctl sweep" run by cron —
exactly once, however many of them run at the same time.

Examples:
  agentctl fuse set ~/code/api --ttl 30m --script 'git stash' --label standup
  agentctl fuse extend ~/code/api --ttl 1h
  agentctl fuse cancel ~/code/api
  agentctl fuses`,
		Subcommands: []*cli.Command{fuseSetCommand(s), fuseExtendCommand(s), fuseCancelCommand(s)},
		Action:      groupAction("agentctl fuse"),
	}
}

// fuseSetOptions are `fuse set`'s inputs.
type fuseSetOptions struct {
	Dir     string
	TTL     time.Duration
	Script  string
	Webhook string
	Event   string
	Label   string
}

func fuseSetCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "set",
		Usage:     "arm a fuse on a directory (replacing the one it has)",
		ArgsUsage: "DIR",
		Description: `When the TTL passes, the fuse fires its actions once: --script runs with sh -c in
DIR (env AGENTCTL_FUSE_DIR, AGENTCTL_FUSE_LABEL; 300 s timeout; output appended
to logs/fuses.log in the state dir), --webhook receives
{"type":"fuse.expired","directory","label","expired_at"} signed with the
configured webhook secret, --event appends {"type":"fuse.event","name":NAME} to
the events journal. One fuse per directory: setting it again replaces it.

Examples:
  agentctl fuse set . --ttl 45m --event review-due
  agentctl fuse set ~/code/api --ttl 2h --script 'agentctl stop $(cat .agent-id)'
  agentctl fuse set /srv/build --ttl 1d --webhook https://ci.example/hooks/fuse --label nightly`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "ttl", Usage: "fire after `DUR`: Go durations plus d (90s, 10m, 2h, 1d) (default: 10m)"},
			&cli.StringFlag{Name: "script", Usage: "run `CMD` with sh -c in DIR when the fuse fires"},
			&cli.StringFlag{Name: "webhook", Usage: "POST the expiry to `URL` (signed like session webhooks)"},
			&cli.StringFlag{Name: "event", Usage: "append a fuse.event named `NAME` to the events journal"},
			&cli.StringFlag{Name: "label", Usage: "a name `L` for the fuse, shown by fuses and passed to the script"},
		},
		Action: func(c *cli.Context) error {
			o, err := fuseSetOptionsFrom(c)
			if err != nil {
				return err
			}
			e, err := setup(s, globalsFrom(c))
			if err != nil {
				return err
			}
			return runFuseSet(c.Context, e, o)
		},
	}
}

func fuseSetOptionsFrom(c *cli.Context) (fuseSetOptions, error) {
	if err := needArgs(c.Command.Name, c.Args().Slice(), 1, "one directory"); err != nil {
		return fuseSetOptions{}, err
	}
	o := fuseSetOptions{Dir: c.Args().First(), TTL: defaultFuseTTL, Script: c.String("script"), Webhook: c.String("webhook"),
		Event: c.String("event"), Label: c.String("label")}
	if v := c.String("ttl"); v != "" {
		d, err := meta.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, usageErrorf("--ttl %q: want a positive duration such as 10m, 2h or 1d", v)
		}
		o.TTL = d
	}
	if o.Webhook != "" {
		if u, err := url.Parse(o.Webhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return o, usageErrorf("--webhook %q: want an http(s) URL", o.Webhook)
		}
	}
	if c.IsSet("event") && strings.TrimSpace(o.Event) == "" {
		return o, usageErrorf("--event: want a non-empty name")
	}
	return o, nil
}

func runFuseSet(ctx context.Context, e *cmdEnv, o fuseSetOptions) error {
	dir, err := locks.Canonical(e.expand(o.Dir))
	if err != nil {
		return usageErrorf("fuse set %s: %v", o.Dir, err)
	}
	e.fuseUpkeep(ctx)
	f := locks.Fuse{Directory: dir, Label: o.Label, Script: o.Script, Webhook: o.Webhook, Event: o.Event}
	if f.Webhook != "" {
		f.WebhookSecret = e.config.WebhookSecret
		if v := e.s.getenv("AGENTCTL_WEBHOOK_SECRET"); v != "" {
			f.WebhookSecret = v
		}
	}
	set, replaced, err := locks.SetFuse(e.store, f, o.TTL)
	if err != nil {
		return &exitError{exitFailed, err}
	}
	if replaced != nil {
		warn(e.s, fmt.Sprintf("replaced the fuse on %s that was to expire at %s", dir, replaced.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	printHuman(e.s.Out, "fuse set on %s: fires at %s (in %s)\n", dir, set.ExpiresAt.Format(time.RFC3339), o.TTL)
	if len(set.Actions()) == 0 {
		warn(e.s, fmt.Sprintf("the fuse on %s has no action: when it fires it is only journaled (fuse.expired); add --script CMD, --webhook URL or --event NAME", dir))
	}
	return nil
}

// fuseDirOptions are the inputs of `fuse extend` and `fuse cancel`.
type fuseDirOptions struct {
	Dir string
	TTL time.Duration // extend: 0 means the fuse's own TTL
}

func fuseExtendCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "extend",
		Usage:     "push a fuse's expiry back",
		ArgsUsage: "DIR",
		Description: `Sets the fuse's expiry to now plus --ttl (default: the TTL it was set with). A
fuse that already fires cannot be extended.

Examples:
  agentctl fuse extend .              # another full TTL from now
  agentctl fuse extend ~/code/api --ttl 15m`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "ttl", Usage: "expire `DUR` from now (default: the fuse's own TTL)"},
		},
		Action: func(c *cli.Context) error {
			o, err := fuseDirOptionsFrom(c, true)
			if err != nil {
				return err
			}
			e, err := setup(s, globalsFrom(c))
			if err != nil {
				return err
			}
			return runFuseExtend(c.Context, e, o)
		},
	}
}

// fuseDirOptionsFrom reads the command line of `fuse extend` (withTTL) or
// `fuse cancel` and checks it, before any I/O.
func fuseDirOptionsFrom(c *cli.Context, withTTL bool) (fuseDirOptions, error) {
	if err := needArgs(c.Command.Name, c.Args().Slice(), 1, "one directory"); err != nil {
		return fuseDirOptions{}, err
	}
	o := fuseDirOptions{Dir: c.Args().First()}
	if v := c.String("ttl"); withTTL && v != "" {
		d, err := meta.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, usageErrorf("--ttl %q: want a positive duration such as 10m, 2h or 1d", v)
		}
		o.TTL = d
	}
	return o, nil
}

func runFuseExtend(ctx context.Context, e *cmdEnv, o fuseDirOptions) error {
	dir, err := fuseDir(e, o.Dir)
	if err != nil {
		return err
	}
	e.fuseUpkeep(ctx)
	f, err := locks.ExtendFuse(e.store, dir, o.TTL)
	if err != nil {
		return fuseErr(err)
	}
	printHuman(e.s.Out, "fuse on %s now fires at %s (in %s)\n", dir, f.ExpiresAt.Format(time.RFC3339), f.TTL)
	return nil
}

func fuseCancelCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "cancel",
		Usage:     "remove a fuse before it fires",
		ArgsUsage: "DIR",
		Description: `Removes the fuse on DIR; none of its actions run. A fuse that already fires
cannot be cancelled.

Examples:
  agentctl fuse cancel ~/code/api`,
		Action: func(c *cli.Context) error {
			o, err := fuseDirOptionsFrom(c, false)
			if err != nil {
				return err
			}
			e, err := setup(s, globalsFrom(c))
			if err != nil {
				return err
			}
			return runFuseCancel(c.Context, e, o)
		},
	}
}

func runFuseCancel(ctx context.Context, e *cmdEnv, o fuseDirOptions) error {
	dir, err := fuseDir(e, o.Dir)
	if err != nil {
		return err
	}
	e.fuseUpkeep(ctx)
	if _, err := locks.CancelFuse(e.store, dir); err != nil {
		return fuseErr(err)
	}
	printHuman(e.s.Out, "fuse on %s cancelled\n", dir)
	return nil
}

// fuseDir is the canonical directory of an extend or cancel argument; a
// directory that is gone can still be named by its path.
func fuseDir(e *cmdEnv, arg string) (string, error) {
	arg = e.expand(arg)
	if dir, err := locks.Canonical(arg); err == nil {
		return dir, nil
	}
	dir, err := filepath.Abs(arg)
	if err != nil {
		return "", usageErrorf("%s: %v", arg, err)
	}
	return dir, nil
}

func fuseErr(err error) error {
	var nf *locks.NoFuseError
	var fe *locks.FiringError
	switch {
	case errors.As(err, &nf):
		return &exitError{exitFailed, err}
	case errors.As(err, &fe):
		return &exitError{exitLocked, err}
	}
	return &exitError{exitFailed, err}
}

// fusesOptions are `fuses`' inputs.
type fusesOptions struct {
	JSON bool
}

func fusesCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:  "fuses",
		Usage: "list directory fuses (TTL timers)",
		Description: `Shows every fuse (DIRECTORY LABEL EXPIRES-IN ACTIONS). Fuses that expired are
fired on the way, so what is listed is still to come (or firing right now).

Examples:
  agentctl fuses
  agentctl fuses --json | jq -r '.[] | "\(.directory) \(.expires_at)"'`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array"},
		},
		Action: func(c *cli.Context) error {
			o, err := fusesOptionsFrom(c)
			if err != nil {
				return err
			}
			e, err := setup(s, globalsFrom(c))
			if err != nil {
				return err
			}
			return runFuses(c.Context, e, o)
		},
	}
}

// fusesOptionsFrom reads the command line of fuses and checks it, before any I/O.
func fusesOptionsFrom(c *cli.Context) (fusesOptions, error) {
	if c.NArg() > 0 {
		return fusesOptions{}, usageErrorf("fuses takes no arguments")
	}
	return fusesOptions{JSON: c.Bool("json")}, nil
}

// fuseJSON is one element of `fuses --json`: the fuse without its webhook
// secret.
type fuseJSON struct {
	Directory   string     `json:"directory"`
	Label       string     `json:"label,omitempty"`
	State       string     `json:"state"`
	TTL         string     `json:"ttl"`
	SetAt       time.Time  `json:"set_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	Actions     []string   `json:"actions"`
	Script      string     `json:"script,omitempty"`
	Webhook     string     `json:"webhook,omitempty"`
	Event       string     `json:"event,omitempty"`
	FiringPID   int        `json:"firing_pid,omitempty"`
	FiringSince *time.Time `json:"firing_since,omitempty"`
}

func runFuses(ctx context.Context, e *cmdEnv, o fusesOptions) error {
	e.fuseUpkeep(ctx)
	fs, err := locks.ReadFuses(e.store)
	if err != nil {
		return &exitError{exitFailed, err}
	}
	if o.JSON {
		out := make([]fuseJSON, 0, len(fs))
		for _, f := range fs {
			a := f.Actions()
			if a == nil {
				a = []string{}
			}
			out = append(out, fuseJSON{Directory: f.Directory, Label: f.Label, State: f.State, TTL: f.TTL, SetAt: f.SetAt.UTC(),
				ExpiresAt: f.ExpiresAt.UTC(), Actions: a, Script: f.Script, Webhook: f.Webhook, Event: f.Event,
				FiringPID: f.FiringPID, FiringSince: f.FiringAt})
		}
		return writeJSON(e.s.Out, out)
	}
	if len(fs) == 0 {
		fmt.Fprintln(e.s.Out, "No active fuses.")
		return nil
	}
	var t table
	t.add("DIRECTORY", "LABEL", "STATE", "EXPIRES", "ACTIONS")
	now := e.s.now()
	for _, f := range fs {
		// armed: waiting for its time; firing: a process runs its actions;
		// due: its time has passed and the next command fires it.
		state, in := f.State, "in "+age(f.ExpiresAt.Sub(now))
		switch {
		case f.State == locks.FuseFiring:
			in = "-"
		case !now.Before(f.ExpiresAt):
			state, in = "due", age(now.Sub(f.ExpiresAt))+" ago"
		}
		t.add(shortHome(f.Directory, e.home), dashIfEmpty(f.Label), dashIfEmpty(state), in, dashIfEmpty(strings.Join(f.Actions(), ",")))
	}
	t.write(e.s.Out, nil)
	return nil
}

// fireFusesCommand is the hidden `agentctl __fire-fuses` that fuseUpkeep
// starts detached.
func fireFusesCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:   "__fire-fuses",
		Hidden: true,
		Usage:  "internal: fire expired fuses (started by the commands that read)",
		Flags:  []cli.Flag{&cli.StringFlag{Name: "state", Usage: "agentctl's state dir"}},
		Action: func(c *cli.Context) error {
			state := c.String("state")
			if state == "" || c.NArg() > 0 {
				return usageErrorf("__fire-fuses is internal: the commands that read sessions start it")
			}
			deps, logw := internalDeps(state, s, "fuses")
			fireDueFuses(c.Context, deps.Store, deps, false, func(m string) { logw("%s", m) })
			return nil
		},
	}
}
