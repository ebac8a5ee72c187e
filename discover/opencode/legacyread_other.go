//go:build !linux

package opencode

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/agentctl/agentctl/discover/agentfs"
	"github.com/agentctl/agentctl/discover/index"
)

// ldir is a directory of the legacy tree (by path on this platform).
type ldir struct{ path string }

func (r *lreader) openDir(path string) (ldir, error) {
	st, err := os.Stat(path)
	if err != nil {
		return ldir{}, err
	}
	if !st.IsDir() {
		return ldir{}, &os.PathError{Op: "open", Path: path, Err: os.ErrInvalid}
	}
	return ldir{path: path}, nil
}

func (d ldir) close() {}

func (d ldir) stamp() index.Stamp { return stampOf(d.path) }

func (r *lreader) list(d ldir) int {
	r.names, r.spans = r.names[:0], r.spans[:0]
	_ = index.EachName(d.path, func(b []byte, kind index.EntryKind) {
		if kind != index.KindDir && bytes.HasSuffix(b, []byte(".json")) {
			r.addName(b)
		}
	})
	return r.sortNames()
}

func (r *lreader) read(d ldir, i int) ([]byte, agentfs.FileID, error) {
	return agentfs.ReadFileID(filepath.Join(d.path, string(r.name(i))))
}

func (r *lreader) readName(d ldir, name string) ([]byte, agentfs.FileID, error) {
	return agentfs.ReadFileID(filepath.Join(d.path, name))
}

func (r *lreader) readPath(path string) ([]byte, agentfs.FileID, error) {
	return agentfs.ReadFileID(path)
}
