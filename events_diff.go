package main

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
)

// snapshot is what one poll of every adapter showed: the sessions agentctl did
// not launch, by adapter and id, and when the poll ran.
type snapshot struct {
	at       time.Time
	sessions map[string]discover.Session
}

// adapterOf is the adapter that reports a session: pi-rust sessions come from pi.
func adapterOf(s *discover.Session) string {
	if r := agents.ReaderOf(s.Adapter); r != "" {
		return r
	}
	return s.Adapter
}

// unsure lists the adapters whose answer this poll cannot be trusted to be
// complete: those that failed or timed out (not Up) and those that warned
// (a partial answer).
func unsure(res discover.Result, adapters []string) map[string]bool {
	out := map[string]bool{}
	for _, a := range adapters {
		if !res.Up[a] {
			out[a] = true
		}
	}
	for _, w := range res.Warnings {
		if i := strings.Index(w, ": "); i > 0 {
			out[w[:i]] = true
		}
	}
	return out
}

// diffSnapshots compares one poll's result with the previous snapshot and
// returns the next snapshot and the lifecycle events between them, for sessions
// agentctl did not launch (their launches, ends and failures are journaled by
// the supervisor). The rules keep `events --follow` honest:
//   - a session seen alive for the first time is session.started, followed by
//     session.idle or session.waiting when it is in that state;
//   - a change into idle or waiting is that event; into stopped or failed,
//     session.stopped; a blocked_reason that appears (or changes) on a session
//     already seen, or on one first seen alive, is session.blocked after them;
//   - a session an adapter did not report this poll is carried over unchanged
//     when the adapter failed or warned (a failed poll is a warning, never a
//     stop); otherwise it is forgotten, with session.stopped only when it was
//     last seen verifiably alive (running, idle, waiting) — a session that just
//     fell out of the adapter's window or history says nothing.
//
// prev.sessions == nil is the first poll: it only sets the baseline.
func diffSnapshots(prev snapshot, res discover.Result, unsureAdapters map[string]bool, now time.Time) (snapshot, []meta.Event) {
	next := snapshot{at: now, sessions: make(map[string]discover.Session, len(res.Sessions))}
	for _, s := range res.Sessions {
		if s.LaunchID != "" {
			continue
		}
		next.sessions[s.Adapter+"\x00"+s.ID] = s
	}
	if prev.sessions == nil {
		return next, nil
	}
	var evs []meta.Event
	for k, s := range next.sessions {
		s := s
		old, seen := prev.sessions[k]
		alive, wasAlive := discover.Alive(s.Status), seen && discover.Alive(old.Status)
		switch {
		case alive && !wasAlive:
			evs = append(evs, sessionEvent(meta.EventStarted, &s, now))
			if s.Status == discover.StatusIdle || s.Status == discover.StatusWaiting {
				evs = append(evs, sessionEvent("session."+s.Status, &s, now))
			}
		case alive && wasAlive && s.Status != old.Status && (s.Status == discover.StatusIdle || s.Status == discover.StatusWaiting):
			evs = append(evs, sessionEvent("session."+s.Status, &s, now))
		case !alive && wasAlive:
			evs = append(evs, sessionEvent(meta.EventStopped, &s, now))
		case !alive && !seen && s.StartedAt != nil && s.StartedAt.After(prev.at):
			// Started and ended between two polls.
			evs = append(evs, sessionEvent(meta.EventStarted, &s, now), sessionEvent(meta.EventStopped, &s, now))
		}
		if s.BlockedReason != "" && ((seen && old.BlockedReason != s.BlockedReason) || (!seen && alive)) {
			evs = append(evs, sessionEvent(meta.EventBlocked, &s, now))
		}
	}
	for k, old := range prev.sessions {
		if _, ok := next.sessions[k]; ok {
			continue
		}
		if unsureAdapters[adapterOf(&old)] {
			next.sessions[k] = old
			continue
		}
		switch old.Status {
		case discover.StatusRunning, discover.StatusIdle, discover.StatusWaiting:
			gone := old
			gone.Status, gone.PID = discover.StatusStopped, 0
			evs = append(evs, sessionEvent(meta.EventStopped, &gone, now))
		}
	}
	// Map order is random; events come out in a stable order: by session start,
	// then id, keeping each session's own events in the order appended.
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := evs[i], evs[j]
		if a.SessionID != b.SessionID {
			ta, tb := startOf(a), startOf(b)
			if ta != tb {
				return ta < tb
			}
			return a.Adapter+a.SessionID < b.Adapter+b.SessionID
		}
		return false
	})
	return next, evs
}

func startOf(ev meta.Event) string {
	if s, ok := ev.Session["started_at"].(string); ok {
		return s
	}
	return ""
}

// sessionEvent is a journal-shaped event for s: the session as `status --json`
// prints it, and its meta.
func sessionEvent(typ string, s *discover.Session, now time.Time) meta.Event {
	ev := meta.Event{Type: typ, Adapter: s.Adapter, SessionID: s.ID, Timestamp: now.UTC(), Meta: s.Meta}
	if b, err := json.Marshal(s); err == nil {
		_ = json.Unmarshal(b, &ev.Session)
	}
	return ev
}
