// Package agentfs is how the read side opens the agents' files: os.Open and
// os.ReadFile with one test hook, so tests can count the files a command opens
// (a one-session command must open O(1) files per adapter, not one per session).
package agentfs

import (
	"os"
	"sync/atomic"
)

var hook atomic.Pointer[func(string)]

// SetHook makes fn see the path of every file opened through this package until
// restore is called (tests only; fn must be safe for concurrent use).
func SetHook(fn func(path string)) (restore func()) {
	old := hook.Swap(&fn)
	return func() { hook.Store(old) }
}

func opened(path string) {
	if fn := hook.Load(); fn != nil {
		(*fn)(path)
	}
}

// Open is os.Open.
func Open(path string) (*os.File, error) {
	opened(path)
	return os.Open(path)
}

// ReadFile is os.ReadFile.
func ReadFile(path string) ([]byte, error) {
	opened(path)
	return os.ReadFile(path)
}

var readHook atomic.Pointer[func(string, int)]

// SetReadHook makes fn see every read of agentctl's own parse index files done
// through ReadAt and ReadIndexFile, with the bytes read, until restore is called
// (tests only: a one-session command must read O(1) index bytes).
func SetReadHook(fn func(path string, n int)) (restore func()) {
	old := readHook.Swap(&fn)
	return func() { readHook.Store(old) }
}

func read(path string, n int) {
	if fn := readHook.Load(); fn != nil {
		(*fn)(path, n)
	}
}

// ReadAt is f.ReadAt, reported to the read hook under path.
func ReadAt(f *os.File, path string, b []byte, off int64) (int, error) {
	n, err := f.ReadAt(b, off)
	read(path, n)
	return n, err
}

// ReadIndexFile is os.ReadFile, reported to the read hook.
func ReadIndexFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	read(path, len(b))
	return b, err
}

// FileID is what ReadFileID reports of the file it read: the same fields as a
// parse index stamp (device, inode, size, modification time in ns).
type FileID struct {
	Dev, Ino uint64
	Size     int64
	MtimeNs  int64
}
