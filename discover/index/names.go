package index

import "io/fs"

// EntryKind is what a directory entry is, as a listing reports it (symbolic
// links are not followed).
type EntryKind uint8

const (
	KindOther EntryKind = iota
	KindFile
	KindDir
	KindSymlink
)

// EachName calls fn for every entry of the directory at path (not "." or ".."),
// in the order the file system returns them, with the name in a buffer reused
// for the next entry: fn copies what it keeps. A lookup among tens of thousands
// of names then allocates for the few it keeps, not for every name (os.ReadDir
// builds and sorts an entry per name).
func EachName(path string, fn func(name []byte, kind EntryKind)) error {
	return eachName(path, fn)
}

func kindOf(m fs.FileMode) EntryKind {
	switch {
	case m.IsRegular():
		return KindFile
	case m.IsDir():
		return KindDir
	case m&fs.ModeSymlink != 0:
		return KindSymlink
	}
	return KindOther
}
