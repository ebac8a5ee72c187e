//go:build unix

package index

import (
	"io/fs"
	"syscall"
)

func fileID(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // int32 on darwin
	}
	return 0, 0
}
