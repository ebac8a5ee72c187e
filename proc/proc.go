// Package proc is the process table: one snapshot per command, shared by every
// adapter. A PID means nothing on its own; together with its start time (and the
// boot id) it identifies one process, which is how agentctl tells a live agent from
// a recycled PID.
package proc

import (
	"sort"
	"sync"
	"time"
)

// Process is one row of the table. Argv, Cwd and Exe are read lazily through the
// Table because most commands never need them for most processes.
type Process struct {
	PID        int
	PPID       int
	PGID       int
	SID        int
	Comm       string
	StartTicks uint64 // Linux: field 22 of /proc/<pid>/stat; macOS: start time in µs
}

// Table is a snapshot of the processes alive when it was taken. As a Source, it
// answers from the snapshot.
type Table interface {
	Source
	// Get returns the process with this PID, if it was alive at snapshot time.
	Get(pid int) (Process, bool)
	// All returns every process, ordered by PID.
	All() []Process
	// Argv, Cwd, Exe and Environ read details on demand; errors mean the process is
	// gone or not readable (EPERM, hidepid).
	Argv(pid int) ([]string, error)
	Cwd(pid int) (string, error)
	Exe(pid int) (string, error)
	Environ(pid int) ([]string, error)
	// StartTime is when the process started, on the wall clock (Linux: btime +
	// field 22 / CLK_TCK, so up to 1 s early, never late). Use StartTicks to
	// identify a process; this is for comparing with times agents record.
	StartTime(pid int) (time.Time, bool)
	// BootID (from Source) identifies this boot; "" when the platform has none.
	// Available (from Source) is false when there is no process information at
	// all (no /proc): evidence that depends on it becomes unknown, never a guess.
}

// Descendants returns every descendant process of pid (depth first).
func Descendants(t Table, pid int) []Process {
	kids := map[int][]Process{}
	for _, p := range t.All() {
		kids[p.PPID] = append(kids[p.PPID], p)
	}
	var out []Process
	var walk func(int)
	walk = func(p int) {
		for _, c := range kids[p] {
			if c.PID == p {
				continue
			}
			out = append(out, c)
			walk(c.PID)
		}
	}
	walk(pid)
	return out
}

// Fake is an in-memory Table for tests.
type Fake struct {
	Procs   []Process
	Args    map[int][]string
	Cwds    map[int]string
	Exes    map[int]string
	Envs    map[int][]string
	Starts  map[int]time.Time
	Boot    string
	NoProcs bool // simulate a platform without process information
}

func (f *Fake) Get(pid int) (Process, bool) {
	for _, p := range f.Procs {
		if p.PID == pid {
			return p, true
		}
	}
	return Process{}, false
}

// Find answers from the fake table only: a test never probes the real machine.
func (f *Fake) Find(pid int) (Process, error) {
	if p, ok := f.Get(pid); ok {
		return p, nil
	}
	return Process{}, ErrGone
}

func (f *Fake) All() []Process {
	out := append([]Process(nil), f.Procs...)
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

func (f *Fake) Argv(pid int) ([]string, error) {
	if a, ok := f.Args[pid]; ok {
		return a, nil
	}
	return nil, ErrGone
}

func (f *Fake) Cwd(pid int) (string, error) {
	if c, ok := f.Cwds[pid]; ok {
		return c, nil
	}
	return "", ErrGone
}

func (f *Fake) Exe(pid int) (string, error) {
	if e, ok := f.Exes[pid]; ok {
		return e, nil
	}
	return "", ErrGone
}

func (f *Fake) Environ(pid int) ([]string, error) {
	if e, ok := f.Envs[pid]; ok {
		return e, nil
	}
	return nil, ErrGone
}

func (f *Fake) StartTime(pid int) (time.Time, bool) {
	t, ok := f.Starts[pid]
	return t, ok
}

func (f *Fake) BootID() string  { return f.Boot }
func (f *Fake) Available() bool { return !f.NoProcs }

// memo caches lazily read details of a real snapshot.
type memo struct {
	mu   sync.Mutex
	argv map[int][]string
	cwd  map[int]string
	exe  map[int]string
}

func (m *memo) getArgv(pid int, read func() ([]string, error)) ([]string, error) {
	m.mu.Lock()
	if a, ok := m.argv[pid]; ok {
		m.mu.Unlock()
		return a, nil
	}
	m.mu.Unlock()
	a, err := read()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.argv == nil {
		m.argv = map[int][]string{}
	}
	m.argv[pid] = a
	m.mu.Unlock()
	return a, nil
}

func (m *memo) getString(cache *map[int]string, pid int, read func() (string, error)) (string, error) {
	m.mu.Lock()
	if s, ok := (*cache)[pid]; ok {
		m.mu.Unlock()
		return s, nil
	}
	m.mu.Unlock()
	s, err := read()
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	if *cache == nil {
		*cache = map[int]string{}
	}
	(*cache)[pid] = s
	m.mu.Unlock()
	return s, nil
}
