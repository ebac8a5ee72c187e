package codex

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
)

// Holders reports which of the given thread-writer lock files are locked right
// now, and by which PID (0: locked, holder not visible, e.g. another PID
// namespace). A file missing from the map is not locked. ErrLocksUnavailable (or
// any error) means locks cannot be checked on this system: liveness from locks is
// then unknown, never "dead".
type Holders func(ctx context.Context, lockFiles []string) (map[string]int, error)

// ErrLocksUnavailable: no /proc/locks, no lsof.
var ErrLocksUnavailable = errors.New("file locks cannot be inspected on this system")

// OpenFiles lists the paths a process has open (Linux: /proc/<pid>/fd). It is the
// fallback liveness check when the lock directory does not exist (older Codex).
type OpenFiles func(pid int) ([]string, error)

// fileKey identifies a file the way /proc/locks does: device major, minor, inode.
type fileKey struct {
	major, minor uint32
	ino          uint64
}

// parseProcLocks parses Linux /proc/locks:
//
//	1: FLOCK  ADVISORY  WRITE 14774 fe:00:10085062 0 EOF
//	1: -> FLOCK  ADVISORY  WRITE 14775 fe:00:10085062 0 EOF
//
// index, class, mode, access, holder PID, MAJOR:MINOR:INODE (hex, hex, decimal),
// range. Lines with "->" are blocked waiters, not holders. OFD locks report PID -1
// and locks held in another PID namespace PID 0; both still mean "held" (PID 0).
func parseProcLocks(r io.Reader) map[fileKey]int {
	out := map[fileKey]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		f = f[1:]
		if f[0] == "->" {
			continue
		}
		// class mode access pid dev:ino start end
		if len(f) < 5 {
			continue
		}
		pid, err := strconv.Atoi(f[3])
		if err != nil {
			continue
		}
		if pid < 0 {
			pid = 0
		}
		k, ok := parseDevIno(f[4])
		if !ok {
			continue
		}
		if cur, seen := out[k]; seen && cur > 0 {
			continue // keep the first visible holder
		}
		out[k] = pid
	}
	return out
}

func parseDevIno(s string) (fileKey, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return fileKey{}, false
	}
	maj, err1 := strconv.ParseUint(parts[0], 16, 32)
	min, err2 := strconv.ParseUint(parts[1], 16, 32)
	ino, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return fileKey{}, false
	}
	return fileKey{uint32(maj), uint32(min), ino}, true
}

// parseLsof parses `lsof -F pn` output: "p<pid>" starts a process, "n<path>"
// names one of its files.
func parseLsof(out []byte, want map[string]bool) map[string]int {
	res := map[string]int{}
	pid := 0
	for _, line := range bytes.Split(out, []byte("\n")) {
		if len(line) < 2 {
			continue
		}
		switch line[0] {
		case 'p':
			pid, _ = strconv.Atoi(string(line[1:]))
		case 'n':
			p := string(line[1:])
			if want[p] {
				if _, ok := res[p]; !ok {
					res[p] = pid
				}
			}
		}
	}
	return res
}
