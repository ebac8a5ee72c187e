// Package meta holds agentctl's own records — launch records, the events journal,
// the webhook outbox, the config — and the one primitive every state file goes
// through: an exclusive flock on a sibling lock file, read, modify, write to a temp
// file, fsync, rename. Nothing here is a copy of session status; adapters own that.
package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/proc"
)

// Schema is the version written into every JSON state file.
const Schema = 1

// Store is agentctl's state directory ($AGENTCTL_HOME, default ~/.agentctl).
type Store struct {
	Dir  string
	Now  func() time.Time
	Warn func(format string, args ...any) // corrupt files and other non-fatal problems
	// Procs decides which records still have an owner, by proc.Check: launch
	// records are never evicted, and auto-locks never dropped, while their owner
	// is alive. nil is the machine now (proc.Live); tests inject a fake.
	Procs proc.Source
	// LaunchTTL is how long a launch record is kept after its session ended
	// (config launch_ttl); 0 means DefaultLaunchTTL.
	LaunchTTL time.Duration
	// EventsMaxBytes is the size at which events.ndjson is rotated; 0 means
	// DefaultEventsMaxBytes.
	EventsMaxBytes int64
	// Unusable, when set, is why the state dir cannot be used at all (a file,
	// unreadable, or not creatable): reads find nothing and every write fails
	// with this error (EnsureDir), which names the dir.
	Unusable error
}

// NewStore returns a store rooted at dir, with the real clock, the real process
// table and warnings dropped.
func NewStore(dir string) *Store {
	return &Store{Dir: dir, Now: time.Now, Warn: func(string, ...any) {}}
}

func (s *Store) alive(pid int, start uint64, bootID string) bool {
	src := s.Procs
	if src == nil {
		src = proc.Live()
	}
	return proc.Check(src, proc.ID{PID: pid, StartTicks: start, BootID: bootID}).Alive
}

func (s *Store) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Store) warn(format string, args ...any) {
	if s.Warn != nil {
		s.Warn(format, args...)
	}
}

// Path returns the absolute path of a file in the state dir.
func (s *Store) Path(name string) string { return filepath.Join(s.Dir, name) }

// EnsureDir creates the state dir with mode 0700.
func (s *Store) EnsureDir() error {
	if s.Unusable != nil {
		return s.Unusable
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create state dir %s: %w", s.Dir, err)
	}
	return nil
}

// envelope is the on-disk shape: {"schema":1, <key>: ...}.
type envelope struct {
	Schema int `json:"schema"`
}

