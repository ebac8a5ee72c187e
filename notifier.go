// The notify engine: rules become watchers, a poll finds each session's
// transitions into a watched status, and each fires exactly once (the marks in
// notify.json). `agentctl notify` runs it, and so does a supervisor for a
// launch's own notify rules (cmd_supervise_notify.go).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/meta"
)

// notifyRule is one watcher: its --on set and targets (the same shape as the
// config's notify rules, meta.NotifyRule).
type notifyRule struct {
	Name    string
	On      string
	Exec    string
	Desktop bool
	Webhook string
}

// watcher is a checked rule.
type watcher struct {
	notifyRule
	on map[string]bool
}

// parseRule checks a rule: a known --on set, at least one target, and its name.
func parseRule(r notifyRule) (*watcher, error) {
	if strings.TrimSpace(r.On) == "" {
		return nil, usageErrorf("notify: want --on STATUS[,…] (one or more of %s)", strings.Join(notifyStates, ", "))
	}
	on, err := parseStates("--on", r.On, notifyStates)
	if err != nil {
		return nil, err
	}
	w := &watcher{notifyRule: r, on: on}
	if r.Exec == "" && !r.Desktop && r.Webhook == "" {
		return nil, usageErrorf("notify: want a target: --exec CMD, --desktop or --webhook URL (see agentctl notify --help)")
	}
	if r.Webhook != "" && !strings.HasPrefix(r.Webhook, "http://") && !strings.HasPrefix(r.Webhook, "https://") {
		return nil, usageErrorf("--webhook %q: want an http:// or https:// URL", r.Webhook)
	}
	if w.Name == "" {
		w.Name = defaultWatcherName(w)
	}
	return w, nil
}

