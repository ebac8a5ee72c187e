package index

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openDir opens a directory with one system call: os.Open would also try to
// register it with the poller (and undo that), several calls per directory.
func openDir(path string) (*os.File, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		switch err {
		case nil:
			return os.NewFile(uintptr(fd), path), nil
		case unix.EINTR:
			continue
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
}

// Stat is StatPath for an entry of d (following symlinks), relative to d's
// descriptor.
func (d *Dir) Stat(name string) (s Stamp, regular bool, err error) {
	var st unix.Stat_t
	for {
		err = unix.Fstatat(int(d.f.Fd()), name, &st, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return Stamp{}, false, &fs.PathError{Op: "stat", Path: d.path + "/" + name, Err: err}
	}
	sec, nsec := st.Mtim.Unix()
	return Stamp{Dev: st.Dev, Ino: st.Ino, Size: st.Size, MtimeNs: sec*1e9 + nsec}, st.Mode&unix.S_IFMT == unix.S_IFREG, nil
}
