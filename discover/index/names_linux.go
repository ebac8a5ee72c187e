package index

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

func eachName(path string, fn func(name []byte, kind EntryKind)) error {
	f, err := openDir(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	err = EachDirent(fd, make([]byte, 32<<10), func(ino uint64, typ uint8, name []byte) {
		if ino == 0 || string(name) == "." || string(name) == ".." {
			return
		}
		if typ == unix.DT_UNKNOWN {
			var st unix.Stat_t
			if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				typ = uint8(st.Mode & unix.S_IFMT >> 12) // IFTODT: the file type bits are the DT_ value
			}
		}
		var kind EntryKind
		switch typ {
		case unix.DT_REG:
			kind = KindFile
		case unix.DT_DIR:
			kind = KindDir
		case unix.DT_LNK:
			kind = KindSymlink
		}
		fn(name, kind)
	})
	if err != nil {
		return &fs.PathError{Op: "getdents", Path: path, Err: err}
	}
	return nil
}
