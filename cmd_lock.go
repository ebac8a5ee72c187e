package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/remote/fleet"
)

func lockCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "lock",
		Usage:     "lock a directory so that launches into it are refused",
		ArgsUsage: "DIR",
		Description: `A manual lock lives until "agentctl unlock DIR" or its --ttl. A launch into a
locked directory exits 5 unless it is given --force; a lock on a parent or
child directory is only a warning.

Examples:
  agentctl lock ~/code/api --reason "release freeze" --ttl 2h
  agentctl locks`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "by", Usage: "who holds the lock (default: your user name)"},
			&cli.StringFlag{Name: "reason", Usage: "why (shown to whoever is refused)"},
			&cli.StringFlag{Name: "ttl", Usage: "expire after `DUR` (e.g. 30m, 2h, 1d)"},
			&cli.BoolFlag{Name: "force", Usage: "replace an existing lock on DIR"},
		},
		Action: func(c *cli.Context) error {
			o, err := lockOptionsFrom(c)
			if err != nil {
				return err
			}
			return runLock(s, o)
		},
	}
}

func unlockCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "unlock",
		Usage:     "remove a manual directory lock",
		ArgsUsage: "DIR",
		Description: `Removes the manual lock on DIR. An auto-lock belongs to a running launch and goes
away when its agent exits; --force removes it anyway.

Examples:
  agentctl unlock ~/code/api
  agentctl unlock --force ~/code/api     # a launch's auto-lock too`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Usage: "also remove a running launch's auto-lock"},
		},
		Action: func(c *cli.Context) error {
			o, err := unlockOptionsFrom(c)
			if err != nil {
				return err
			}
			return runUnlock(s, o)
		},
	}
}

func locksCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:  "locks",
		Usage: "list active directory locks",
		Description: `Shows every live lock (DIRECTORY TYPE BY REASON SINCE). Locks whose owner died or
whose TTL passed are dropped on the way.

Examples:
  agentctl locks
  agentctl locks --json | jq -r '.[].directory'`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array"},
		},
		Action: func(c *cli.Context) error {
			o, err := locksOptionsFrom(c)
			if err != nil {
				return err
			}
			return runLocks(s, o)
		},
	}
}

// lockOptions are lock's flags and arguments.
type lockOptions struct {
	globalOptions
	Args            []string // the directory
	By, Reason, TTL string
	Force           bool
}

// lockOptionsFrom reads lock's command line and checks it, before any I/O.
func lockOptionsFrom(c *cli.Context) (lockOptions, error) {
	o := lockOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(),
		By: c.String("by"), Reason: c.String("reason"), TTL: c.String("ttl"), Force: c.Bool("force")}
	_, err := o.check()
	return o, err
}

// check checks the options and returns the --ttl (0: none). It reads nothing.
func (o lockOptions) check() (ttl time.Duration, err error) {
	if err := needArgs("lock", o.Args, 1, "one directory"); err != nil {
		return 0, err
	}
	if v := o.TTL; v != "" {
		d, err := meta.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, usageErrorf("--ttl %q: want a positive duration such as 30m, 2h or 1d", v)
		}
		ttl = d
	}
	return ttl, nil
}

// runLock takes the lock. It checks the options again, so that a caller that
// builds them in code gets the same usage errors before any I/O.
func runLock(s *host, o lockOptions) error {
	ttl, err := o.check()
	if err != nil {
		return err
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	dir, err := locks.Canonical(e.expand(o.Args[0]))
	if err != nil {
		return usageErrorf("lock %s: %v", o.Args[0], err)
	}
	now := s.now().UTC()
	l := locks.Lock{Directory: dir, Type: locks.Manual, LockedBy: o.By, Reason: o.Reason, LockedAt: now}
	if l.LockedBy == "" {
		l.LockedBy = userName(s)
	}
	if ttl > 0 {
		t := now.Add(ttl)
		l.ExpiresAt = &t
	}
	e.store.Now = s.now
	warns, err := locks.Acquire(e.store, l, o.Force)
	if err != nil {
		var ce *locks.ConflictError
		if errors.As(err, &ce) {
			return &exitError{exitLocked, err}
		}
		return &exitError{exitFailed, err}
	}
	for _, w := range warns {
		warn(s, w)
	}
	if l.ExpiresAt != nil {
		printHuman(s.Out, "locked %s until %s\n", dir, l.ExpiresAt.Format(time.RFC3339))
	} else {
		printHuman(s.Out, "locked %s\n", dir)
	}
	return nil
}

// unlockOptions are unlock's flags and arguments.
type unlockOptions struct {
	globalOptions
	Args  []string // the directory
	Force bool
}

// unlockOptionsFrom reads unlock's command line and checks it, before any I/O.
func unlockOptionsFrom(c *cli.Context) (unlockOptions, error) {
	o := unlockOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(), Force: c.Bool("force")}
	return o, o.check()
}

