package locks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// FusesFile is the fuses file in the state dir (product.md §6). It goes through
// the same flock store as locks.json.
const FusesFile = "fuses.json"

// Fuse states. A fuse is armed until it expires; the process that fires it first
// moves it to firing under the flock, with its own PID + start time, runs the
// actions outside the lock, then removes it. A firing fuse whose owner died
// mid-action is armed again in effect: the next sweep claims and fires it.
const (
	FuseArmed  = "armed"
	FuseFiring = "firing"
)

// Fuse is one entry of fuses.json: a TTL timer on a directory with the actions
// to run when it expires.
type Fuse struct {
	// ID names this setting of the fuse: a `fuse set` that replaces it, or a
	// firer that finishes, touches only the fuse it saw.
	ID        string    `json:"id"`
	Directory string    `json:"directory"`
	Label     string    `json:"label,omitempty"`
	TTL       string    `json:"ttl"` // as set; `fuse extend` without --ttl reuses it
	SetAt     time.Time `json:"set_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Script    string    `json:"script,omitempty"`
	Webhook   string    `json:"webhook,omitempty"`
	// WebhookSecret signs the expiry webhook; taken from the config (or
	// AGENTCTL_WEBHOOK_SECRET) when the fuse is set, as launch records do.
	WebhookSecret string `json:"webhook_secret,omitempty"`
	Event         string `json:"event,omitempty"`
	State         string `json:"state"`
	// The process firing it (state firing).
	FiringPID   int        `json:"firing_pid,omitempty"`
	FiringStart uint64     `json:"firing_start,omitempty"`
	FiringBoot  string     `json:"firing_boot,omitempty"`
	FiringAt    *time.Time `json:"firing_at,omitempty"`
	// Attempts counts the claims: more than one means an earlier firer died.
	Attempts int `json:"attempts,omitempty"`
}

// Actions lists the fuse's on-expire actions, for display.
func (f Fuse) Actions() []string {
	var a []string
	if f.Script != "" {
		a = append(a, "script")
	}
	if f.Webhook != "" {
		a = append(a, "webhook")
	}
	if f.Event != "" {
		a = append(a, "event:"+f.Event)
	}
	return a
}

// Fuses is the content of fuses.json.
type Fuses struct {
	Schema int    `json:"schema"`
	Fuses  []Fuse `json:"fuses"`
}

// Owner is a process identified the only way a PID means anything: with its
// exact start time and boot.
type Owner struct {
	PID   int
	Start uint64
	Boot  string
}

// NoFuseError: extend or cancel of a directory without an armed fuse.
type NoFuseError struct{ Dir string }

func (e *NoFuseError) Error() string {
	return fmt.Sprintf("no fuse on %s (see agentctl fuses)", e.Dir)
}

// FiringError: extend or cancel of a fuse that already fires.
type FiringError struct{ Fuse Fuse }

func (e *FiringError) Error() string {
	return fmt.Sprintf("the fuse on %s expired and is firing (pid %d); its actions cannot be taken back", e.Fuse.Directory, e.Fuse.FiringPID)
}

func updateFuses(s *meta.Store, fn func(f *Fuses) (bool, error)) error {
	return meta.Update(s, FusesFile, func(f *Fuses) (bool, error) {
		changed, err := fn(f)
		if err != nil || !changed {
			return false, err
		}
		f.Schema = meta.Schema
		sort.SliceStable(f.Fuses, func(i, j int) bool { return f.Fuses[i].Directory < f.Fuses[j].Directory })
		return true, nil
	})
}

// ReadFuses returns fuses.json as it is, without locking.
func ReadFuses(s *meta.Store) ([]Fuse, error) {
	var f Fuses
	if err := s.Read(FusesFile, &f); err != nil {
		return nil, err
	}
	return f.Fuses, nil
}

func newFuseID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "f-" + hex.EncodeToString(b[:])
}

// SetFuse arms f on f.Directory (canonical), replacing any fuse there — even one
// that is firing: its firer finishes the old fuse's actions and leaves the new
// one alone. It returns the fuse it replaced, if any.
func SetFuse(s *meta.Store, f Fuse, ttl time.Duration) (set Fuse, replaced *Fuse, err error) {
	now := s.Time().UTC()
	f.ID = newFuseID()
	f.State = FuseArmed
	f.SetAt = now
	f.ExpiresAt = now.Add(ttl)
	f.TTL = ttl.String()
	f.FiringPID, f.FiringStart, f.FiringBoot, f.FiringAt, f.Attempts = 0, 0, "", nil, 0
	err = updateFuses(s, func(fs *Fuses) (bool, error) {
		kept := fs.Fuses[:0]
		for _, o := range fs.Fuses {
			if o.Directory == f.Directory {
				o := o
				replaced = &o
				continue
			}
			kept = append(kept, o)
		}
		fs.Fuses = append(kept, f)
		return true, nil
	})
	if err != nil {
		return Fuse{}, nil, err
	}
	journalFuse(s, meta.EventFuseSet, f, nil)
	return f, replaced, nil
}

// ExtendFuse moves the expiry of the armed fuse on dir to now + ttl (ttl 0: the
// fuse's own TTL again).
func ExtendFuse(s *meta.Store, dir string, ttl time.Duration) (Fuse, error) {
	var out Fuse
	err := updateFuses(s, func(fs *Fuses) (bool, error) {
		i := findFuse(fs.Fuses, dir)
		if i < 0 {
			return false, &NoFuseError{dir}
		}
		f := &fs.Fuses[i]
		if f.State == FuseFiring {
			return false, &FiringError{*f}
		}
		if ttl <= 0 {
			d, err := meta.ParseDuration(f.TTL)
			if err != nil || d <= 0 {
				return false, fmt.Errorf("the fuse on %s has no usable ttl (%q); pass --ttl", dir, f.TTL)
			}
			ttl = d
		}
		f.ExpiresAt = s.Time().UTC().Add(ttl)
		f.TTL = ttl.String()
		out = *f
		return true, nil
	})
	if err != nil {
		return Fuse{}, err
	}
	journalFuse(s, meta.EventFuseExtended, out, nil)
	return out, nil
}

// CancelFuse removes the armed fuse on dir.
func CancelFuse(s *meta.Store, dir string) (Fuse, error) {
	var out Fuse
	err := updateFuses(s, func(fs *Fuses) (bool, error) {
		i := findFuse(fs.Fuses, dir)
		if i < 0 {
			return false, &NoFuseError{dir}
		}
		if fs.Fuses[i].State == FuseFiring {
			return false, &FiringError{fs.Fuses[i]}
		}
		out = fs.Fuses[i]
		fs.Fuses = append(fs.Fuses[:i], fs.Fuses[i+1:]...)
		return true, nil
	})
	if err != nil {
		return Fuse{}, err
	}
	journalFuse(s, meta.EventFuseCancelled, out, nil)
	return out, nil
}

func findFuse(fs []Fuse, dir string) int {
	for i, f := range fs {
		if f.Directory == dir {
			return i
		}
	}
	return -1
}

// due reports whether this process may claim f now: an armed fuse whose time
// came, or (retry) a firing one whose firer is no longer alive.
func due(s *meta.Store, f Fuse, now time.Time, retry bool) bool {
	switch f.State {
	case FuseArmed, "":
		return !now.Before(f.ExpiresAt)
	case FuseFiring:
		return retry && !s.IsAlive(f.FiringPID, f.FiringStart, f.FiringBoot)
	}
	return false
}

// AnyDue reports, from one unlocked read, whether a fuse is due (with retry, also
// one whose firer died) or fuses.json is corrupt: whether FireDueFuses has work.
func AnyDue(s *meta.Store, retry bool) bool {
	cur, err := ReadFuses(s)
	var ce *meta.CorruptError
	if errors.As(err, &ce) {
		return true
	}
	now := s.Time()
	for _, f := range cur {
		if due(s, f, now, retry) {
			return true
		}
	}
	return false
}

// ClaimDueFuses moves every due fuse to firing, owned by owner, under the flock,
// and returns the claimed fuses: each is claimed by exactly one process. With
// retry (sweep) it also claims firing fuses whose firer died. The lock is taken
// only when the unlocked read shows something due, so the commands that call it
// on their way cost one read when nothing expired.
func ClaimDueFuses(s *meta.Store, owner Owner, retry bool) ([]Fuse, error) {
	cur, err := ReadFuses(s)
	var ce *meta.CorruptError
	corrupt := errors.As(err, &ce)
	if err != nil && !corrupt {
		return nil, err
	}
	now := s.Time()
	// A corrupt file goes through the locked path, which moves it aside with a
	// warning, rather than failing every command from now on.
	found := corrupt
	for _, f := range cur {
		if due(s, f, now, retry) {
			found = true
			break
		}
	}
	if !found {
		return nil, nil
	}
	var claimed []Fuse
	err = updateFuses(s, func(fs *Fuses) (bool, error) {
		now := s.Time().UTC()
		for i := range fs.Fuses {
			f := &fs.Fuses[i]
			if !due(s, *f, now, retry) {
				continue
			}
			f.State = FuseFiring
			f.FiringPID, f.FiringStart, f.FiringBoot = owner.PID, owner.Start, owner.Boot
			at := now
			f.FiringAt = &at
			f.Attempts++
			claimed = append(claimed, *f)
		}
		return len(claimed) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// FuseFired removes a fuse this owner fired, if it is still the one it claimed
// (not replaced by a new `fuse set`, not re-claimed after this owner was
// presumed dead).
func FuseFired(s *meta.Store, f Fuse, owner Owner) error {
	return updateFuses(s, func(fs *Fuses) (bool, error) {
		for i, o := range fs.Fuses {
			if o.ID == f.ID && o.State == FuseFiring && o.FiringPID == owner.PID && o.FiringStart == owner.Start {
				fs.Fuses = append(fs.Fuses[:i], fs.Fuses[i+1:]...)
				return true, nil
			}
		}
		return false, nil
	})
}

// Fired is one fuse a FireDueFuses call fired, with its actions' error.
type Fired struct {
	Fuse Fuse
	Err  error
}

// FireDueFuses fires every due fuse exactly once across all processes: claim
// under the flock (ClaimDueFuses), journal fuse.expired, run act outside every
// lock (a script may take minutes), then remove the fuse. A fuse whose actions
// failed is removed all the same — the failure is reported, and a failed webhook
// waits in the outbox — so a broken script does not fire again every minute.
func FireDueFuses(ctx context.Context, s *meta.Store, owner Owner, retry bool, act func(context.Context, Fuse) error) ([]Fired, error) {
	claimed, err := ClaimDueFuses(s, owner, retry)
	if err != nil {
		return nil, err
	}
	var out []Fired
	for _, f := range claimed {
		data := map[string]any{"expired_at": f.ExpiresAt.UTC().Format(time.RFC3339), "attempt": f.Attempts}
		journalFuse(s, meta.EventFuseExpired, f, data)
		aerr := act(ctx, f)
		if err := FuseFired(s, f, owner); err != nil {
			return out, err
		}
		out = append(out, Fired{f, aerr})
	}
	return out, nil
}

func journalFuse(s *meta.Store, typ string, f Fuse, extra map[string]any) {
	ev := meta.Event{Type: typ, Directory: f.Directory, Data: map[string]any{"fuse_id": f.ID}}
	if f.Label != "" {
		ev.Data["label"] = f.Label
	}
	if typ != meta.EventFuseExpired && typ != meta.EventFuseCancelled {
		ev.Data["expires_at"] = f.ExpiresAt.UTC().Format(time.RFC3339)
		ev.Data["ttl"] = f.TTL
	}
	if a := f.Actions(); len(a) > 0 {
		ev.Data["actions"] = a
	}
	for k, v := range extra {
		ev.Data[k] = v
	}
	if err := s.AppendEvent(ev); err != nil && s.Warn != nil {
		s.Warn("events journal: %v", err)
	}
}
