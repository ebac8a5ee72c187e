package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/agentctl/agentctl/jsonl"
)

// EventsFile is the lifecycle journal (README "Files"), one JSON object per line.
const EventsFile = "events.ndjson"

// DefaultEventsMaxBytes is the size at which the journal is rotated. Two rotated
// generations are kept (events.ndjson.1, events.ndjson.2), so the journal never
// takes more than three times this.
const DefaultEventsMaxBytes = 8 << 20

// Event types (README "Files").
const (
	EventLaunched     = "session.launched"
	EventStarted      = "session.started"
	EventIdle         = "session.idle"
	EventWaiting      = "session.waiting"
	EventStopped      = "session.stopped"
	EventFailed       = "session.failed"
	EventLockAcquired = "lock.acquired"
	EventLockReleased = "lock.released"
)

// Event is one journal line:
// {"type","adapter","session_id","timestamp","session":{…},"meta":{…}}. Lock
// events carry the directory.
type Event struct {
	Type      string            `json:"type"`
	Adapter   string            `json:"adapter,omitempty"`
	SessionID string            `json:"session_id,omitempty"`
	Timestamp time.Time         `json:"timestamp"`
	Session   map[string]any    `json:"session,omitempty"`
	Meta      map[string]string `json:"meta,omitempty"`
	LaunchID  string            `json:"launch_id,omitempty"`
	Directory string            `json:"directory,omitempty"`
	Name      string            `json:"name,omitempty"`
	Data      map[string]any    `json:"data,omitempty"`
}

// AppendEvent appends one line to the journal under its flock, rotating the file
// first when it has reached EventsMaxBytes. The line is written with one write(2)
// on an O_APPEND descriptor, so even a reader that takes no lock sees whole lines.
func (s *Store) AppendEvent(ev Event) error {
	if ev.Timestamp.IsZero() {
		ev.Timestamp = s.now()
	}
	ev.Timestamp = ev.Timestamp.UTC()
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	b = append(b, '\n')
	unlock, err := s.Lock(EventsFile)
	if err != nil {
		return err
	}
	defer unlock()
	path := s.Path(EventsFile)
	max := s.EventsMaxBytes
	if max <= 0 {
		max = DefaultEventsMaxBytes
	}
	if st, err := os.Stat(path); err == nil && st.Size() > 0 && st.Size()+int64(len(b)) > max {
		if err := rotate(path); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return f.Close()
}

// rotate shifts events.ndjson → .1 → .2, dropping the old .2.
func rotate(path string) error {
	if err := os.Rename(path+".1", path+".2"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate %s: %w", path, err)
	}
	if err := os.Rename(path, path+".1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate %s: %w", path, err)
	}
	return nil
}

// ReadEvents calls fn for every journal line, oldest first (rotated generations
// included), until fn returns false. Lines that do not parse (a torn line after a
// crash) are skipped with a warning. raw is valid only during the call.
func (s *Store) ReadEvents(fn func(ev Event, raw []byte) bool) error {
	path := s.Path(EventsFile)
	for _, p := range []string{path + ".2", path + ".1", path} {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		more, err := readEventLines(f, p, s, fn)
		f.Close()
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// errStopEvents ends a journal read early when fn has seen enough.
var errStopEvents = errors.New("stop")

func readEventLines(r io.Reader, path string, s *Store, fn func(Event, []byte) bool) (bool, error) {
	n := 0
	_, _, err := jsonl.Read(r, 0, func(line []byte, _ int64) error {
		n++
		var ev Event
		if jerr := json.Unmarshal(line, &ev); jerr != nil {
			s.warn("%s line %d does not parse; skipped", path, n)
		} else if !fn(ev, line) {
			return errStopEvents
		}
		return nil
	})
	switch {
	case errors.Is(err, errStopEvents):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return true, nil
}
