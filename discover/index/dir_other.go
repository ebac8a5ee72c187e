//go:build !linux

package index

import (
	"os"
	"path/filepath"
)

func openDir(path string) (*os.File, error) { return os.Open(path) }

// Stat is StatPath for an entry of d.
func (d *Dir) Stat(name string) (Stamp, bool, error) {
	return StatPath(filepath.Join(d.path, name))
}