func (o unlockOptions) check() error { return needArgs("unlock", o.Args, 1, "one directory") }

// runUnlock removes the lock; it checks the options again, as runLock does.
func runUnlock(s *host, o unlockOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	arg := e.expand(o.Args[0])
	dir, err := locks.Canonical(arg)
	if err != nil {
		// A directory that is gone can still be unlocked by its path.
		if dir, err = filepath.Abs(arg); err != nil {
			return usageErrorf("unlock %s: %v", arg, err)
		}
	}
	if _, err := locks.Unlock(e.store, dir, o.Force); err != nil {
		var nl *locks.NotLockedError
		var al *locks.AutoLockError
		switch {
		case errors.As(err, &nl):
			return &exitError{exitFailed, err}
		case errors.As(err, &al):
			return &exitError{exitLocked, err}
		}
		return &exitError{exitFailed, err}
	}
	printHuman(s.Out, "unlocked %s\n", dir)
	return nil
}

// locksOptions are locks' flags.
type locksOptions struct {
	globalOptions
	Args []string // none are accepted
	JSON bool
}

// locksOptionsFrom reads locks' command line and checks it, before any I/O.
func locksOptionsFrom(c *cli.Context) (locksOptions, error) {
	o := locksOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(), JSON: c.Bool("json")}
	return o, o.check()
}

func (o locksOptions) check() error {
	if len(o.Args) > 0 {
		return usageErrorf("locks takes no arguments")
	}
	return nil
}

// runLocks lists the locks; it checks the options again, as runLock does.
func runLocks(s *host, o locksOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	ls, err := locks.List(e.store)
	if err != nil {
		return &exitError{exitFailed, err}
	}
	if o.JSON {
		if ls == nil {
			ls = []locks.Lock{}
		}
		return writeJSON(s.Out, ls)
	}
	if len(ls) == 0 {
		fmt.Fprintln(s.Out, "No active locks.")
		return nil
	}
	var t table
	t.add("DIRECTORY", "TYPE", "BY", "REASON", "SINCE", "EXPIRES")
	now := s.now()
	for _, l := range ls {
		t.add(shortHome(l.Directory, e.home), l.Type, dashIfEmpty(l.LockedBy), dashIfEmpty(l.Reason), age(now.Sub(l.LockedAt)), lockExpires(l, now))
	}
	t.write(s.Out, nil)
	return nil
}

// lockExpires is a lock's EXPIRES cell: "in 25m" for a lock with a TTL
// (lock --ttl), "-" for one held until unlocked or its owner ends.
func lockExpires(l locks.Lock, now time.Time) string {
	if l.ExpiresAt == nil {
		return "-"
	}
	return "in " + age(l.ExpiresAt.Sub(now))
}

// locksAcross is how locks runs across hosts: on every host named, the locks
// in one table with their host (or one JSON array).
func locksAcross(s *host) remoteSpec {
	return func(c *cli.Context) fleet.Spec {
		asJSON := c.Bool("json")
		return fleet.Spec{Mode: fleet.Merged, AskJSON: true,
			Print: func(st *fleet.Streams, outs []fleet.Answer) (bool, error) {
				if asJSON {
					return fleet.PrintArray(st, outs)
				}
				return false, printRemoteLocks(s, outs)
			}}
	}
}

func printRemoteLocks(s *host, outs []fleet.Answer) error {
	var t table
	t.add("HOST", "DIRECTORY", "TYPE", "BY", "REASON", "SINCE", "EXPIRES")
	now := s.now()
	for _, h := range outs {
		var ls []locks.Lock
		if err := json.Unmarshal(h.Out, &ls); err != nil {
			warn(s, fmt.Sprintf("%s: the answer of locks --json is not a JSON array: %v", h.Host.Name, err))
			continue
		}
		for _, l := range ls {
			t.add(h.Host.Name, l.Directory, l.Type, dashIfEmpty(l.LockedBy), dashIfEmpty(l.Reason), age(now.Sub(l.LockedAt)), lockExpires(l, now))
		}
	}
	if len(t.rows) == 1 {
		fmt.Fprintln(s.Out, "No active locks.")
		return nil
	}
	t.write(s.Out, nil)
	return nil
}
