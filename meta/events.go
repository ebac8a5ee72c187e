package meta

import (
	"bufio"
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
	EventLaunched      = "session.launched"
	EventStarted       = "session.started"
	EventIdle          = "session.idle"
	EventWaiting       = "session.waiting"
	EventBlocked       = "session.blocked"
	EventStopped       = "session.stopped"
	EventFailed        = "session.failed"
	EventLockAcquired  = "lock.acquired"
	EventLockReleased  = "lock.released"
	EventFuseSet       = "fuse.set"
	EventFuseExtended  = "fuse.extended"
	EventFuseCancelled = "fuse.cancelled"
	EventFuseExpired   = "fuse.expired"
	EventFuseEvent     = "fuse.event"
	// send: a message handed to a live session, then seen in its transcript.
	EventMessageSent      = "session.message_sent"
	EventMessageDelivered = "session.message_delivered"
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
// on an O_APPEND descriptor, so even a reader that takes no lock sees whole lines;
// it starts on a line boundary even after a torn write (appendLine), and never
// goes through a symbolic link (openNoFollow).
func (s *Store) AppendEvent(ev Event) error {
	if s.Unusable != nil {
		return s.Unusable
	}
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
	if st, err := os.Lstat(path); err == nil && st.Size() > 0 && st.Size()+int64(len(b)) > max {
		if err := rotate(path); err != nil {
			return err
		}
	}
	f, err := openNoFollow(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600, s.now(), s.warn)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if err := appendLine(f, b); err != nil {
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
	if s.Unusable != nil {
		return nil // no journal
	}
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

// EventReader reads the journal incrementally, across rotations: the first Poll
// returns every line (rotated generations first), each later Poll the lines
// appended since — including those written to a generation just before it was
// rotated away. `events --follow` polls it.
type EventReader struct {
	s       *Store
	started bool
	cur     os.FileInfo // the generation being read, nil before the first
	off     int64       // bytes of cur already returned (always at a line end)
}

// NewEventReader returns a reader positioned before the oldest journal line.
func (s *Store) NewEventReader() *EventReader { return &EventReader{s: s} }

// Poll calls fn for every complete line not returned before, oldest first. A
// line still being written (no newline yet) waits for the next Poll.
func (r *EventReader) Poll(fn func(ev Event, raw []byte)) error {
	path := r.s.Path(EventsFile)
	// The live file is opened first: a rotation after this leaves the fd
	// pointing at what becomes .1, which the loop below then skips.
	f, err := os.Open(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var st os.FileInfo
	if f != nil {
		defer f.Close()
		if st, err = f.Stat(); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	if !r.started {
		r.started = true
		for _, p := range []string{path + ".2", path + ".1"} {
			if gst, err := os.Stat(p); err == nil && (st == nil || !os.SameFile(gst, st)) {
				if _, err := r.readFile(p, 0, fn); err != nil {
					return err
				}
			}
		}
	} else if r.cur != nil && (st == nil || !os.SameFile(r.cur, st)) {
		// Rotated since the last poll: finish the generation where it went.
		for _, p := range []string{path + ".1", path + ".2"} {
			if gst, err := os.Stat(p); err == nil && os.SameFile(gst, r.cur) {
				if _, err := r.readFile(p, r.off, fn); err != nil {
					return err
				}
				break
			}
		}
		r.cur, r.off = nil, 0
	}
	if f == nil {
		return nil
	}
	if r.cur == nil {
		r.cur, r.off = st, 0
	}
	n, err := r.read(f, path, r.off, fn)
	r.off += n
	return err
}

func (r *EventReader) readFile(path string, off int64, fn func(Event, []byte)) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	return r.read(f, path, off, fn)
}

// read returns the complete lines of f after off; it reports how many bytes
// they took.
func (r *EventReader) read(f *os.File, path string, off int64, fn func(Event, []byte)) (int64, error) {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	var n int64
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			n += int64(len(line))
			var ev Event
			if jerr := json.Unmarshal(line, &ev); jerr != nil {
				r.s.warn("%s: a line at byte %d does not parse; skipped", path, off+n-int64(len(line)))
			} else {
				fn(ev, line[:len(line)-1])
			}
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read %s: %w", path, err)
		}
	}
}
