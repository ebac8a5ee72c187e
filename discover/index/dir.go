package index

import "os"

// Dir is an open directory whose entries can be stat'ed without resolving the
// directory's path again for each (listings stat every transcript of every
// project directory on every run).
type Dir struct {
	path string
	f    *os.File
}

// OpenDir opens a directory for Names and Stat.
func OpenDir(path string) (*Dir, error) {
	f, err := openDir(path)
	if err != nil {
		return nil, err
	}
	return &Dir{path: path, f: f}, nil
}

// Names lists the directory's entries, unsorted.
func (d *Dir) Names() ([]string, error) { return d.f.Readdirnames(-1) }

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }
