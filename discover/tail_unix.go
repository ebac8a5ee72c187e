//go:build unix

package discover

import (
	"errors"
	"math"
	"os"
	"syscall"
)

func mapFile(f *os.File, size int64) ([]byte, error) {
	if size > math.MaxInt {
		return nil, errors.New("file too large to map")
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmapFile(b []byte) error { return syscall.Munmap(b) }
