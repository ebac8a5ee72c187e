package meta_test

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/meta"
)

func TestEventsAppendConcurrentAndRotate(t *testing.T) {
	s := newStore(t)
	s.EventsMaxBytes = 4096
	const workers, n = 8, 50
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				ev := meta.Event{Type: meta.EventStopped, Adapter: "claude-code", SessionID: fmt.Sprintf("w%d-%d", w, i),
					Session: map[string]any{"exit_code": i}, Meta: map[string]string{"callback_session_key": "k"}}
				if err := s.AppendEvent(ev); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	// Keep 2 rotated generations: the journal is bounded.
	for _, suffix := range []string{"", ".1", ".2"} {
		st, err := os.Stat(s.Path(meta.EventsFile) + suffix)
		if err != nil {
			t.Fatalf("events.ndjson%s: %v", suffix, err)
		}
		if st.Size() > 4096 {
			t.Errorf("events.ndjson%s is %d bytes, over the rotation size", suffix, st.Size())
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("events.ndjson%s mode %v", suffix, st.Mode().Perm())
		}
	}
	if _, err := os.Stat(s.Path(meta.EventsFile) + ".3"); err == nil {
		t.Error("more than 2 rotated generations kept")
	}
	seen := 0
	last := map[string]int{}
	err := s.ReadEvents(func(ev meta.Event, raw []byte) bool {
		seen++
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Errorf("line does not parse: %s", raw)
		}
		for _, k := range []string{"type", "adapter", "session_id", "timestamp", "session", "meta"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line lacks %q: %s", k, raw)
				return false
			}
		}
		var w, i int
		fmt.Sscanf(ev.SessionID, "w%d-%d", &w, &i)
		if prev, ok := last[fmt.Sprint(w)]; ok && i <= prev {
			t.Errorf("events of worker %d out of order: %d after %d", w, i, prev)
		}
		last[fmt.Sprint(w)] = i
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 || seen >= workers*n {
		t.Errorf("read %d events; want some but fewer than %d (older generations rotated away)", seen, workers*n)
	}
}

func TestEventsNoRotationBelowLimit(t *testing.T) {
	s := newStore(t)
	for i := 0; i < 10; i++ {
		if err := s.AppendEvent(meta.Event{Type: meta.EventLockAcquired, Directory: "/x"}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := s.ReadEvents(func(meta.Event, []byte) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if n != 10 {
		t.Errorf("read %d events, want 10", n)
	}
}

// A follower sees every line exactly once, in order, while writers append and
// the journal rotates under it.
func TestEventReaderFollowsAcrossRotation(t *testing.T) {
	s := newStore(t)
	s.EventsMaxBytes = 2048
	r := s.NewEventReader()
	var got []string
	poll := func() {
		t.Helper()
		if err := r.Poll(func(ev meta.Event, raw []byte) { got = append(got, ev.SessionID) }); err != nil {
			t.Fatal(err)
		}
	}
	poll() // no journal yet
	var want []string
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("s%03d", i)
		want = append(want, id)
		if err := s.AppendEvent(meta.Event{Type: meta.EventStarted, SessionID: id}); err != nil {
			t.Fatal(err)
		}
		// Poll less often than the journal rotates once, never less often than
		// it rotates twice (two generations are kept).
		if i%7 == 0 {
			poll()
		}
	}
	poll()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("follower saw %d lines:\n%v\nwant %d", len(got), got, len(want))
	}
	// A fresh reader starts from the oldest kept line and reads them once.
	got = nil
	r = s.NewEventReader()
	poll()
	poll()
	if len(got) == 0 || got[len(got)-1] != "s199" || len(got) > 200 {
		t.Fatalf("fresh reader: %v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("fresh reader out of order or repeated at %d: %v", i, got)
		}
	}
}
