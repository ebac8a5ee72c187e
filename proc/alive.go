package proc

import (
	"errors"
	"fmt"
	"syscall"
)

// ID names one process. A PID alone means nothing — PIDs are recycled — so every
// record agentctl keeps of a process (launch records, lock owners, supervisors,
// firing fuses) stores the start time and the boot beside it.
type ID struct {
	PID        int
	StartTicks uint64
	BootID     string // "" when the platform has none or it was not recorded
}

// Source answers liveness questions: a snapshot Table, or Live() for the
// machine as it is now.
type Source interface {
	// Find returns the process with this PID. ErrGone: there is none.
	// ErrDenied: one exists that this user may not inspect.
	Find(pid int) (Process, error)
	BootID() string
	Available() bool
}

// ErrDenied means a process exists but may not be inspected (EPERM, hidepid).
var ErrDenied = errors.New("process exists but may not be inspected")

// Verdict is the answer of Check.
type Verdict struct {
	// Alive: the process is alive. A process that exists but may not be inspected
	// counts as alive: declaring a live owner dead (dropping its lock, finalising
	// its launch) is the worse mistake.
	Alive bool
	// Verified: alive with exactly the recorded start time, on this boot. Only a
	// verified process may be signalled.
	Verified bool
	// Known is false when there is no process information at all; callers then
	// say "unknown", never "dead".
	Known   bool
	Process Process
	Detail  string // one line of evidence
}

// Check is agentctl's one liveness rule: a process is the one recorded when its
// PID is alive with exactly the recorded start time on the same boot; EPERM counts
// as alive; a PID from another boot, a recycled PID and a missing one are dead.
func Check(s Source, id ID) Verdict {
	if !s.Available() {
		return Verdict{Detail: "no process table"}
	}
	if id.PID <= 0 {
		return Verdict{Known: true, Detail: "no pid recorded"}
	}
	if id.BootID != "" {
		if cur := s.BootID(); cur != "" && cur != id.BootID {
			return Verdict{Known: true, Detail: fmt.Sprintf("pid %d is from another boot", id.PID)}
		}
	}
	p, err := s.Find(id.PID)
	switch {
	case errors.Is(err, ErrDenied):
		return Verdict{Alive: true, Known: true, Detail: fmt.Sprintf("pid %d exists but may not be inspected; counted alive", id.PID)}
	case err != nil:
		return Verdict{Known: true, Detail: fmt.Sprintf("pid %d is gone", id.PID)}
	case p.StartTicks != id.StartTicks:
		return Verdict{Known: true, Detail: fmt.Sprintf("pid %d was recycled (start %d, recorded %d)", id.PID, p.StartTicks, id.StartTicks)}
	}
	return Verdict{Alive: true, Verified: true, Known: true, Process: p,
		Detail: fmt.Sprintf("pid %d start_ticks=%d matches", id.PID, id.StartTicks)}
}

// Live is the machine now, bypassing any snapshot: stop re-verifies a PID with it
// immediately before every signal, and lock and record owners are checked with it.
func Live() Source { return live{} }

type live struct{}

func (live) Find(pid int) (Process, error) {
	p, err := Lookup(pid)
	if err == nil {
		return p, nil
	}
	return Process{}, probe(pid)
}

func (live) BootID() string  { return CurrentBootID() }
func (live) Available() bool { return true }

// probe tells a missing process from one we may not see: kill(pid, 0) answers
// EPERM for a process of another user even where /proc hides it.
func probe(pid int) error {
	if errors.Is(syscall.Kill(pid, 0), syscall.EPERM) {
		return ErrDenied
	}
	return ErrGone
}

// Starts is a Source of PIDs and their start ticks, for tests.
type Starts map[int]uint64

func (s Starts) Find(pid int) (Process, error) {
	if st, ok := s[pid]; ok {
		return Process{PID: pid, StartTicks: st}, nil
	}
	return Process{}, ErrGone
}
func (Starts) BootID() string  { return "" }
func (Starts) Available() bool { return true }

// Funcs is a Source made of functions, for tests that script the machine.
type Funcs struct {
	FindFunc func(pid int) (Process, error)
	Boot     func() string
}

func (f Funcs) Find(pid int) (Process, error) { return f.FindFunc(pid) }
func (f Funcs) Available() bool               { return true }
func (f Funcs) BootID() string {
	if f.Boot == nil {
		return ""
	}
	return f.Boot()
}
