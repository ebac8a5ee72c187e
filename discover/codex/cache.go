package codex

import (
	"bytes"
	"io"
	"os"
	"time"

	"github.com/agentctl/agentctl/discover"

	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
)

// indexVersion changes whenever summary's meaning changes (not its shape: the
// index detects shape changes itself).
const indexVersion = 7 // 3: invalid token counts skipped (tailInfo.BadTokens); 4: Slots; 5: tailInfo.PendingCmd; 6: NoSlots; 7: ForkedFrom

// summary is what listing extracts from one rollout, cached in the parse index
// keyed by the rollout's (device, inode, size, mtime). It depends only on the
// file's bytes, so a lost or stale cache changes no output. Head and the
// turn_context part of Tail are filled lazily: only threads without a usable DB
// row need them.
type summary struct {
	Head    *headInfo // nil: not read
	Tail    tailInfo
	CtxTail bool // Tail was read looking for turn_context as well
	// Slots spread the thread's tokens over time: each valid token_count's
	// increase over the previous one, in the slot of its line's timestamp. They
	// cover the complete lines before SlotsOff; SlotsTo is the cumulative count
	// they add up to (tokensOf the last valid total_token_usage), where the next
	// appended token_count continues from.
	Slots    discover.Slots
	SlotsOff int64
	SlotsTo  discover.Tokens
	// NoSlots: the slots were not counted (Slots, SlotsOff and SlotsTo are
	// zero). Counting them reads the whole rollout; a command that does not
	// show them (Env.Slots false) reads its head and tail only (issue 10).
	NoSlots bool
	// ForkedFrom is session_meta.forked_from_id: the thread this one was
	// forked from ("" for none). Codex writes it before the ~20 KB
	// base_instructions, so it is read from the rollout's first bytes even
	// when the head is not needed (docs/agents/codex.md §1.1).
	ForkedFrom string
}

// cachedRollout is what the index holds for a rollout: its entry (Payload nil:
// none), how it stands against the file's stamp, and whether it serves as it is
// (fresh, with the parts asked for).
type cachedRollout struct {
	prev  index.Entry[*summary]
	plan  index.Action
	stamp index.Stamp
	fresh bool
}

// cached looks path up in the index (a stat, no read).
func (st *state) cached(path string, needHead, needCtx bool) cachedRollout {
	c := cachedRollout{plan: index.Rebuild}
	if stamp, regular, err := index.StatPath(path); err == nil && regular {
		if e, ok := st.ix.Get(path); ok && e.Payload != nil {
			c.prev, c.plan, c.stamp = e, e.Plan(stamp), stamp
			c.fresh = c.plan == index.Fresh && (!needHead || e.Payload.Head != nil) && (!needCtx || e.Payload.CtxTail) &&
				(!st.slots || !e.Payload.NoSlots)
		}
	}
	return c
}

