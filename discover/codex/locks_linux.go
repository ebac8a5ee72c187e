package codex

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentctl/agentctl/discover/index"
	"golang.org/x/sys/unix"
)

// ProcLocks returns Holders reading a /proc/locks-format file at path (tests pass a
// recorded or synthetic one). Each lock file is matched by the device and inode
// its stat reports.
func ProcLocks(path string) Holders {
	return procLocks(func() ([]byte, error) { return os.ReadFile(path) })
}

// procLocksReads is how many times a /proc/locks longer than one read is read.
// The kernel hands /proc/locks out one page per read call and walks its lock
// list afresh for each by position, so a lock released between two calls
// shifts the rest and one line can be skipped: on a busy machine (SQLite's
// and agentctl's own locks come and go) a held thread lock went missing and
// its live Codex showed failed. Each read can only miss lines, never invent
// them, so the union of a few is what was held.
const procLocksReads = 3

// statAtMost is how many lock files are stat'ed rather than their folder
// listed for inodes.
const statAtMost = 8

// procLocks is ProcLocks over a reader of the listing.
func procLocks(read func() ([]byte, error)) Holders {
	return func(ctx context.Context, files []string) (map[string]int, error) {
		b, err := read()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrLocksUnavailable, err)
		}
		locks := parseProcLocks(bytes.NewReader(b))
		for i := 1; i < procLocksReads && len(b) >= os.Getpagesize()-1; i++ {
			if b, err = read(); err != nil {
				break
			}
			for k, pid := range parseProcLocks(bytes.NewReader(b)) {
				if cur, seen := locks[k]; !seen || cur <= 0 {
					locks[k] = pid
				}
			}
		}
		out := map[string]int{}
		if len(locks) == 0 {
			return out, nil
		}
		// A long history leaves hundreds of stale lock files: only those whose
		// inode some lock is on (the listing says each entry's inode) are
		// stat'ed for their device. A lookup's few files are stat'ed: listing
		// their folder would read every stale lock's name.
		locked := make(map[uint64]bool, len(locks))
		for k := range locks {
			locked[k.ino] = true
		}
		listed := map[string]map[string]uint64{}
		for _, f := range files {
			dir, name := filepath.Split(f)
			inos, ok := listed[dir]
			if !ok && len(files) > statAtMost {
				inos, _ = dirInodes(dir) // unreadable: every file is stat'ed
				listed[dir] = inos
			}
			if ino, ok := inos[name]; ok && !locked[ino] {
				continue
			}
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

// dirInodes returns the inode number of each entry of dir, from the listing
// alone (struct linux_dirent64: ino, off, reclen, type, name).
func dirInodes(dir string) (map[string]uint64, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	out := map[string]uint64{}
	err = index.EachDirent(fd, make([]byte, 32<<10), func(ino uint64, _ uint8, name []byte) {
		out[string(name)] = ino
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
