package index

import (
	"io/fs"
	"unsafe"

	"golang.org/x/sys/unix"
)

func eachName(path string, fn func(name []byte, kind EntryKind)) error {
	f, err := openDir(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "getdents", Path: path, Err: err}
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
			typ := b[18]
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			if ino == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			var kind EntryKind
			switch typ {
			case unix.DT_REG:
				kind = KindFile
			case unix.DT_DIR:
				kind = KindDir
			case unix.DT_LNK:
				kind = KindSymlink
			case unix.DT_UNKNOWN:
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					switch st.Mode & unix.S_IFMT {
					case unix.S_IFREG:
						kind = KindFile
					case unix.S_IFDIR:
						kind = KindDir
					case unix.S_IFLNK:
						kind = KindSymlink
					}
				}
			}
			fn(name, kind)
		}
	}
}