// summarize returns the rollout's summary, from the index when it is fresh and
// covers what is needed (c: st.cached with the same needs), else by reading the
// head and/or tail. size and mtime are the file's at the time of reading. The
// summary is only read, never changed.
func (st *state) summarize(c cachedRollout, path string, needHead, needCtx bool, sc *scratch) (sum *summary, size int64, mtime time.Time, err error) {
	if c.fresh {
		return c.prev.Payload, c.stamp.Size, time.Unix(0, c.stamp.MtimeNs).UTC(), nil
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
	return st.summarizeFrom(c, path, f, fi, needHead, needCtx, sc)
}

// summarizeFrom is summarize reading the rollout path through f, whose stat is
// fi.
func (st *state) summarizeFrom(c cachedRollout, path string, f io.ReaderAt, fi os.FileInfo, needHead, needCtx bool, sc *scratch) (sum *summary, size int64, mtime time.Time, err error) {
	cached, plan, prev := c.prev.Payload, c.plan, c.prev
	stamp := index.StampOf(fi)
	size, mtime = fi.Size(), fi.ModTime().UTC()
	sum = &summary{}
	haveTail := false
	forkRead := false
	counted := false // the cached slots hold: keep counting them, whether asked for or not
	if cached != nil && prev.Stamp.SameFile(stamp) && size >= prev.Offset {
		// Unchanged, or grown by appends with the same bytes before (checked): the
		// head and the slots still hold. The tail holds only for the very same size.
		if plan == index.Fresh || prefixUnchanged(f, prev) {
			sum.Head, sum.ForkedFrom = cached.Head, cached.ForkedFrom
			forkRead = true
			if !cached.NoSlots {
				sum.Slots, sum.SlotsOff, sum.SlotsTo = cached.Slots.Clone(), cached.SlotsOff, cached.SlotsTo
				counted = true
			}
			if prev.Stamp == stamp && (!needCtx || cached.CtxTail) {
				sum.Tail, sum.CtxTail, haveTail = cached.Tail, cached.CtxTail, true
			}
		}
	}
	// Slots not asked for and not counted before: the head and the tail are
	// read, never the middle (a small rollout in one read, its line ends
	// found forwards for readTail's backward scan: IndexByte is far faster so).
	// Counted from its start (a cold index) a rollout is read whole, once, into
	// the worker's memory, and the slots, head and tail are taken from there:
	// one read instead of three passes over the file in small reads.
	sum.NoSlots = !counted && !st.slots
	whole := int64(wholeMax)
	if sum.NoSlots {
		whole = smallWhole
	}
	var r io.ReaderAt = f
	if sum.SlotsOff == 0 && size <= whole {
		if b, ok := sc.readWhole(f, size); ok {
			r = memFile(b)
		}
	}
	switch m, inMemory := r.(memFile); {
	case sum.NoSlots && inMemory:
		m.recordNewlines(sc)
	case !sum.NoSlots && sum.SlotsOff < size:
		if err := sum.readSlots(r, size, sc); err != nil {
			return nil, size, mtime, err
		}
	}
	if !forkRead {
		sum.ForkedFrom = forkedFrom(r, size)
	}
	if needHead && sum.Head == nil {
		h, err := readHead(r, size, sc)
		if err != nil {
			return nil, size, mtime, err
		}
		sum.Head = &h
	}
	if !haveTail {
		if sum.Tail, err = readTail(r, size, needCtx, sc); err != nil {
			return nil, size, mtime, err
		}
		sum.CtxTail = needCtx
	}
	if st.ix.Enabled() {
		if check, err := index.PrefixSum(r, size); err == nil {
			st.ix.Put(path, index.Entry[*summary]{Stamp: stamp, Offset: size, Check: check, Payload: sum})
		}
	}
	return sum, size, mtime, nil
}

// readSlots adds the token_count lines from SlotsOff to size to the slots. Only
// those lines are decoded; a line without a timestamp counts at the last one
// seen before it.
func (s *summary) readSlots(f io.ReaderAt, size int64, sc *scratch) error {
	from := s.SlotsOff
	var last time.Time
	if n := len(s.Slots); n > 0 {
		last = time.Unix(s.Slots[n-1].At, 0)
	}
	var r io.ReaderAt = io.NewSectionReader(f, from, size-from)
	var record *scratch // the forward pass covers the whole memory: keep its line ends for readTail
	if m, ok := f.(memFile); ok && int64(len(m)) >= size {
		r = m[from:size]
		if from == 0 {
			record = sc
		}
	}
	return scanLines(r, size-from, record, sc, func(line []byte, off int64) bool {
		s.SlotsOff = from + off + int64(len(line)) + 1
		typ, sub, ts, ok := sniff(line)
		if !ok {
			if !bytes.Contains(line, []byte(`"token_count"`)) {
				return true
			}
			r, err := decodeFast(line)
			if err != nil {
				return true
			}
			typ, sub, ts = r.Type, r.sub(), []byte(r.Timestamp)
		}
		if t := parseTSBytes(ts); !t.IsZero() {
			last = t
		}
		if typ != "event_msg" || sub != "token_count" {
			return true
		}
		var tu usage
		u := &tu
		if !totalUsage(line, u) {
			r, err := decodeFast(line)
			if err != nil || r.Payload == nil || r.Payload.Info == nil || r.Payload.Info.Total == nil {
				return true
			}
			u = r.Payload.Info.Total
		}
		if !u.valid() {
			return true // skipped, as readTail skips it (issue 19)
		}
		cur := tokensOf(u)
		d := cur
		d.Add(discover.Tokens{Input: -s.SlotsTo.Input, Output: -s.SlotsTo.Output, CacheRead: -s.SlotsTo.CacheRead, CacheWrite: -s.SlotsTo.CacheWrite})
		s.SlotsTo = cur
		if !last.IsZero() {
			s.Slots.Add(discover.SlotOfTime(last), d)
		}
		return true
	})
}

// wholeMax is the largest rollout read whole into a worker's memory; larger
// ones are read in pieces. A worker's buffer starts at wholeMin (nearly every
// rollout is smaller) and grows to the largest rollout it has read, then is
// reused: a rollout of megabytes read in pieces was read twice, forwards for
// its token counts and backwards for its latest turn, its line ends searched
// for both times. wholeMax stays far below maxLineSize, so a memFile holds no
// line too long to deliver (memFile).
const (
	wholeMin   = 1 << 20
	wholeMax   = 16 << 20
	smallWhole = wholeMin // read whole even when only its head and tail are needed: one read instead of several
)

// readWhole reads the first size (at most wholeMax) bytes of f into the
// worker's file buffer. False when the file no longer has them (truncated
// meanwhile) or cannot be read.
func (s *scratch) readWhole(f io.ReaderAt, size int64) ([]byte, bool) {
	if int64(cap(s.file)) < size {
		s.file = make([]byte, max(size, wholeMin))
	}
	s.forgetNewlines()
	buf := s.file[:size]
	n, err := f.ReadAt(buf, 0)
	if n < len(buf) || (err != nil && err != io.EOF) {
		return nil, false
	}
	return buf, true
}

func prefixUnchanged(f io.ReaderAt, e index.Entry[*summary]) bool {
	c, err := index.PrefixSum(f, e.Offset)
	return err == nil && c == e.Check
}
