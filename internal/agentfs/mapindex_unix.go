//go:build unix

package agentfs

import (
	"io/fs"
	"math"

	"golang.org/x/sys/unix"
)

// MapIndexFile maps a parse index file read-only instead of reading it into the
// heap (mapped true), reported to the read hook like ReadIndexFile. A listing
// loads every adapter's index, megabytes each: in the heap those bytes were
// fresh pages the process had to fault in and the collector had to pace, while
// mapped they are the page cache's own pages. An empty file is returned as nil,
// not mapped. The caller must UnmapIndexFile the bytes once nothing refers to
// them, and must read them with faults turned into panics
// (debug.SetPanicOnFault): a file truncated in place faults on access. Index
// files are only ever replaced by rename (meta.WriteFileAtomic), so a mapping
// keeps the bytes it was made with.
func MapIndexFile(path string) (b []byte, mapped bool, err error) {
	var fd int
	for {
		// Non-blocking: a FIFO planted in the cache must not hang a command.
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, false, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	if st.Size <= 0 || st.Size > math.MaxInt32 {
		// Nothing to map, or more than any index holds: read it the plain way.
		b, err := ReadIndexFile(path)
		return b, false, err
	}
	b, err = unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		b, err := ReadIndexFile(path)
		return b, false, err
	}
	read(path, len(b))
	return b, true, nil
}

// UnmapIndexFile releases what MapIndexFile mapped.
func UnmapIndexFile(b []byte) { _ = unix.Munmap(b) }

// ReleaseIndexFile hands back the memory of the pages read so far of what
// MapIndexFile mapped: they stay in the page cache, and a later read of the
// mapping faults them back in from it. A command that has read every entry of
// an index no longer counts them in its resident memory while it goes on.
func ReleaseIndexFile(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_DONTNEED)
	}
}
