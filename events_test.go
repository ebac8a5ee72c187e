package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/meta"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// `events --follow` prints the lines other processes append, once each, across
// a rotation, filtered by --type, until interrupted (exit 0).
func TestEventsFollowJournal(t *testing.T) {
	work := t.TempDir()
	home, state := filepath.Join(work, "home"), filepath.Join(work, "state")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "AGENTCTL_HOME": state}
	store := meta.NewStore(state)
	store.EventsMaxBytes = 600
	if err := store.AppendEvent(meta.Event{Type: meta.EventFuseSet, Directory: "/old"}); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	s := &host{IOStreams: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, getenv: func(k string) string { return env[k] }, now: time.Now}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		// --adapter pi: an empty home answers at once.
		done <- run(ctx, []string{"agentctl", "events", "--follow", "--interval", "200ms", "--type", "fuse", "--adapter", "pi"}, s)
	}()
	for i := 0; i < 12; i++ {
		typ := meta.EventFuseEvent
		if i%3 == 0 {
			typ = meta.EventLockAcquired
		}
		if err := store.AppendEvent(meta.Event{Type: typ, Name: "n" + string(rune('a'+i)), Directory: "/w"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(60 * time.Millisecond)
	}
	want := []string{"", "nb", "nc", "ne", "nf", "nh", "ni", "nk", "nl"} // "" is /old's fuse.set
	deadline := time.Now().Add(10 * time.Second)
	var got []string
	for time.Now().Before(deadline) {
		got = nil
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var ev meta.Event
			if line == "" {
				continue
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("not NDJSON: %q", line)
			}
			got = append(got, ev.Name)
		}
		if len(got) >= len(want) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d; stderr %s", code, errb.String())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("followed %q, want %q", got, want)
	}
	if _, err := os.Stat(store.Path(meta.EventsFile) + ".1"); err != nil {
		t.Fatal("the journal never rotated during the test; it proves less than it says")
	}
}
