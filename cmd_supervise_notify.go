package main

import (
	"context"
	"os"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// superviseNotifyInterval is how often a supervisor looks at its own session
// for the config's notify rules: one session, so it can afford to look often.
const superviseNotifyInterval = time.Second

// startSuperviseNotify applies the config's notify rules to the session of one
// launch while its supervisor runs (the returned stop ends it). The rules are
// watchers like `agentctl notify` with the same flags — the same default names,
// the same marks in notify.json — so a cron line with the same rule never
// fires a transition the supervisor already fired, nor the other way round.
func startSuperviseNotify(ctx context.Context, s *host, state, launchID string, rules []meta.NotifyRule, logw func(string, ...any)) (stop func()) {
	ws := notifyWatchers(rules, logw)
	if len(ws) == 0 {
		return func() {}
	}
	// The supervisor's own host, with the state dir it was given.
	h := &host{IOStreams: s.IOStreams, now: s.now, executable: s.executable, getenv: supervisorGetenv(state, launchID)}
	e, err := setup(h, globalOptions{})
	if err != nil {
		logw("notify rules: %v", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sessionOf := func() string {
			recs, err := e.store.ReadLaunches()
			if err != nil {
				return ""
			}
			if r := meta.FindLaunch(recs, launchID); r != nil && r.ConfirmedAt != nil {
				return r.CurrentSessionID()
			}
			return ""
		}
		notifyOwn(ctx, e, ws, sessionOf, superviseNotifyInterval, logw)
	}()
	return func() { cancel(); <-done }
}

// supervisorGetenv is the environment a supervisor's notify rules see: its own
// (the agent's), the state dir it was given as AGENTCTL_HOME, and the webhook
// secret of its launch record as AGENTCTL_WEBHOOK_SECRET, since agentctl's
// own secrets are kept out of the agent's environment (launch.ownSecrets).
func supervisorGetenv(state, launchID string) func(string) string {
	return func(k string) string {
		switch k {
		case "AGENTCTL_HOME":
			return state
		case "AGENTCTL_WEBHOOK_SECRET":
			if v := os.Getenv(k); v != "" {
				return v
			}
			recs, _ := meta.NewStore(state).ReadLaunches()
			if r := meta.FindLaunch(recs, launchID); r != nil {
				return r.WebhookSecret
			}
			return ""
		}
		return os.Getenv(k)
	}
}

// notifyWatchers checks config rules; a bad one is reported and skipped.
func notifyWatchers(rules []meta.NotifyRule, logw func(string, ...any)) []*watcher {
	var ws []*watcher
	for i, r := range rules {
		w, err := parseRule(notifyRule{Name: r.Name, On: r.On, Exec: r.Exec, Desktop: r.Desktop, Webhook: r.Webhook})
		if err != nil {
			logw("config notify rule %d: %v; fix config.json (it is skipped)", i+1, err)
			continue
		}
		ws = append(ws, w)
	}
	return ws
}

// notifyOwn polls one session (its id from sessionOf, "" while not known yet)
// every interval until ctx ends, firing the watchers' transitions.
func notifyOwn(ctx context.Context, e *cmdEnv, ws []*watcher, sessionOf func() string, interval time.Duration, logw func(string, ...any)) {
	n := newNotifier(e)
	for {
		if id := sessionOf(); id != "" {
			if _, err := n.poll(ctx, ws, id); err != nil && ctx.Err() == nil {
				logw("notify: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
