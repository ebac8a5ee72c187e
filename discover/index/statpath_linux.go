package index

import (
	"io/fs"
	"syscall"
)

// StatPath stats path (following symlinks) into a Stamp without allocating a
// FileInfo: listings stat every transcript on every run. regular is false for
// directories, devices and the like.
func StatPath(path string) (s Stamp, regular bool, err error) {
	var st syscall.Stat_t
	for {
		err = syscall.Stat(path, &st)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return Stamp{}, false, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	sec, nsec := st.Mtim.Unix()
	return Stamp{Dev: st.Dev, Ino: st.Ino, Size: st.Size, MtimeNs: sec*1e9 + nsec}, st.Mode&syscall.S_IFMT == syscall.S_IFREG, nil
}
