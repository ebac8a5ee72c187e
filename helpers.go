// Helpers that several commands share. A helper a second command needs moves
// here rather than being called in another command's file
// (TestCommandFilesStandAlone).
package main

import (
	"context"
	"errors"
	"os/user"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/launch/worktree"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// expand resolves a leading ~ against the home the command reads (--home or
// $HOME), as a shell would for a flag value it never saw.
func (e *cmdEnv) expand(p string) string {
	if p == "~" {
		return e.home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(e.home, p[2:])
	}
	return p
}

// listing is discoverAll for list, with the sessions left where the adapters put
// them (discover.List): a listing of tens of thousands is never copied into one
// array. It is fanOut (main.go) otherwise; keep the two in step.
func (e *cmdEnv) listing(ctx context.Context) (discover.Result, *discover.Listing) {
	env := e.readEnv(ctx)
	env.Large = discover.LargeListing(env)
	if env.Large && e.s.getenv("GOGC") == "" {
		// A large listing holds little but the work of the adapter in its
		// turn (the others' sessions are packed), so most of the heap is that
		// work's garbage: collected at half the usual growth, `list -a` at
		// 10,000 sessions per agent peaks at ~66 MiB instead of ~74 MiB, for
		// about 10% more CPU. A GOGC the user set is left alone.
		defer debug.SetGCPercent(debug.SetGCPercent(50))
	}
	res, ls := discover.List(ctx, env, e.adapters, e.timeout)
	if e.only != nil {
		ls.Keep(func(s *discover.Session) bool { return e.only[s.Adapter] })
	}
	for _, w := range res.Warnings {
		warn(e.s, w)
	}
	return res, ls
}

// parseStates reads a comma-separated flag value, each item one of allowed,
// into a set; flag names the flag in the error.
func parseStates(flag, v string, allowed []string) (map[string]bool, error) {
	set := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(allowed, f) {
			return nil, usageErrorf("%s %q: want one or more of %s, comma-separated", flag, f, strings.Join(allowed, ", "))
		}
		set[f] = true
	}
	return set, nil
}

// lastSeen is a session's last activity, else its start.
func lastSeen(s *discover.Session) time.Time {
	switch {
	case s.LastActivity != nil:
		return *s.LastActivity
	case s.StartedAt != nil:
		return *s.StartedAt
	}
	return time.Time{}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// eventTypes are the journal's event types (product.md §7) that --type accepts;
// a family name ("session", "lock", "fuse") selects all of its types.
var eventTypes = []string{
	meta.EventLaunched, meta.EventStarted, meta.EventIdle, meta.EventWaiting, meta.EventBlocked, meta.EventStopped, meta.EventFailed,
	meta.EventBudgetExceeded,
	meta.EventLockAcquired, meta.EventLockReleased,
	meta.EventFuseSet, meta.EventFuseExtended, meta.EventFuseCancelled, meta.EventFuseExpired, meta.EventFuseEvent,
}

// notifyStates are the values --on takes.
var notifyStates = []string{discover.StatusRunning, discover.StatusIdle, discover.StatusWaiting,
	discover.StatusStopped, discover.StatusFailed, discover.StatusUnknown, "blocked"}

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

func userName(s *host) string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if v := s.getenv("USER"); v != "" {
		return v
	}
	return "unknown"
}
