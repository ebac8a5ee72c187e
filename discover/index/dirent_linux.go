package index

import (
	"bytes"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EachDirent reads the directory open at fd with getdents64, buf as the
// buffer, and calls fn with every entry's inode, type (unix.DT_*) and name, a
// view of buf valid only during the call. "." and ".." are passed on too.
func EachDirent(fd int, buf []byte, fn func(ino uint64, typ uint8, name []byte)) error {
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name (NUL-terminated).
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
			if reclen < 19 || reclen > len(b) {
				break
			}
			ino := *(*uint64)(unsafe.Pointer(&b[0]))
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			fn(ino, b[18], name)
			b = b[reclen:]
		}
	}
}
