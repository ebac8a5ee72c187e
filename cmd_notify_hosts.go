package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/remote/fleet"
)

// notify across hosts (README "Several machines"): one watcher here, the
// sessions of every host named. Each poll asks every host for its sessions
// (`list --json`, with -a when a watcher needs ended ones) and claims the
// transitions here, in this machine's notify.json: the marks of host H live
// under the watcher "NAME@H", so each transition of each remote session fires
// once per watcher, also across overlapping one-shot runs (the poll lock, as
// locally). A host that does not answer keeps its marks as they were: the
// transition it went through meanwhile fires once when it answers again.
// --follow polls over the hosts' shared ssh connections (remote/control.go):
// one connection per host for the whole watch, not one per poll.

// notifyHostsCommand is notify, able to run across hosts.
func notifyHostsCommand(s *host, a *acrossHosts) *cli.Command {
	return a.custom(notifyCommand(s), fleet.Spec{Mode: fleet.Merged}, func(c *cli.Context, fo fleet.Options) error {
		o, err := notifyOptionsFrom(c)
		if err != nil {
			return err
		}
		return runNotifyHosts(c.Context, s, o, fo)
	})
}

// runNotifyHosts polls the hosts of fo once, or until ctx ends with --follow.
func runNotifyHosts(ctx context.Context, s *host, o notifyOptions, fo fleet.Options) error {
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
	ws := []*watcher{w}
	for {
		failed, err := pollHosts(ctx, n, fo, ws, notifyListArgs(ws, o.globalOptions))
		if err != nil {
			return err
		}
		if !o.Follow {
			if failed {
				return &exitError{exitFailed, nil}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// hostSeen is one host's sessions as one poll saw them.
type hostSeen struct {
	host  string
	seen  []meta.NotifyObservation
	sure  map[string]bool
	byKey map[string]discover.Session
}

// notifyListArgs is what each host is asked: its sessions (of --adapter's
// adapters, with its --timeout), the ended ones too when a watcher needs them
// (as locally, within the marks' lifetime).
func notifyListArgs(ws []*watcher, g globalOptions) []string {
	args := []string{"list", "--json"}
	if watchesEnded(ws) {
		args = append(args, "-a", "--since", fmt.Sprintf("%dh", int(meta.NotifyTTL.Hours())))
	}
	for _, a := range g.Adapters {
		args = append(args, "--adapter", a)
	}
	if g.Timeout != "" {
		args = append(args, "--timeout", g.Timeout)
	}
	return args
}

// readHostSessions decodes a host's list --json into observations. sure: every
// reader, unless the host's agentctl warned (a failed adapter there: its
// sessions missing from the list are not gone).
func readHostSessions(a fleet.Answer, ws []*watcher, at time.Time, only map[string]bool) (hostSeen, error) {
	h := hostSeen{host: a.Host.Name, sure: map[string]bool{}, byKey: map[string]discover.Session{}}
	var ss []discover.Session
	if a.Exit != 0 {
		return h, fmt.Errorf("%s: list exited %d: its transitions wait for the next poll", a.Host.Name, a.Exit)
	}
	if err := json.Unmarshal(a.Out, &ss); err != nil {
		return h, fmt.Errorf("%s: the answer of list --json is unreadable: %v; is agentctl there the same version?", a.Host.Name, err)
	}
	ended := watchesEnded(ws)
	for _, s := range ss {
		if !discover.Alive(s.Status) {
			end := s.LastSeen()
			if s.EndedAt != nil {
				end = *s.EndedAt
			}
			if !ended || end.Before(at.Add(-meta.NotifyTTL)) {
				continue
			}
		}
		s.Host = a.Host.Name
		k := s.Adapter + "/" + s.ID
		h.byKey[k] = s
		h.seen = append(h.seen, meta.NotifyObservation{Key: k, Status: s.Status, Blocked: s.BlockedReason})
	}
	if !a.Warned {
		for _, r := range agents.Readers() {
			h.sure[r] = true
		}
		if only != nil {
			// --adapter narrows by session adapter: a reader is complete only
			// when every agent it reports was asked for (as locally).
			for _, name := range agents.Names() {
				if !only[name] {
					delete(h.sure, agents.ReaderOf(name))
				}
			}
		}
	}
	return h, nil
}

// notifyHostWatcher is the name a watcher's marks of host h live under.
func notifyHostWatcher(w *watcher, h string) string { return w.Name + "@" + h }

// pollHosts is one round across hosts: ask, claim under the notify.json lock
// (the same lock local polls take), fire outside it.
func pollHosts(ctx context.Context, n *notifier, fo fleet.Options, ws []*watcher, args []string) (failed bool, err error) {
	e := n.e
	unlock, err := e.store.Lock(notifyPollLock)
	if err != nil {
		return false, notifyStateError(e, err)
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	at := e.s.now()
	outs, _ := fo.Gather(ctx, fleetStreams(e.s), args)
	var hosts []hostSeen
	for _, a := range outs {
		h, err := readHostSessions(a, ws, at, e.only)
		if err != nil {
			warn(e.s, err.Error())
			continue
		}
		hosts = append(hosts, h)
	}
	type claimed struct {
		w      *watcher
		name   string // the watcher's marks for this host
		f      meta.NotifyFiring
		s      discover.Session
		before meta.NotifyMark // the mark this claim replaced, to give it back undelivered
		had    bool
	}
	var fire []claimed
	err = e.store.UpdateNotify(func(m *meta.NotifyMarks) (bool, error) {
		fire = fire[:0]
		changed := false
		for _, w := range ws {
			for _, h := range hosts {
				name := notifyHostWatcher(w, h.host)
				before := map[string]meta.NotifyMark{}
				for k, mk := range m.Watchers[name] {
					before[k] = mk
				}
				fs, ch := meta.ClaimNotifications(m, name, w.on, at, h.seen, h.sure)
				changed = changed || ch
				for _, f := range fs {
					b, had := before[f.Key]
					fire = append(fire, claimed{w, name, f, h.byKey[f.Key], b, had})
				}
			}
		}
		return changed, nil
	})
	if err != nil {
		return false, notifyStateError(e, err)
	}
	unlock()
	locked = false
	var mu sync.Mutex
	var wg sync.WaitGroup
	var undelivered []claimed
	for _, c := range fire {
		ev := n.event(c.w, c.f, c.s, at)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs, delivered := n.fire(ctx, c.w, ev)
			mu.Lock()
			defer mu.Unlock()
			if len(errs) > 0 {
				failed = true
				for _, err := range errs {
					warn(e.s, err.Error())
				}
			}
			if !delivered {
				undelivered = append(undelivered, c)
				return
			}
			fmt.Fprintf(e.s.Out, "%s %s:%s %s (was %s) %s\n", at.UTC().Format(time.RFC3339), termSafe(ev.Host), termSafe(ev.SessionID),
				ev.Status, orDash(ev.PrevStatus), termSafe(ev.Cwd))
		}()
	}
	wg.Wait()
	var back []pendingMark
	for _, c := range undelivered {
		back = append(back, pendingMark{c.name, c.f.Key, c.before, c.had})
	}
	return n.giveBack(back, at, failed)
}
