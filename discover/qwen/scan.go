package qwen

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// indexVersion: bump when the meaning of summary changes.
const indexVersion = 2 // 2: the binary format (codec.go)

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
//
// A listing spends budget (docs/reading-limits.md): files are read those must
// names first (the sessions that may be alive, read whole whatever the
// budget), then the newest; past the give-up point the others are left out
// unless their entry is fresh, and so is one whose read the budget cut (its entry keeps where the read
// stopped: the next run continues from there). late names the files left
// out. A lookup passes the zero Budget: it never leaves out a file.
func summarise(ctx context.Context, env *discover.Env, files []chatFile, point bool, budget discover.Budget, must func(id string, mtime time.Time) bool) (out []*summary, late []string, err error) {
	var ix *index.Index[indexed]
	if point {
		ix = index.LoadPoint[indexed](env.CacheDir(), Name, indexVersion)
	} else {
		ix = index.Load[indexed](env.CacheDir(), Name, indexVersion)
	}
	defer ix.Close()
	out = make([]*summary, len(files))
	errs := make([]error, len(files))
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	var mustOf func(int) bool
	if !budget.StopAt.IsZero() {
		// The newest first: a listing short of time lists those.
		mtimes := make([]time.Time, len(files))
		discover.Spread(ctx, len(files), func(i int) {
			if fi, err := os.Stat(files[i].Path); err == nil {
				mtimes[i] = fi.ModTime()
			}
		})
		sort.SliceStable(order, func(a, b int) bool { return mtimes[order[a]].After(mtimes[order[b]]) })
		mustOf = func(i int) bool { return must(files[i].Name, mtimes[i]) }
	}
	flags := discover.MustFirst(order, mustOf)
	var mu sync.Mutex
	discover.ParallelWith(ctx, len(order), func(k int, buf *jsonl.Buffer) {
		i := order[k]
		b := budget
		if flags[k] {
			b = discover.Budget{}
		}
		var partial bool
		out[i], partial, errs[i] = update(ix, files[i].Path, buf, b, b.GivenUp())
		if partial {
			out[i] = nil
			mu.Lock()
			late = append(late, files[i].Name)
			mu.Unlock()
		}
	})
	if err := ctx.Err(); err != nil {
		_ = ix.Save() // keep what was parsed; the next run continues from it
		return nil, nil, err
	}
	for i, err := range errs {
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // gone since it was listed
				env.Warnf("qwen: %v", err)
			}
			out[i] = nil
		}
	}
	if !point && len(late) == 0 {
		ix.PruneUnseen("")
	}
	if err := ix.Save(); err != nil {
		env.Warnf("%v", err)
	}
	return out, late, nil
}

// update parses what the index does not cover of one file: one streaming read
// of the appended bytes, memory bounded by the longest line. partial: the
// budget ended the read before the end (the entry keeps where it stopped).
// With givenUp only a fresh entry is used: anything else is partial, unread.
func update(ix *index.Index[indexed], path string, buf *jsonl.Buffer, budget discover.Budget, givenUp bool) (_ *summary, partial bool, _ error) {
	f, err := agentfs.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("stat %s: %w", path, err)
	}
	stamp := index.StampOf(st)
	var cur indexed
	if e, ok := ix.Get(path); ok {
		switch e.Plan(stamp) {
		case index.Fresh:
			s := e.Payload.Sum.clone()
			return &s, false, nil
		case index.Append:
			if givenUp {
				return nil, true, nil
			}
			if c, err := index.PrefixSum(f, e.Offset); err == nil && c == e.Check && e.Offset == e.Payload.Off {
				cur = indexed{Sum: e.Payload.Sum.clone(), Off: e.Offset}
			}
		}
	}
	if givenUp {
		return nil, true, nil
	}
	s := &cur.Sum
	// ReadRangeUntil: an earlier read may have stopped inside a line over
	// jsonl.MaxLine.
	next, _, partial, err := discover.ReadRangeUntil(buf, f, cur.Off, stamp.Size, budget, func(line []byte, _ int64) error {
		s.feed(line)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	cur.Off = next
	if c, err := index.PrefixSum(f, next); err == nil {
		ix.Put(path, index.Entry[indexed]{Stamp: stamp, Offset: next, Check: c, Partial: partial, Payload: indexed{Sum: s.clone(), Off: next}})
	}
	return s, partial, nil
}
