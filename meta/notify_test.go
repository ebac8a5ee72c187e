package meta_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
)

func obs(key, status, blocked string) meta.NotifyObservation {
	return meta.NotifyObservation{Key: key, Status: status, Blocked: blocked}
}

// One watcher over a sequence of polls: each transition into a watched status
// fires once, a stale poll changes nothing, a failed adapter is no transition,
// and a session that left a complete listing fires again when it comes back.
func TestClaimNotifications(t *testing.T) {
	on := map[string]bool{"waiting": true, "blocked": true}
	sure := map[string]bool{"claude-code": true}
	var m meta.NotifyMarks
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	steps := []struct {
		name string
		at   time.Time
		seen []meta.NotifyObservation
		sure map[string]bool
		want []meta.NotifyFiring
	}{
		{"first run fires for a session already waiting", at(1),
			[]meta.NotifyObservation{obs("claude-code/a", "waiting", ""), obs("claude-code/b", "running", "")}, sure,
			[]meta.NotifyFiring{{Key: "claude-code/a", Status: "waiting"}}},
		{"still waiting: nothing", at(2),
			[]meta.NotifyObservation{obs("claude-code/a", "waiting", ""), obs("claude-code/b", "running", "")}, sure, nil},
		{"a overlapping slower run saw an older state: nothing", at(1),
			[]meta.NotifyObservation{obs("claude-code/a", "running", ""), obs("claude-code/b", "waiting", "")}, sure, nil},
		{"a answered, b asks", at(3),
			[]meta.NotifyObservation{obs("claude-code/a", "running", ""), obs("claude-code/b", "waiting", "")}, sure,
			[]meta.NotifyFiring{{Key: "claude-code/b", Status: "waiting", Prev: "running"}}},
		{"a unknown is no observation", at(4),
			[]meta.NotifyObservation{obs("claude-code/a", "unknown", ""), obs("claude-code/b", "waiting", "")}, sure, nil},
		{"the adapter failed: nobody is gone", at(5), nil, map[string]bool{}, nil},
		{"a waits again", at(6),
			[]meta.NotifyObservation{obs("claude-code/a", "waiting", ""), obs("claude-code/b", "waiting", "")}, sure,
			[]meta.NotifyFiring{{Key: "claude-code/a", Status: "waiting", Prev: "running"}}},
		{"b becomes blocked while idle", at(7),
			[]meta.NotifyObservation{obs("claude-code/a", "waiting", ""), obs("claude-code/b", "idle", "quota")}, sure,
			[]meta.NotifyFiring{{Key: "claude-code/b", Status: "blocked", Prev: "waiting"}}},
		{"a ended (not listed by a complete poll)", at(8),
			[]meta.NotifyObservation{obs("claude-code/b", "idle", "quota")}, sure, nil},
		{"a is back, waiting", at(9),
			[]meta.NotifyObservation{obs("claude-code/a", "waiting", ""), obs("claude-code/b", "idle", "quota")}, sure,
			[]meta.NotifyFiring{{Key: "claude-code/a", Status: "waiting", Prev: meta.NotifyGone}}},
	}
	for _, st := range steps {
		got, _ := meta.ClaimNotifications(&m, "w", on, st.at, st.seen, st.sure)
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("%s: firings (-want +got):\n%s", st.name, diff)
		}
	}
	// Another watcher has its own marks: it fires for what is there now.
	got, _ := meta.ClaimNotifications(&m, "other", on, at(10),
		[]meta.NotifyObservation{obs("claude-code/a", "waiting", "")}, sure)
	if len(got) != 1 {
		t.Errorf("a second watcher: %d firings, want 1 (its own first run)", len(got))
	}
}

func TestUpdateNotifyEvictsGoneMarks(t *testing.T) {
	s := newStore(t)
	now := t0
	s.Now = func() time.Time { return now }
	on := map[string]bool{"waiting": true}
	sure := map[string]bool{"claude-code": true}
	claim := func(at time.Time, seen ...meta.NotifyObservation) []meta.NotifyFiring {
		var f []meta.NotifyFiring
		if err := s.UpdateNotify(func(m *meta.NotifyMarks) (bool, error) {
			var ch bool
			f, ch = meta.ClaimNotifications(m, "w", on, at, seen, sure)
			return ch, nil
		}); err != nil {
			t.Fatal(err)
		}
		return f
	}
	claim(t0, obs("claude-code/a", "waiting", ""), obs("claude-code/b", "waiting", ""))
	claim(t0.Add(time.Hour), obs("claude-code/b", "waiting", "")) // a is gone
	now = t0.Add(meta.NotifyTTL + 2*time.Hour)
	if f := claim(now, obs("claude-code/b", "waiting", "")); len(f) != 0 {
		t.Errorf("b still waiting after a week: fired %v", f)
	}
	m, err := s.ReadNotify()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Watchers["w"]["claude-code/a"]; ok {
		t.Errorf("the mark of a, gone for over %s, was kept", meta.NotifyTTL)
	}
	if _, ok := m.Watchers["w"]["claude-code/b"]; !ok {
		t.Errorf("the mark of b, alive and waiting, was evicted")
	}
}
