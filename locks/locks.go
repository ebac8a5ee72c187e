// Package locks is agentctl's directory locks (locks.json, README "Locks"): a
// launch takes an auto-lock on its working directory, owned by a verified live
// PID, so two agents are not started on one checkout by accident; users take
// manual locks with `agentctl lock`. Nothing here needs a daemon: whichever
// command opens the file drops locks whose owner died or whose TTL passed.
package locks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// File is the locks file in the state dir.
const File = "locks.json"

// Lock types.
const (
	Auto   = "auto"
	Manual = "manual"
)

// Lock is one entry of locks.json.
type Lock struct {
	Directory string     `json:"directory"`
	Type      string     `json:"type"`
	PID       int        `json:"pid,omitempty"`
	PIDStart  uint64     `json:"pid_start,omitempty"`
	BootID    string     `json:"boot_id,omitempty"`
	SessionID string     `json:"session_id,omitempty"`
	LaunchID  string     `json:"launch_id,omitempty"`
	LockedBy  string     `json:"locked_by,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	LockedAt  time.Time  `json:"locked_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Locks is the content of locks.json.
type Locks struct {
	Schema int    `json:"schema"`
	Locks  []Lock `json:"locks"`
}

// MaxLocks is how many locks locks.json holds at most: a lock past it is
// refused (TooManyError), so the file stays small enough to read at every
// command. A var for tests.
var MaxLocks = 10000

// MaxFileBytes bounds locks.json: a larger file (written by something other
// than agentctl) is never read into memory — a read skips it with a warning,
// the next write moves it aside. A var for tests.
var MaxFileBytes int64 = 32 << 20

// MaxBytes makes locks.json a meta.Bounded file.
func (Locks) MaxBytes() int64 { return MaxFileBytes }

// TooManyError is a lock refused because locks.json is full.
type TooManyError struct{ Held, Max int }

func (e *TooManyError) Error() string {
	return fmt.Sprintf("%d locks are held, the most agentctl keeps is %d; release some first (agentctl locks, agentctl unlock)", e.Held, e.Max)
}

// approxBytes is an upper estimate of the indented JSON of ls.
func approxBytes(ls []Lock) int64 {
	var n int64
	for _, l := range ls {
		n += 512 + int64(len(l.Directory)+len(l.BootID)+len(l.SessionID)+len(l.LaunchID)+len(l.LockedBy)+len(l.Reason))*2
	}
	return n
}

// ConflictError is a live lock on the directory a caller wanted (exit 5).
type ConflictError struct{ Lock Lock }

func (e *ConflictError) Error() string {
	l := e.Lock
	reason := l.Reason
	if reason == "" {
		reason = "no reason given"
	}
	by := l.LockedBy
	if by == "" {
		by = "unknown"
	}
	return fmt.Sprintf("directory locked by %s (%s) since %s; use --force", by, reason, l.LockedAt.UTC().Format(time.RFC3339))
}

// Canonical returns the realpath of dir, which must exist and be a directory.
func Canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", errors.New("directory does not exist")
		}
		return "", err
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", errors.New("not a directory")
	}
	return real, nil
}

// live reports whether a lock still holds: a manual one until its TTL, an auto
// one while its owner PID is alive with the recorded start time.
func live(s *meta.Store, l Lock, now time.Time) bool {
	if l.ExpiresAt != nil && !now.Before(*l.ExpiresAt) {
		return false
	}
	if l.Type == Manual {
		return true
	}
	return s.IsAlive(l.PID, l.PIDStart, l.BootID)
}

// prune drops dead and expired locks; it returns what it dropped.
func prune(s *meta.Store, f *Locks, now time.Time) []Lock {
	kept := f.Locks[:0]
	var dropped []Lock
	for _, l := range f.Locks {
		if live(s, l, now) {
			kept = append(kept, l)
		} else {
			dropped = append(dropped, l)
		}
	}
	f.Locks = kept
	return dropped
}

