//go:build !unix

package index

import "io/fs"

// Without inode numbers the stamp falls back to size and mtime alone.
func fileID(fs.FileInfo) (dev, ino uint64) { return 0, 0 }
