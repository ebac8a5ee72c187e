package opencode

import (
	"bytes"
	"io/fs"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
	"golang.org/x/sys/unix"
)

// ldir is an open directory of the legacy tree: base in parent (base "": the
// directory parent).
type ldir struct {
	fd           int
	parent, base string
}

// path is the directory's path.
func (d ldir) path() string {
	if d.base == "" {
		return d.parent
	}
	return filepath.Join(d.parent, d.base)
}

// pathOf is the path of d's entry name (a copy, where name is a view).
func (d ldir) pathOf(name string) string {
	return filepath.Join(d.path(), strings.Clone(name))
}

// openDir opens the directory at path.
func openDir(path string) (ldir, error) {
	return openDirAt(ldir{fd: unix.AT_FDCWD}, path)
}

// openDirAt opens the directory name of d (relative to its descriptor: no
// path walk from the root).
func openDirAt(d ldir, name string) (ldir, error) {
	for {
		fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		switch err {
		case nil:
			return ldir{fd: fd, parent: d.path(), base: name}, nil
		case unix.EINTR:
			continue
		}
		return ldir{fd: -1}, &fs.PathError{Op: "open", Path: d.pathOf(name), Err: err}
	}
}

func (d ldir) close() {
	if d.fd >= 0 {
		unix.Close(d.fd)
	}
}

// stamp is the directory's stamp (zero when it cannot be had).
func (d ldir) stamp() index.Stamp {
	var st unix.Stat_t
	if unix.Fstat(d.fd, &st) != nil {
		return index.Stamp{}
	}
	sec, nsec := st.Mtim.Unix()
	return index.Stamp{Dev: st.Dev, Ino: st.Ino, Size: st.Size, MtimeNs: sec*1e9 + nsec}
}

// list reads d's *.json names that are not directories, sorted, and returns
// how many (name(i) is the i-th).
func (r *lreader) list(d ldir) int {
	r.names, r.spans = r.names[:0], r.spans[:0]
	if r.dents == nil {
		r.dents = make([]byte, 16<<10)
	}
	// An error ends the listing where it got to, as the end does.
	_ = index.EachDirent(d.fd, r.dents, func(ino uint64, typ uint8, name []byte) {
		if ino == 0 || !bytes.HasSuffix(name, []byte(".json")) {
			return
		}
		switch typ {
		case unix.DT_DIR:
			return
		case unix.DT_UNKNOWN:
			var st unix.Stat_t
			if unix.Fstatat(d.fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				return
			}
		}
		r.addName(name)
	})
	return r.sortNames()
}

// read reads the i-th name of the last listing of d.
func (r *lreader) read(d ldir, i int) ([]byte, agentfs.FileID, error) {
	s := r.spans[i]
	return r.readZ(d, r.names[s[0]:s[1]+1])
}

// readName reads d's file name (a name, not a path).
func (r *lreader) readName(d ldir, name string) ([]byte, agentfs.FileID, error) {
	z := append(r.names[len(r.names):], name...) // past the listing's names: they stay valid
	z = append(z, 0)
	return r.readZ(d, z)
}

// readZ reads d's file name (NUL-terminated) whole into r.buf, with the
// identity of the very file read (fstat of the open descriptor), as
// agentfs.ReadFileID does: regular files only (a FIFO planted in the tree must
// not hang a listing), up to the size the stat promised.
func (r *lreader) readZ(d ldir, z []byte) ([]byte, agentfs.FileID, error) {
	name := unsafe.String(&z[0], len(z)-1) // a view: cloned where kept
	if agentfs.Hooked() {
		agentfs.Opened(d.path(), strings.Clone(name))
	}
	var fd int
	for {
		r1, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(d.fd), uintptr(unsafe.Pointer(&z[0])),
			uintptr(unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return nil, agentfs.FileID{}, &fs.PathError{Op: "open", Path: d.pathOf(name), Err: e}
		}
		fd = int(r1)
		break
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, agentfs.FileID{}, &fs.PathError{Op: "stat", Path: d.pathOf(name), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, agentfs.FileID{}, &fs.PathError{Op: "read", Path: d.pathOf(name), Err: fs.ErrInvalid}
	}
	sec, nsec := st.Mtim.Unix()
	id := agentfs.FileID{Dev: st.Dev, Ino: st.Ino, Size: st.Size, MtimeNs: sec*1e9 + nsec}
	// Grown for one large file, the buffer is not kept for the small ones after it.
	if int64(cap(r.buf)) < st.Size+1 || cap(r.buf) > 1<<20 && st.Size < 64<<10 {
		r.buf = make([]byte, 0, max(st.Size+1, 16<<10))
	}
	b := r.buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grew since the stat
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, agentfs.FileID{}, &fs.PathError{Op: "read", Path: d.pathOf(name), Err: err}
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
		if int64(len(b)) == st.Size {
			break // all the stat promised: bytes appended since belong to a later stamp
		}
	}
	r.buf = b[:0]
	return b, id, nil
}

// rootDir opens the directory at path for the files under it; when it cannot
// be opened, opening under it fails as for a missing entry.
func rootDir(path string) ldir {
	d, err := openDir(path)
	if err != nil {
		return ldir{fd: -1, parent: path}
	}
	return d
}
