//go:build unix

package agentfs

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

var errNotRegular = errors.New("not a regular file")

// ReadFileID is ReadFile that also returns the identity of the file it read,
// from the open descriptor (so it is the very file read, with no separate stat),
// and opens it with one system call: os.Open registers a file with the poller
// and undoes it, several calls per file, which a listing reading a hundred
// thousand small files pays for each. It reads regular files only: a FIFO or a
// device planted where an agent keeps JSON must not hang a listing.
func ReadFileID(path string) ([]byte, FileID, error) {
	opened(path)
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, FileID{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, FileID{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, FileID{}, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	sec, nsec := st.Mtim.Unix()
	id := FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size, MtimeNs: sec*1e9 + nsec} //nolint:unconvert // int32 on darwin
	b, err := ReadFD(fd, make([]byte, 0, st.Size+1), st.Size, path)
	if err != nil {
		return nil, FileID{}, err
	}
	return b, id, nil
}

// ReadFD reads the file open on fd, of size bytes when it was stat'ed, into
// b's storage from its start (a buffer to reuse), growing it if the file grew
// since; path names the file in errors. It
// stops at the end, or once it has read size bytes: a read more would only
// find the end, and bytes appended since belong to a later stamp than the
// stat's.
func ReadFD(fd int, b []byte, size int64, path string) ([]byte, error) {
	b = b[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grew since the stat
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
		if int64(len(b)) == size {
			return b, nil
		}
	}
}