// defaultWatcherName is a stable hash of the --on set and the targets: the same
// cron line is the same watcher on every run; a line with another command is
// another watcher, with its own marks.
func defaultWatcherName(w *watcher) string {
	h := sha256.New()
	fmt.Fprintf(h, "on=%s\x00exec=%s\x00desktop=%t\x00webhook=%s", strings.Join(sortedKeys(w.on), ","), w.Exec, w.Desktop, w.Webhook)
	return "w-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// notifier polls sessions and fires the transitions its watchers claim.
type notifier struct {
	e    *cmdEnv
	deps *launch.Deps
	mu   sync.Mutex
	// desktopWarned: the "no notify-send or osascript" warning is given once per run.
	desktopWarned bool
	// skipExisting: a watcher's first run records what it sees without firing
	// (notify --skip-existing); since: transitions of sessions whose last
	// activity is older are recorded, not fired (notify --since; zero: all).
	skipExisting bool
	since        time.Time
}

// notifyFirstRun is the mark a watcher run with --skip-existing leaves, so that
// its later runs fire even when the first saw no session at all. As a gone
// mark it is no session: no poll compares it, and it is evicted with the TTL.
const notifyFirstRun = "agentctl/first-run"

func newNotifier(e *cmdEnv) *notifier {
	return &notifier{e: e, deps: e.deps()}
}

// watchesEnded: a watcher of stopped, failed or blocked needs the ended
// sessions too (a Codex exec run that hit its quota has ended, failed and
// blocked); others read the alive ones only (the cheap listing).
func watchesEnded(ws []*watcher) bool {
	for _, w := range ws {
		if w.on[discover.StatusStopped] || w.on[discover.StatusFailed] || w.on["blocked"] {
			return true
		}
	}
	return false
}

// poll is one round: discover, claim under the notify.json lock, fire outside
// it. With only != "" it looks at that one session (a supervisor's own) and
// never marks another gone. failed reports a target that failed.
func (n *notifier) poll(ctx context.Context, ws []*watcher, only string) (failed bool, err error) {
	e := n.e
	// Polls take turns, from discovery to claim: a transition is claimed from
	// observations applied in the order they were made. Two overlapping polls
	// could otherwise apply a slower one's older view after a newer one's and
	// see the same transition twice. The lock is never held while firing.
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
	ended := watchesEnded(ws)
	e.onlyAlive = !ended
	var res discover.Result
	if only != "" {
		res, _ = e.fanOut(ctx, only)
	} else {
		res, _ = e.discoverAll(ctx)
	}
	byKey := map[string]discover.Session{}
	var seen []meta.NotifyObservation
	for _, s := range res.Sessions {
		if only != "" && s.ID != only {
			continue
		}
		if !discover.Alive(s.Status) {
			end := s.LastSeen()
			if s.EndedAt != nil {
				end = *s.EndedAt
			}
			if !ended || end.Before(at.Add(-meta.NotifyTTL)) {
				continue // not watched, or ended before any mark could remember it
			}
		}
		k := s.Adapter + "/" + s.ID
		byKey[k] = s
		seen = append(seen, meta.NotifyObservation{Key: k, Status: s.Status, Blocked: s.BlockedReason})
	}
	sure := map[string]bool{}
	if only == "" {
		var names []string
		for _, a := range e.adapters {
			names = append(names, a.Name())
		}
		bad := unsure(res, names)
		for _, a := range names {
			if !bad[a] {
				sure[a] = true
			}
		}
		if e.only != nil {
			// --adapter narrows by session adapter: a reader is complete only
			// when every agent it reports is listed (pi without pi-rust is not).
			for _, name := range agents.Names() {
				if !e.only[name] {
					delete(sure, agents.ReaderOf(name))
				}
			}
		}
	}
	type claimed struct {
		w      *watcher
		f      meta.NotifyFiring
		before meta.NotifyMark // the mark this claim replaced, to give it back undelivered
		had    bool
	}
	var fire []claimed
	err = e.store.UpdateNotify(func(m *meta.NotifyMarks) (bool, error) {
		fire = fire[:0]
		changed := false
		for _, w := range ws {
			first := m.Watchers == nil || len(m.Watchers[w.Name]) == 0
			before := map[string]meta.NotifyMark{}
			for k, mk := range m.Watchers[w.Name] {
				before[k] = mk
			}
			fs, ch := meta.ClaimNotifications(m, w.Name, w.on, at, seen, sure)
			changed = changed || ch
			marks := m.Watchers[w.Name]
			for _, f := range fs {
				b, had := before[f.Key]
				if (n.skipExisting && first) || !n.inWindow(byKey[f.Key]) {
					// Seen, not fired: the mark keeps its earlier firing.
					mk := marks[f.Key]
					mk.FiredAt, mk.Fired = b.FiredAt, b.Fired
					marks[f.Key] = mk
					continue
				}
				fire = append(fire, claimed{w, f, b, had})
			}
			if n.skipExisting {
				marks[notifyFirstRun] = meta.NotifyMark{Status: meta.NotifyGone, SeenAt: at}
				changed = true
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
		ev := n.event(c.w, c.f, byKey[c.f.Key], at)
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
			fmt.Fprintf(e.s.Out, "%s %s %s (was %s) %s\n", at.UTC().Format(time.RFC3339), ev.SessionID, ev.Status,
				orDash(ev.PrevStatus), shortHome(ev.Cwd, e.home))
		}()
	}
	wg.Wait()
	var back []pendingMark
	for _, c := range undelivered {
		back = append(back, pendingMark{c.w.Name, c.f.Key, c.before, c.had})
	}
	return n.giveBack(back, at, failed)
}

// pendingMark is a claimed transition no target delivered: the watcher's marks
// it is in (per host for remote sessions), its key, and the mark it replaced.
type pendingMark struct {
	watcher, key string
	before       meta.NotifyMark
	had          bool
}

// giveBack returns the marks of transitions nothing delivered, so the next run
// finds the same transitions and tries again. A mark a later poll has moved on
// since is that poll's, and stays. failed is the run's outcome so far.
func (n *notifier) giveBack(back []pendingMark, at time.Time, failed bool) (bool, error) {
	if len(back) == 0 {
		return failed, nil
	}
	e := n.e
	err := e.store.UpdateNotify(func(m *meta.NotifyMarks) (bool, error) {
		changed := false
		for _, b := range back {
			marks := m.Watchers[b.watcher]
			if mk, ok := marks[b.key]; !ok || !mk.SeenAt.Equal(at) {
				continue
			}
			if b.had {
				marks[b.key] = b.before
			} else {
				delete(marks, b.key)
			}
			changed = true
		}
		return changed, nil
	})
	if err != nil {
		return true, notifyStateError(e, err)
	}
	warn(e.s, fmt.Sprintf("%d transition(s) were not delivered by any target; they stay pending for the next run", len(back)))
	return true, nil
}

// inWindow reports whether s was active inside notify --since's window (always
// without one).
func (n *notifier) inWindow(s discover.Session) bool {
	if n.since.IsZero() {
		return true
	}
	t := s.LastSeen()
	return t.IsZero() || !t.Before(n.since)
}

func notifyStateError(e *cmdEnv, err error) error {
	return &exitError{exitFailed, fmt.Errorf("record notify marks: %w; make %s writable (or set AGENTCTL_HOME to a writable directory) — nothing was fired", err, e.store.Dir)}
}

// notifyEvent is what a transition is told as: the --webhook body, and the
// --exec environment.
type notifyEvent struct {
	HookType      string            `json:"hook_type"` // session.<status>, session.blocked
	Watcher       string            `json:"watcher"`
	SessionID     string            `json:"session_id"`
	Adapter       string            `json:"adapter"`
	Status        string            `json:"status"`
	PrevStatus    string            `json:"prev_status"`
	BlockedReason string            `json:"blocked_reason,omitempty"`
	Detail        string            `json:"detail"`
	Cwd           string            `json:"cwd"`
	Host          string            `json:"host"`
	Title         string            `json:"title,omitempty"`
	Summary       string            `json:"summary"`
	Meta          map[string]string `json:"meta"`
	Timestamp     string            `json:"timestamp"`
}

func (n *notifier) event(w *watcher, f meta.NotifyFiring, s discover.Session, at time.Time) notifyEvent {
	prev := f.Prev
	if prev == meta.NotifyGone {
		prev = discover.StatusStopped
	}
	ev := notifyEvent{HookType: "session." + f.Status, Watcher: w.Name, SessionID: s.ID, Adapter: s.Adapter,
		Status: f.Status, PrevStatus: prev, BlockedReason: s.BlockedReason, Cwd: s.Cwd, Host: s.Host,
		Title: s.Title, Summary: discover.OneLine(s.Prompt, 200), Meta: s.Meta, Timestamp: at.UTC().Format(time.RFC3339)}
	ev.Detail = notifyDetail(s.EvidenceDetail)
	if f.Status == "blocked" && s.BlockedReason != "" {
		ev.Detail = strings.TrimSuffix(s.BlockedReason+": "+s.EvidenceDetail, ": ")
	}
	if ev.Host == "" {
		ev.Host, _ = os.Hostname()
	}
	if ev.Meta == nil {
		ev.Meta = map[string]string{}
	}
	return ev
}

// notifyDetail is what the user is told a session waits for: the evidence
// detail without its leading evidence file part ("sessions/123.json procStart=…
// matches; permission: Bash(…)" says "permission: Bash(…)").
func notifyDetail(d string) string {
	if first, rest, ok := strings.Cut(d, "; "); ok && strings.Contains(first, ".json") {
		return rest
	}
	return d
}

// fire runs w's targets for ev, all of them whatever one does; it returns what
// failed and whether any target delivered it: the command ran (whatever its
// exit), the webhook was sent or queued in the outbox, or the desktop showed it.
func (n *notifier) fire(ctx context.Context, w *watcher, ev notifyEvent) (errs []error, delivered bool) {
	e := n.e
	if w.Exec != "" {
		env := []string{"AGENTCTL_SESSION_ID=" + ev.SessionID, "AGENTCTL_STATUS=" + ev.Status,
			"AGENTCTL_PREV_STATUS=" + ev.PrevStatus, "AGENTCTL_ADAPTER=" + ev.Adapter, "AGENTCTL_CWD=" + ev.Cwd,
			"AGENTCTL_DETAIL=" + ev.Detail, "AGENTCTL_HOST=" + ev.Host, "AGENTCTL_BLOCKED_REASON=" + ev.BlockedReason,
			"AGENTCTL_NOTIFY_NAME=" + w.Name}
		dir := ev.Cwd
		if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
			dir = e.home
		}
		log := e.store.Path(launch.NotifyLog)
		if err := launch.PrepareNotifyLog(log); err != nil {
			errs = append(errs, err)
		} else {
			delivered = true // a hook that ran and failed was still told
			if _, err := n.deps.RunHook(ctx, "notify "+w.Name, w.Exec, dir, env, log); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if w.Desktop {
		switch err := n.desktop(ctx, ev); {
		case err == nil:
			delivered = true
		case errors.Is(err, errNoDesktop):
			n.mu.Lock()
			if !n.desktopWarned {
				warn(e.s, err.Error()) // once per run
			}
			n.desktopWarned = true
			n.mu.Unlock()
		default:
			warn(e.s, err.Error())
		}
	}
	if w.Webhook != "" {
		secret := e.config.WebhookSecret
		if v := e.s.getenv("AGENTCTL_WEBHOOK_SECRET"); v != "" {
			secret = v
		}
		del, err := launch.NewDelivery(w.Webhook, secret, ev, e.s.now())
		if err == nil {
			del.SessionID = ev.SessionID
			err = n.deps.DeliverOnce(ctx, del)
			delivered = true // sent, or in the outbox for sweep
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs, delivered
}

// errNoDesktop: --desktop has nothing to show a notification with.
var errNoDesktop = errors.New("--desktop: neither notify-send nor osascript is on PATH, so nothing was shown; install libnotify (notify-send) or use --exec")

// desktop shows ev with notify-send whenever it is on PATH, else osascript on
// macOS; with neither it returns errNoDesktop.
func (n *notifier) desktop(ctx context.Context, ev notifyEvent) error {
	title := fmt.Sprintf("%s %s — %s", ev.Adapter, ev.Status, shortHome(ev.Cwd, n.e.home))
	body := ev.Detail
	if body == "" {
		body = ev.SessionID
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if p := n.lookPath("notify-send"); p != "" {
		cmd = exec.CommandContext(ctx, p, "--app-name=agentctl", title, body)
	} else if p := n.lookPath("osascript"); p != "" && runtime.GOOS == "darwin" {
		cmd = exec.CommandContext(ctx, p, "-e", "on run argv\ndisplay notification (item 2 of argv) with title (item 1 of argv)\nend run", title, body)
	} else {
		return errNoDesktop
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("--desktop: %s failed: %v: %s", filepath.Base(cmd.Path), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// lookPath finds name on the command's PATH ("" if absent).
func (n *notifier) lookPath(name string) string {
	for _, d := range filepath.SplitList(n.e.s.getenv("PATH")) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
