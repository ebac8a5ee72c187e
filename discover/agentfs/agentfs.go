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
