//go:build !linux

package index

import "os"

func eachName(path string, fn func(name []byte, kind EntryKind)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	for _, e := range ents {
		fn([]byte(e.Name()), kindOf(e.Type()))
	}
	return err
}
