package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
)

func TestDiffSnapshots(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	sess := func(adapter, id, status string) discover.Session {
		st := t0.Add(-time.Hour)
		return discover.Session{ID: id, Adapter: adapter, Status: status, StartedAt: &st}
	}
	fresh := func(adapter, id, status string) discover.Session {
		s := sess(adapter, id, status)
		st := t0.Add(time.Second)
		s.StartedAt = &st
		return s
	}
	blocked := func(s discover.Session, why string) discover.Session { s.BlockedReason = why; return s }
	launched := sess("claude-code", "L", discover.StatusRunning)
	launched.LaunchID = "l-1"
	all := []string{"claude-code", "codex", "pi"}
	up := func(except ...string) discover.Result {
		r := discover.Result{Up: map[string]bool{}}
		for _, a := range all {
			r.Up[a] = true
		}
		for _, a := range except {
			delete(r.Up, a)
		}
		return r
	}
	type poll struct {
		res  discover.Result
		want []string // "type adapter/id"
	}
	with := func(r discover.Result, ss ...discover.Session) discover.Result { r.Sessions = ss; return r }
	warned := up()
	warned.Warnings = []string{"codex: a rollout did not parse"}
	cases := []struct {
		name  string
		polls []poll
	}{
		{"baseline emits nothing, then transitions", []poll{
			{with(up(), sess("claude-code", "a", "running"), sess("codex", "old", "stopped")), nil},
			{with(up(), sess("claude-code", "a", "waiting"), sess("codex", "old", "stopped"), sess("codex", "b", "running")),
				[]string{"session.waiting claude-code/a", "session.started codex/b"}},
			{with(up(), sess("claude-code", "a", "running"), sess("codex", "b", "idle")), []string{"session.idle codex/b"}},
			{with(up(), sess("claude-code", "a", "stopped"), sess("codex", "b", "failed")),
				[]string{"session.stopped claude-code/a", "session.stopped codex/b"}},
		}},
		{"first seen idle or waiting says so after started", []poll{
			{with(up()), nil},
			{with(up(), sess("pi-rust", "p", "idle"), sess("claude-code", "w", "waiting")),
				[]string{"session.started claude-code/w", "session.waiting claude-code/w", "session.started pi-rust/p", "session.idle pi-rust/p"}},
		}},
		{"a failed adapter is never a stop", []poll{
			{with(up(), sess("codex", "b", "running"), sess("pi-rust", "p", "running")), nil},
			{with(up("codex", "pi")), nil},
			{with(warned, sess("pi-rust", "p", "running")), nil},
			{with(up(), sess("codex", "b", "running"), sess("pi-rust", "p", "running")), nil},
		}},
		{"leaving the window is silent, vanishing alive is a stop", []poll{
			{with(up(), sess("codex", "old", "stopped"), sess("codex", "u", "unknown"), sess("claude-code", "a", "idle")), nil},
			{with(up()), []string{"session.stopped claude-code/a"}},
		}},
		{"a blocked reason appearing is session.blocked, once", []poll{
			{with(up(), sess("codex", "q", "running"), sess("codex", "old", "failed")), nil},
			{with(up(), blocked(sess("codex", "q", "idle"), "quota"), blocked(sess("codex", "old", "failed"), "auth")),
				[]string{"session.blocked codex/old", "session.idle codex/q", "session.blocked codex/q"}},
			{with(up(), blocked(sess("codex", "q", "idle"), "quota"), blocked(sess("codex", "old", "failed"), "auth")), nil},
		}},
		{"resumed after it stopped is started again", []poll{
			{with(up(), sess("claude-code", "a", "stopped")), nil},
			{with(up(), sess("claude-code", "a", "running")), []string{"session.started claude-code/a"}},
		}},
		{"started and ended between polls", []poll{
			{with(up()), nil},
			{with(up(), fresh("pi", "q", "stopped"), sess("pi", "r", "stopped")), []string{"session.started pi/q", "session.stopped pi/q"}},
		}},
		{"launched sessions are the journal's", []poll{
			{with(up()), nil},
			{with(up(), launched), nil},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var snap snapshot
			for i, p := range tc.polls {
				now := t0.Add(time.Duration(i) * 2 * time.Second)
				var evs []meta.Event
				snap, evs = diffSnapshots(snap, p.res, unsure(p.res, all), now)
				var got []string
				for _, ev := range evs {
					got = append(got, ev.Type+" "+ev.Adapter+"/"+ev.SessionID)
					if !ev.Timestamp.Equal(now) || ev.Session["id"] != ev.SessionID {
						t.Errorf("poll %d: event %+v lacks its timestamp or session", i, ev)
					}
				}
				if diff := cmp.Diff(p.want, got); diff != "" {
					t.Errorf("poll %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}