// Read decodes name into v without locking: writers replace files by rename, so a
// reader sees either the old or the new content, never a torn one. A missing file
// leaves v untouched. A corrupt file is reported as an error (only writers move it
// aside, under the lock).
//
// A symbolic link is not followed (an error: the next writer moves it aside), and
// a file larger than v's bound (Bounded) is not read: a *TooLargeError.
func (s *Store) Read(name string, v any) error {
	if s.Unusable != nil {
		return nil // as a missing file: nothing recorded
	}
	path := s.Path(name)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if isLinkErr(err) {
		return fmt.Errorf("read %s: a symbolic link, not followed (the next write moves it aside)", path)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	b, err := readBounded(f, path, maxBytes(v))
	if err != nil {
		return err
	}
	return decode(path, b, v)
}

// Bounded is a state file's content type that caps the file's size: a larger
// file is never read into memory (Read refuses it, Update moves it aside).
type Bounded interface{ MaxBytes() int64 }

func maxBytes(v any) int64 {
	if b, ok := v.(Bounded); ok {
		return b.MaxBytes()
	}
	return 0
}

// TooLargeError is a state file over its type's bound.
type TooLargeError struct {
	Path      string
	Size, Max int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over its bound of %d; not read", e.Path, e.Size, e.Max)
}

// readBounded reads f whole, or refuses when it is larger than max (0: no bound).
func readBounded(f *os.File, path string, max int64) ([]byte, error) {
	if max <= 0 {
		b, err := io.ReadAll(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		return b, nil
	}
	if st, err := f.Stat(); err == nil && st.Size() > max {
		return nil, &TooLargeError{Path: path, Size: st.Size(), Max: max}
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, &TooLargeError{Path: path, Size: int64(len(b)), Max: max}
	}
	return b, nil
}

func decode(path string, b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return &CorruptError{Path: path, Err: err}
	}
	if env.Schema > Schema {
		return fmt.Errorf("%s has schema %d, newer than this agentctl understands (%d); upgrade agentctl", path, env.Schema, Schema)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &CorruptError{Path: path, Err: err}
	}
	return nil
}

// CorruptError is a state file that does not parse.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string { return fmt.Sprintf("%s is corrupt: %v", e.Path, e.Err) }
func (e *CorruptError) Unwrap() error { return e.Err }

// Lock takes the exclusive flock guarding name and returns its release function.
// Hold it only for the read-modify-write itself, never across slow work.
func (s *Store) Lock(name string) (func(), error) {
	if err := s.EnsureDir(); err != nil {
		return nil, err
	}
	f, err := openNoFollow(s.Path(name)+".lock", os.O_RDWR|os.O_CREATE, 0o600, s.now(), s.warn)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", s.Path(name), err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", s.Path(name), err)
	}
	_ = f.Chmod(0o600)
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// Update runs fn on the decoded content of name under the file's exclusive lock and
// writes the result back atomically when fn reports a change. A corrupt file is
// moved to <name>.corrupt-<timestamp> with a warning and fn starts from empty.
// T must be a struct with a `Schema int json:"schema"` field.
func Update[T any](s *Store, name string, fn func(*T) (changed bool, err error)) error {
	unlock, err := s.Lock(name)
	if err != nil {
		return err
	}
	defer unlock()
	path := s.Path(name)
	RemoveStaleTemps(path)
	var v T
	f, err := openNoFollow(path, os.O_RDONLY, 0, s.now(), s.warn)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", path, err)
	default:
		b, rerr := readBounded(f, path, maxBytes(&v))
		f.Close()
		derr := rerr
		if derr == nil {
			derr = decode(path, b, &v)
		}
		if derr != nil {
			var ce *CorruptError
			var te *TooLargeError
			kind := "corrupt"
			switch {
			case errors.As(derr, &ce):
			case errors.As(derr, &te):
				kind = "toolarge"
			default:
				return derr
			}
			aside := fmt.Sprintf("%s.%s-%s", path, kind, s.now().UTC().Format("20060102T150405.000000000Z"))
			if rerr := os.Rename(path, aside); rerr != nil {
				return fmt.Errorf("%v; moving it aside failed: %w", derr, rerr)
			}
			s.warn("%v; moved it to %s and started a new one", derr, aside)
			var zero T
			v = zero
		}
	}
	changed, err := fn(&v)
	if err != nil || !changed {
		return err
	}
	return WriteAtomic(path, v)
}

// WriteAtomic writes v as indented JSON with schema set, via temp file + fsync +
// rename in the same directory, mode 0600.
func WriteAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	b = append(b, '\n')
	return WriteFileAtomic(path, b)
}

// WriteFileAtomic replaces path with b (temp file, fsync, rename, fsync dir).
func WriteFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// The writer's pid is in the name, so RemoveStaleTemps can tell a temp file
	// a killed writer left behind from one being written now.
	f, err := os.CreateTemp(dir, tempPrefix(path)+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// IsAlive is the store's owner check: proc.Check over Procs (the machine now by default).
func (s *Store) IsAlive(pid int, start uint64, bootID string) bool {
	return s.alive(pid, start, bootID)
}

// Time is the store's clock (Now, defaulting to time.Now).
func (s *Store) Time() time.Time { return s.now() }
