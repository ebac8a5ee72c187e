//go:build !linux

package index

import "os"

// StatPath stats path (following symlinks) into a Stamp. regular is false for
// directories, devices and the like.
func StatPath(path string) (s Stamp, regular bool, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Stamp{}, false, err
	}
	return StampOf(fi), fi.Mode().IsRegular(), nil
}
