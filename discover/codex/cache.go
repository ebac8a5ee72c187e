package codex

import (
	"os"
	"time"

	"github.com/agentctl/agentctl/discover/agentfs"
	"github.com/agentctl/agentctl/discover/index"
)

// indexVersion changes whenever summary's meaning changes (not its shape: the
// index detects shape changes itself).
const indexVersion = 4 // 3: invalid token counts skipped (tailInfo.BadTokens); 4: tailInfo.PendingCmd

// summary is what listing extracts from one rollout, cached in the parse index
// keyed by the rollout's (device, inode, size, mtime). It depends only on the
// file's bytes, so a lost or stale cache changes no output. Head and the
// turn_context part of Tail are filled lazily: only threads without a usable DB
// row need them.
type summary struct {
	Head    *headInfo // nil: not read
	Tail    tailInfo
	CtxTail bool // Tail was read looking for turn_context as well
}

// summarize returns the rollout's summary, from the index when it is fresh and
// covers what is needed, else by reading the head and/or tail. size and mtime are
// the file's at the time of reading. The summary is only read, never changed.
func (st *state) summarize(path string, needHead, needCtx bool, sc *scratch) (sum *summary, size int64, mtime time.Time, err error) {
	var cached *summary
	var plan index.Action = index.Rebuild
	var prev index.Entry[*summary]
	if stamp, regular, err := index.StatPath(path); err == nil && regular {
		if e, ok := st.ix.Get(path); ok && e.Payload != nil {
			prev, plan, cached = e, e.Plan(stamp), e.Payload
			if plan == index.Fresh && (!needHead || cached.Head != nil) && (!needCtx || cached.CtxTail) {
				return cached, stamp.Size, time.Unix(0, stamp.MtimeNs).UTC(), nil
			}
		}
	}
	f, err := agentfs.Open(path)
	if err != nil {
		return nil, 0, time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, time.Time{}, err
	}
	stamp := index.StampOf(fi)
	size, mtime = fi.Size(), fi.ModTime().UTC()
	sum = &summary{}
	haveTail := false
	if cached != nil && prev.Stamp.SameFile(stamp) && size >= prev.Offset {
		// Unchanged, or grown by appends with the same bytes before (checked): the
		// head still holds. The tail holds only for the very same size.
		if plan == index.Fresh || prefixUnchanged(f, prev) {
			sum.Head = cached.Head
			if prev.Stamp == stamp && (!needCtx || cached.CtxTail) {
				sum.Tail, sum.CtxTail, haveTail = cached.Tail, cached.CtxTail, true
			}
		}
	}
	if needHead && sum.Head == nil {
		h, err := readHead(f, size, sc)
		if err != nil {
			return nil, size, mtime, err
		}
		sum.Head = &h
	}
	if !haveTail {
		if sum.Tail, err = readTail(f, size, needCtx, sc); err != nil {
			return nil, size, mtime, err
		}
		sum.CtxTail = needCtx
	}
	if st.ix.Enabled() {
		if check, err := index.PrefixSum(f, size); err == nil {
			st.ix.Put(path, index.Entry[*summary]{Stamp: stamp, Offset: size, Check: check, Payload: sum})
		}
	}
	return sum, size, mtime, nil
}

func prefixUnchanged(f *os.File, e index.Entry[*summary]) bool {
	c, err := index.PrefixSum(f, e.Offset)
	return err == nil && c == e.Check
}
