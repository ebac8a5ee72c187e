package index

import "io/fs"

// Stamp identifies one version of a file cheaply, from a stat call: the file
// (device and inode) and how far it has been written (size and mtime). Equal
// stamps mean "nothing changed since we parsed it"; a changed inode means the file
// was replaced, so everything parsed from the old one is void.
type Stamp struct {
	Dev, Ino uint64
	Size     int64
	MtimeNs  int64
}

// StampOf builds the stamp of a stat result.
func StampOf(fi fs.FileInfo) Stamp {
	dev, ino := fileID(fi)
	return Stamp{Dev: dev, Ino: ino, Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
}

// SameFile reports whether two stamps are of the same file (not necessarily the
// same content).
func (s Stamp) SameFile(o Stamp) bool { return s.Dev == o.Dev && s.Ino == o.Ino }
