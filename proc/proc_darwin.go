package proc

import (
	"sort"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// On macOS there is no /proc; gopsutil reads the kernel's sysctl/libproc data.
// StartTicks holds the creation time in milliseconds since the epoch, which is
// what the kernel reports and stable for the life of the process.
type darwinTable struct {
	procs []Process
	byPID map[int]int
	memo
}

func Snapshot() Table {
	t := &darwinTable{byPID: map[int]int{}}
	ps, err := process.Processes()
	if err != nil {
		return t
	}
	for _, p := range ps {
		if q, err := fromGopsutil(p); err == nil {
			t.procs = append(t.procs, q)
		}
	}
	sort.Slice(t.procs, func(i, j int) bool { return t.procs[i].PID < t.procs[j].PID })
	for i, p := range t.procs {
		t.byPID[p.PID] = i
	}
	return t
}

func fromGopsutil(p *process.Process) (Process, error) {
	ct, err := p.CreateTime()
	if err != nil {
		return Process{}, err
	}
	ppid, _ := p.Ppid()
	name, _ := p.Name()
	return Process{PID: int(p.Pid), PPID: int(ppid), PGID: int(p.Pid), Comm: name, StartTicks: uint64(ct)}, nil
}

func Lookup(pid int) (Process, error) {
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		return Process{}, ErrGone
	}
	return fromGopsutil(p)
}

func CurrentBootID() string { return "" }

func (t *darwinTable) Get(pid int) (Process, bool) {
	i, ok := t.byPID[pid]
	if !ok {
		return Process{}, false
	}
	return t.procs[i], true
}

// Find answers from the snapshot; a PID not in it may still be a process this
// user may not see (hidepid), which counts as alive.
func (t *darwinTable) Find(pid int) (Process, error) {
	if p, ok := t.Get(pid); ok {
		return p, nil
	}
	return Process{}, probe(pid)
}

func (t *darwinTable) All() []Process  { return t.procs }
func (t *darwinTable) BootID() string  { return "" }
func (t *darwinTable) Available() bool { return len(t.procs) > 0 }

func (t *darwinTable) Argv(pid int) ([]string, error) {
	return t.getArgv(pid, func() ([]string, error) {
		p, err := process.NewProcess(int32(pid))
		if err != nil {
			return nil, ErrGone
		}
		return p.CmdlineSlice()
	})
}

func (t *darwinTable) Cwd(pid int) (string, error) {
	return t.getString(&t.cwd, pid, func() (string, error) {
		p, err := process.NewProcess(int32(pid))
		if err != nil {
			return "", ErrGone
		}
		return p.Cwd()
	})
}

func (t *darwinTable) Exe(pid int) (string, error) {
	return t.getString(&t.exe, pid, func() (string, error) {
		p, err := process.NewProcess(int32(pid))
		if err != nil {
			return "", ErrGone
		}
		return p.Exe()
	})
}

func (t *darwinTable) Environ(pid int) ([]string, error) {
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		return nil, ErrGone
	}
	return p.Environ()
}

// StartTime: the table's StartTicks already is the creation time in ms.
func (t *darwinTable) StartTime(pid int) (time.Time, bool) {
	p, ok := t.Get(pid)
	if !ok || p.StartTicks == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(p.StartTicks)).UTC(), true
}
