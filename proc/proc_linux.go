package proc

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type linuxTable struct {
	root  string
	procs []Process
	byPID map[int]int
	boot  string
	avail bool
	btime func() (int64, bool) // read once, on first use
	memo
}

// Snapshot reads /proc once. Without /proc it returns a table whose Available is
// false, so callers report unknown rather than "dead".
func Snapshot() Table { return snapshotAt("/proc") }

func snapshotAt(root string) *linuxTable {
	t := &linuxTable{root: root, byPID: map[int]int{}}
	t.btime = sync.OnceValues(func() (int64, bool) { return readBtime(root + "/stat") })
	entries, err := os.ReadDir(root)
	if err != nil {
		return t
	}
	if _, err := os.Stat(root + "/self/stat"); err != nil {
		return t
	}
	t.avail = true
	if b, err := os.ReadFile(root + "/sys/kernel/random/boot_id"); err == nil {
		t.boot = strings.TrimSpace(string(b))
	}
	buf := make([]byte, 0, 512)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		p, err := readStat(root, pid, buf)
		if err != nil {
			continue // exited while we were scanning
		}
		t.procs = append(t.procs, p)
	}
	sort.Slice(t.procs, func(i, j int) bool { return t.procs[i].PID < t.procs[j].PID })
	for i, p := range t.procs {
		t.byPID[p.PID] = i
	}
	return t
}

// Lookup reads one process now, bypassing any snapshot: stop uses it to re-verify a
// PID immediately before every signal.
func Lookup(pid int) (Process, error) { return readStat("/proc", pid, nil) }

// BootID returns the current boot id ("" if unknown).
func CurrentBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readStat(root string, pid int, buf []byte) (Process, error) {
	// Plain system calls: os.Open would also try (and fail) to register every
	// file with the poller, several more calls per process on every command.
	fd, err := openRetry(root + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Process{}, ErrGone
	}
	defer syscall.Close(fd)
	if cap(buf) < 512 {
		buf = make([]byte, 0, 512)
	}
	buf = buf[:cap(buf)]
	var n int
	for {
		n, err = syscall.Read(fd, buf)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil || n <= 0 {
		return Process{}, ErrGone
	}
	return parseStat(pid, buf[:n])
}

func openRetry(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// parseStat parses /proc/<pid>/stat. comm may contain spaces and parentheses, so
// the fields start after the LAST ')'.
func parseStat(pid int, b []byte) (Process, error) {
	open := bytes.IndexByte(b, '(')
	close := bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return Process{}, fmt.Errorf("malformed stat for pid %d", pid)
	}
	p := Process{PID: pid, Comm: string(b[open+1 : close])}
	fields := bytes.Fields(b[close+1:])
	// fields[0] is field 3 (state); field N is fields[N-3].
	if len(fields) < 20 {
		return Process{}, fmt.Errorf("short stat for pid %d", pid)
	}
	// A zombie (or a dying task) has exited; only its exit status is left for a
	// parent that may never reap it (an orphan's init need not). It is not alive.
	if st := string(fields[0]); st == "Z" || st == "X" || st == "x" {
		return Process{}, ErrGone
	}
	atoi := func(i int) int { v, _ := strconv.Atoi(string(fields[i])); return v }
	p.PPID = atoi(1)
	p.PGID = atoi(2)
	p.SID = atoi(3)
	p.StartTicks, _ = strconv.ParseUint(string(fields[19]), 10, 64)
	return p, nil
}

func (t *linuxTable) Get(pid int) (Process, bool) {
	i, ok := t.byPID[pid]
	if !ok {
		return Process{}, false
	}
	return t.procs[i], true
}

// Find answers from the snapshot; a PID not in it may still be a process this
// user may not see (hidepid), which counts as alive.
func (t *linuxTable) Find(pid int) (Process, error) {
	if p, ok := t.Get(pid); ok {
		return p, nil
	}
	return Process{}, probe(pid)
}

func (t *linuxTable) All() []Process  { return t.procs }
func (t *linuxTable) BootID() string  { return t.boot }
func (t *linuxTable) Available() bool { return t.avail }

func (t *linuxTable) Argv(pid int) ([]string, error) {
	return t.getArgv(pid, func() ([]string, error) {
		b, err := os.ReadFile(fmt.Sprintf("%s/%d/cmdline", t.root, pid))
		if err != nil {
			return nil, err
		}
		b = bytes.TrimRight(b, "\x00")
		if len(b) == 0 {
			return []string{}, nil
		}
		return strings.Split(string(b), "\x00"), nil
	})
}

func (t *linuxTable) Cwd(pid int) (string, error) {
	return t.getString(&t.cwd, pid, func() (string, error) {
		return os.Readlink(fmt.Sprintf("%s/%d/cwd", t.root, pid))
	})
}

func (t *linuxTable) Exe(pid int) (string, error) {
	return t.getString(&t.exe, pid, func() (string, error) {
		return os.Readlink(fmt.Sprintf("%s/%d/exe", t.root, pid))
	})
}

func (t *linuxTable) Environ(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/environ", t.root, pid))
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil, nil
	}
	return strings.Split(string(b), "\x00"), nil
}

// clkTck is USER_HZ, the unit of field 22; 100 on every Linux architecture
// agentctl builds for.
const clkTck = 100

func (t *linuxTable) StartTime(pid int) (time.Time, bool) {
	p, ok := t.Get(pid)
	if !ok {
		return time.Time{}, false
	}
	bt, ok := t.btime()
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(bt*1000 + int64(p.StartTicks)*1000/clkTck).UTC(), true
}

// readBtime reads the boot time (epoch seconds) from /proc/stat.
func readBtime(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