// update is meta.Update on locks.json with lazy pruning; fn sees only live locks.
func update(s *meta.Store, fn func(f *Locks) (bool, error)) (dropped []Lock, err error) {
	err = meta.Update(s, File, func(f *Locks) (bool, error) {
		dropped = prune(s, f, s.Time())
		changed, err := fn(f)
		if err != nil {
			return false, err
		}
		if changed || len(dropped) > 0 {
			f.Schema = meta.Schema
			sort.SliceStable(f.Locks, func(i, j int) bool { return f.Locks[i].Directory < f.Locks[j].Directory })
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	now := s.Time()
	for _, l := range dropped {
		why := "owner gone"
		if l.ExpiresAt != nil && !now.Before(*l.ExpiresAt) {
			why = "expired"
		}
		journal(s, meta.EventLockReleased, l, why)
	}
	return dropped, nil
}

// related reports whether a is an ancestor or descendant of b (not equal).
func related(a, b string) bool {
	if a == b {
		return false
	}
	return within(a, b) || within(b, a)
}

// within reports whether dir is inside root (or equal).
func within(dir, root string) bool {
	if dir == root {
		return true
	}
	if root == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(dir, root+string(filepath.Separator))
}

// Acquire inserts l unless a live lock holds the same directory (ConflictError),
// or replaces it with force. Locks on an ancestor or descendant directory do not
// conflict; they come back as warnings. l.Directory must be canonical.
func Acquire(s *meta.Store, l Lock, force bool) (warnings []string, err error) {
	return AcquireAll(s, []Lock{l}, force)
}

// AcquireAll is Acquire of several directories at once, all or nothing: one
// live lock on any of them (without force) is a ConflictError and nothing is
// written (a comparison group locks every slot before any agent starts).
func AcquireAll(s *meta.Store, ls []Lock, force bool) (warnings []string, err error) {
	ls = append([]Lock(nil), ls...)
	for i := range ls {
		if ls[i].LockedAt.IsZero() {
			ls[i].LockedAt = s.Time().UTC()
		}
	}
	var replaced []Lock
	_, err = update(s, func(f *Locks) (bool, error) {
		warnings, replaced = nil, nil
		for _, l := range ls {
			kept := f.Locks[:0]
			for _, o := range f.Locks {
				if o.Directory == l.Directory {
					if !force {
						return false, &ConflictError{o}
					}
					replaced = append(replaced, o)
					continue
				}
				if related(o.Directory, l.Directory) {
					warnings = append(warnings, fmt.Sprintf("%s is %s %s, locked by %s (%s)", l.Directory, relation(l.Directory, o.Directory), o.Directory, orDash(o.LockedBy), orDash(o.Reason)))
				}
				kept = append(kept, o)
			}
			f.Locks = append(kept, l)
		}
		if len(f.Locks) > MaxLocks || approxBytes(f.Locks) > MaxFileBytes {
			return false, &TooManyError{Held: len(f.Locks) - len(ls), Max: MaxLocks}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	for _, o := range replaced {
		warnings = append(warnings, fmt.Sprintf("overrode the lock on %s held by %s (%s) with --force", o.Directory, orDash(o.LockedBy), orDash(o.Reason)))
		journal(s, meta.EventLockReleased, o, "forced")
	}
	for _, l := range ls {
		journal(s, meta.EventLockAcquired, l, "")
	}
	return warnings, nil
}

func relation(dir, other string) string {
	if within(dir, other) {
		return "inside"
	}
	return "a parent of"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Release removes the locks match selects and returns them.
func Release(s *meta.Store, match func(Lock) bool) ([]Lock, error) {
	var removed []Lock
	_, err := update(s, func(f *Locks) (bool, error) {
		kept := f.Locks[:0]
		for _, l := range f.Locks {
			if match(l) {
				removed = append(removed, l)
				continue
			}
			kept = append(kept, l)
		}
		f.Locks = kept
		return len(removed) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	for _, l := range removed {
		journal(s, meta.EventLockReleased, l, "")
	}
	return removed, nil
}

// ReleaseLaunch removes the auto-lock of one launch (a no-op if it is gone).
func ReleaseLaunch(s *meta.Store, launchID string) error {
	if launchID == "" {
		return nil
	}
	_, err := Release(s, func(l Lock) bool { return l.Type == Auto && l.LaunchID == launchID })
	return err
}

// SetOwner hands a launch's auto-lock to a new owner process (the supervisor, then
// the agent itself), and records the session id once it is known. It reports
// whether the lock was still there.
func SetOwner(s *meta.Store, launchID string, pid int, start uint64, bootID, sessionID string) (bool, error) {
	found := false
	_, err := update(s, func(f *Locks) (bool, error) {
		for i := range f.Locks {
			l := &f.Locks[i]
			if l.Type == Auto && l.LaunchID == launchID {
				found = true
				l.PID, l.PIDStart, l.BootID = pid, start, bootID
				if sessionID != "" {
					l.SessionID = sessionID
				}
			}
		}
		return found, nil
	})
	return found, err
}

// List returns the live locks, dropping dead and expired ones from the file.
func List(s *meta.Store) ([]Lock, error) {
	var out []Lock
	cur, tooLarge, err := read(s)
	if err != nil {
		return nil, err
	}
	now := s.Time()
	stale := tooLarge // the write below moves it aside
	for _, l := range cur {
		if !live(s, l, now) {
			stale = true
			break
		}
	}
	if !stale {
		return cur, nil
	}
	_, err = update(s, func(f *Locks) (bool, error) {
		out = append([]Lock(nil), f.Locks...)
		return false, nil
	})
	return out, err
}

// Read returns locks.json as it is, without locking or pruning. A file over
// MaxFileBytes is not read: a warning, and no locks.
func Read(s *meta.Store) ([]Lock, error) {
	ls, _, err := read(s)
	return ls, err
}

func read(s *meta.Store) (ls []Lock, tooLarge bool, err error) {
	var f Locks
	if err := s.Read(File, &f); err != nil {
		var te *meta.TooLargeError
		if !errors.As(err, &te) {
			return nil, false, err
		}
		if s.Warn != nil {
			s.Warn("%v: locks in it are not seen; the next lock change moves it aside", err)
		}
		return nil, true, nil
	}
	return f.Locks, false, nil
}

// NotLockedError: unlock of a directory without a lock.
type NotLockedError struct{ Dir string }

func (e *NotLockedError) Error() string {
	return fmt.Sprintf("%s is not locked (see agentctl locks)", e.Dir)
}

// AutoLockError: unlock of a launch's auto-lock without --force.
type AutoLockError struct{ Lock Lock }

func (e *AutoLockError) Error() string {
	return fmt.Sprintf("%s is auto-locked by a running launch (%s, pid %d); stop the session, or use --force", e.Lock.Directory, orDash(e.Lock.Reason), e.Lock.PID)
}

// Unlock removes the lock on dir: a manual one always, an auto one only with force.
func Unlock(s *meta.Store, dir string, force bool) (Lock, error) {
	var removed *Lock
	_, err := update(s, func(f *Locks) (bool, error) {
		for i, l := range f.Locks {
			if l.Directory != dir {
				continue
			}
			if l.Type == Auto && !force {
				return false, &AutoLockError{l}
			}
			removed = &l
			f.Locks = append(f.Locks[:i], f.Locks[i+1:]...)
			return true, nil
		}
		return false, &NotLockedError{dir}
	})
	if err != nil {
		return Lock{}, err
	}
	journal(s, meta.EventLockReleased, *removed, "")
	return *removed, nil
}

func journal(s *meta.Store, typ string, l Lock, why string) {
	ev := meta.Event{Type: typ, Directory: l.Directory, SessionID: l.SessionID, LaunchID: l.LaunchID,
		Data: map[string]any{"type": l.Type, "locked_by": l.LockedBy}}
	if l.Reason != "" {
		ev.Data["reason"] = l.Reason
	}
	if why != "" {
		ev.Data["why"] = why
	}
	if err := s.AppendEvent(ev); err != nil && s.Warn != nil {
		s.Warn("events journal: %v", err)
	}
}
