//go:build !linux

package opencode

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
)

// ldir is a directory of the legacy tree (by path on this platform).
type ldir struct{ p string }

func (d ldir) path() string { return d.p }

func openDir(path string) (ldir, error) {
	st, err := os.Stat(path)
	if err != nil {
		return ldir{}, err
	}
	if !st.IsDir() {
		return ldir{}, &os.PathError{Op: "open", Path: path, Err: os.ErrInvalid}
	}
	return ldir{p: path}, nil
}

func openDirAt(d ldir, name string) (ldir, error) { return openDir(filepath.Join(d.p, name)) }

func (d ldir) close() {}

func (d ldir) stamp() index.Stamp { return stampOf(d.p) }

func (r *lreader) list(d ldir) int {
	r.names, r.spans = r.names[:0], r.spans[:0]
	_ = index.EachName(d.p, func(b []byte, kind index.EntryKind) {
		if kind != index.KindDir && bytes.HasSuffix(b, []byte(".json")) {
			r.addName(b)
		}
	})
	return r.sortNames()
}

func (r *lreader) read(d ldir, i int) ([]byte, agentfs.FileID, error) {
	return agentfs.ReadFileID(filepath.Join(d.p, string(r.name(i))))
}

func (r *lreader) readName(d ldir, name string) ([]byte, agentfs.FileID, error) {
	return agentfs.ReadFileID(filepath.Join(d.p, name))
}

func rootDir(path string) ldir { return ldir{p: path} }
