package meta

import (
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/agents"
)

// NotifyFile holds what each `notify` watcher last saw of each session, so a
// transition fires exactly once per watcher however many runs overlap (README
// "Notifications").
const NotifyFile = "notify.json"

// NotifyGone is the status a mark takes when a complete poll no longer lists
// its session (it left the alive listing: it ended). Coming back into an
// --on status from here is a new transition.
const NotifyGone = "gone"

// NotifyMarks is the content of notify.json: watcher name → session key → mark.
type NotifyMarks struct {
	Schema   int                              `json:"schema"`
	Watchers map[string]map[string]NotifyMark `json:"watchers,omitempty"`
}

// NotifyMark is the last state one watcher saw of one session.
type NotifyMark struct {
	Status  string `json:"status"`
	Blocked string `json:"blocked,omitempty"` // blocked_reason
	// SeenAt is when the poll that set this state began. An observation from a
	// poll that began earlier is stale (an overlapping run that was slower) and
	// changes nothing: marks only move forward in time.
	SeenAt  time.Time  `json:"seen_at"`
	FiredAt *time.Time `json:"fired_at,omitempty"`
	Fired   string     `json:"fired,omitempty"` // the status the last firing was for
}

// NotifyObservation is one session as one poll saw it.
type NotifyObservation struct {
	Key     string // adapter + "/" + id
	Status  string
	Blocked string
}

// NotifyFiring is a transition a watcher claimed: the caller fires it, once.
type NotifyFiring struct {
	Key, Status, Prev string
}

// ClaimNotifications applies one poll, begun at at, to watcher's marks in m and
// returns the transitions into an on status (a status, or "blocked" for a
// blocked reason that appears or changes) that this call claimed. Under the
// notify.json lock (UpdateNotify) a transition is claimed by exactly one run.
//
// sure names the readers whose answer was complete this poll: a session they
// did not list is marked gone (so its return fires again); the marks of
// sessions of any other reader are left alone — a failed adapter is a warning,
// never a transition. An unknown status, unless watched, is no observation.
func ClaimNotifications(m *NotifyMarks, watcher string, on map[string]bool, at time.Time, seen []NotifyObservation, sure map[string]bool) (fire []NotifyFiring, changed bool) {
	if m.Watchers == nil {
		m.Watchers = map[string]map[string]NotifyMark{}
	}
	marks := m.Watchers[watcher]
	if marks == nil {
		marks = map[string]NotifyMark{}
		m.Watchers[watcher] = marks
	}
	listed := make(map[string]bool, len(seen))
	for _, o := range seen {
		listed[o.Key] = true
		if o.Status == "unknown" && !on["unknown"] {
			continue
		}
		prev, had := marks[o.Key]
		if had && !at.After(prev.SeenAt) {
			continue // a newer poll already moved this mark
		}
		if had && prev.Status == o.Status && prev.Blocked == o.Blocked {
			continue
		}
		next := NotifyMark{Status: o.Status, Blocked: o.Blocked, SeenAt: at, FiredAt: prev.FiredAt, Fired: prev.Fired}
		into := ""
		switch {
		case on[o.Status] && (!had || prev.Status != o.Status):
			into = o.Status
		case on["blocked"] && o.Blocked != "" && (!had || prev.Blocked != o.Blocked):
			into = "blocked"
		}
		if into != "" {
			t := at
			next.FiredAt, next.Fired = &t, into
			fire = append(fire, NotifyFiring{Key: o.Key, Status: into, Prev: prev.Status})
		}
		marks[o.Key] = next
		changed = true
	}
	for k, prev := range marks {
		if listed[k] || prev.Status == NotifyGone || !at.After(prev.SeenAt) || !sure[readerOfKey(k)] {
			continue
		}
		prev.Status, prev.Blocked, prev.SeenAt = NotifyGone, "", at
		marks[k] = prev
		changed = true
	}
	sort.Slice(fire, func(i, j int) bool { return fire[i].Key < fire[j].Key })
	return fire, changed
}

// readerOfKey is the reader of a session key's adapter (the part before "/").
func readerOfKey(k string) string {
	a, _, _ := strings.Cut(k, "/")
	return agents.ReaderOf(a)
}

// NotifyTTL is how long a mark is kept once its session is gone, or has not
// changed at all: the marks of a session are evicted with it.
const NotifyTTL = 7 * 24 * time.Hour

// UpdateNotify is Update on notify.json; marks of sessions gone (or unchanged)
// for longer than NotifyTTL are dropped, and so are watchers left without marks.
func (s *Store) UpdateNotify(fn func(*NotifyMarks) (bool, error)) error {
	return Update(s, NotifyFile, func(m *NotifyMarks) (bool, error) {
		changed, err := fn(m)
		if err != nil {
			return false, err
		}
		now := s.now()
		for w, marks := range m.Watchers {
			for k, mk := range marks {
				ttl := NotifyTTL
				if mk.Status != NotifyGone && mk.Status != "stopped" && mk.Status != "failed" {
					ttl = 4 * NotifyTTL // alive: only a session that stays put this long
				}
				if now.Sub(mk.SeenAt) > ttl {
					delete(marks, k)
					changed = true
				}
			}
			if len(marks) == 0 {
				delete(m.Watchers, w) // nothing to write for it
			}
		}
		if changed {
			m.Schema = Schema
		}
		return changed, nil
	})
}

// ReadNotify returns notify.json without locking.
func (s *Store) ReadNotify() (NotifyMarks, error) {
	var m NotifyMarks
	err := s.Read(NotifyFile, &m)
	return m, err
}
