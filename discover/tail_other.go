//go:build !unix

package discover

import (
	"errors"
	"os"
)

func mapFile(*os.File, int64) ([]byte, error) { return nil, errors.New("no mmap on this platform") }

func unmapFile([]byte) error { return nil }
