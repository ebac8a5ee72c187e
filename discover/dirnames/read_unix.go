//go:build unix

package dirnames

import (
	"os"
	"syscall"
)

// readCache maps the cache file instead of reading it: a lookup touches the
// pages of the listings it walks, without allocating, zeroing and copying
// the whole file first. The file is replaced by rename, never rewritten in
// place, so the mapping stays what was read; it lives as long as the process.
func readCache(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() == 0 || fi.Size() > 1<<30 {
		return os.ReadFile(path)
	}
	return syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
}
