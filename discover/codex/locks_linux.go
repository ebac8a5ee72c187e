package codex

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ProcLocks returns Holders reading a /proc/locks-format file at path (tests pass a
// recorded or synthetic one). Each lock file is matched by the device and inode
// its stat reports.
func ProcLocks(path string) Holders {
	return func(ctx context.Context, files []string) (map[string]int, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrLocksUnavailable, err)
		}
		locks := parseProcLocks(bytes.NewReader(b))
		out := map[string]int{}
		if len(locks) == 0 {
			return out, nil
		}
		for _, f := range files {
			var st unix.Stat_t
			if err := unix.Stat(f, &st); err != nil {
				continue
			}
			k := fileKey{unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), uint64(st.Ino)}
			if pid, ok := locks[k]; ok {
				out[f] = pid
			}
		}
		return out, nil
	}
}

func defaultHolders() Holders { return ProcLocks("/proc/locks") }

// procOpenFiles reads /proc/<pid>/fd (same-user processes only).
func procOpenFiles(pid int) ([]string, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		if p, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func defaultOpenFiles() OpenFiles { return procOpenFiles }
