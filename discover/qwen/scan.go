package qwen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// indexVersion: bump when the meaning of summary changes.
const indexVersion = 1

// indexed is a summary with where its parse stopped (the parse index payload).
type indexed struct {
	Sum summary
	Off int64
}

// summarise brings each file's summary up to date through the parse index:
// a fresh entry is used as is, a grown file is parsed from where its entry
// stopped (after checking the bytes before it are unchanged), anything else
// from the start. The index is a cache: without it the result is the same.
// point: only these few files are read (a lookup), so the index is loaded
// by bucket and not pruned.
func summarise(ctx context.Context, env *discover.Env, files []chatFile, point bool) ([]*summary, error) {
	var ix *index.Index[indexed]
	if point {
		ix = index.LoadPoint[indexed](env.CacheDir(), Name, indexVersion)
	} else {
		ix = index.Load[indexed](env.CacheDir(), Name, indexVersion)
	}
	defer ix.Close()
	out := make([]*summary, len(files))
	errs := make([]error, len(files))
	discover.ParallelWith(ctx, len(files), func(i int, buf *jsonl.Buffer) {
		out[i], errs[i] = update(ix, files[i].Path, buf)
	})
	if err := ctx.Err(); err != nil {
		_ = ix.Save() // keep what was parsed; the next run continues from it
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // gone since it was listed
				env.Warnf("qwen: %v", err)
			}
			out[i] = nil
		}
	}
	if !point {
		ix.PruneUnseen("")
	}
	if err := ix.Save(); err != nil {
		env.Warnf("%v", err)
	}
	return out, nil
}

// update parses what the index does not cover of one file: one streaming read
// of the appended bytes, memory bounded by the longest line.
func update(ix *index.Index[indexed], path string, buf *jsonl.Buffer) (*summary, error) {
	f, err := agentfs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	stamp := index.StampOf(st)
	var cur indexed
	if e, ok := ix.Get(path); ok {
		switch e.Plan(stamp) {
		case index.Fresh:
			s := e.Payload.Sum.clone()
			return &s, nil
		case index.Append:
			if c, err := index.PrefixSum(f, e.Offset); err == nil && c == e.Check && e.Offset == e.Payload.Off {
				cur = indexed{Sum: e.Payload.Sum.clone(), Off: e.Offset}
			}
		}
	}
	if _, err := f.Seek(cur.Off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	s := &cur.Sum
	next, _, err := buf.Read(io.LimitReader(f, stamp.Size-cur.Off), cur.Off, func(line []byte, _ int64) error {
		s.feed(line)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	cur.Off = next
	if c, err := index.PrefixSum(f, next); err == nil {
		ix.Put(path, index.Entry[indexed]{Stamp: stamp, Offset: next, Check: c, Payload: indexed{Sum: s.clone(), Off: next}})
	}
	return s, nil
}
