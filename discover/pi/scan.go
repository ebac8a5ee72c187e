package pi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// indexVersion: bump when the meaning of summary changes.
const indexVersion = 6 // 2: summary.BadUsage; 3: summary.Slots; 4: the binary format (codec.go); 5: summary.ErrStreak; 6: summary.TooLong

// Quick-summary reads (docs/agents/pi.md §3 "Performance"): the prompt from a bounded forward
// scan, the state from a tail read grown until it holds a complete line.
const (
	headWindow    = 64 << 10
	tailWindow    = 64 << 10
	maxTailWindow = 16 << 20
)

// file is one parsed session file. Complete is false when it was summarised from
// its head and tail only (a cold index and no time left): then token and cost
// totals are unknown and omitted.
type file struct {
	Path     string
	Sum      *summary
	Flavour  string
	Complete bool
	mtime    time.Time
}

// scanner brings the parse index up to date with the session files.
type scanner struct {
	ix *index.Index[summary]
	// budget ends full parsing; pi files are then summarised from head and
	// tail (every listing needs the header: it carries the id) until the budget
	// gives up, when the files not reached yet (the oldest: files are read
	// newest first) are left out with a warning naming them, so that the
	// adapter answers in time with the rest instead of not at all (a cold disk
	// makes even summaries slow: 10,000 of them took longer than the timeout).
	budget discover.Budget
	// mustRead, when set, names the files a listing never leaves out when the
	// budget gives up: those a live session may be (mustRead in live.go). They
	// are read first, and summarised when time is short.
	mustRead func(*file) bool
}

// scan summarises every file. Files whose index entry is fresh are only stat'ed;
// the rest are parsed (appended bytes only, when the index allows), newest first,
// so a cold index fills in the order users care about. Files without a complete
// header line are dropped: pi writes the header together with the first entries,
// so such a file is being created right now, or is not pi's.
func (s *scanner) scan(ctx context.Context, env *discover.Env, paths []string) []*file {
	res := make([]*file, len(paths))
	var mu sync.Mutex
	var pending []int
	discover.Spread(ctx, len(paths), func(i int) {
		st, err := os.Stat(paths[i])
		if err != nil || !st.Mode().IsRegular() {
			return // vanished between ReadDir and Stat
		}
		if e, ok := s.ix.Get(paths[i]); ok && e.Plan(index.StampOf(st)) == index.Fresh {
			p := e.Payload
			res[i] = &file{Path: paths[i], Sum: &p, Complete: true, mtime: st.ModTime()}
			return
		}
		res[i] = &file{Path: paths[i], mtime: st.ModTime()}
		mu.Lock()
		pending = append(pending, i)
		mu.Unlock()
	})
	sort.Slice(pending, func(a, b int) bool { return res[pending[a]].mtime.After(res[pending[b]].mtime) })
	var mustRead func(int) bool
	if s.mustRead != nil {
		mustRead = func(i int) bool { return s.mustRead(res[i]) }
	}
	must := discover.MustFirst(pending, mustRead)
	var late sync.Mutex
	var skipped []string
	discover.ParallelWith(ctx, len(pending), func(k int, buf *jsonl.Buffer) {
		f := res[pending[k]]
		if s.budget.GivenUp() && !must[k] {
			late.Lock()
			skipped = append(skipped, filepath.Base(f.Path))
			late.Unlock()
			return
		}
		if err := s.update(f, buf); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				env.Warnf("%v", err)
			}
			f.Sum = nil
		}
	})
	out := make([]*file, 0, len(res))
	var incomplete, tooLong []string
	for _, f := range res {
		switch {
		case f == nil || f.Sum == nil:
		case f.Sum.HeaderOK:
			f.Flavour = flavour(f.Path, f.Sum.Header)
			out = append(out, f)
			if f.Sum.TooLong > 0 {
				tooLong = append(tooLong, f.Path)
			}
			if !f.Complete {
				incomplete = append(incomplete, f.Sum.Header.ID)
			}
		case f.Sum.Bad > 0:
			env.Warnf("%s: line 1 is not a pi session header; skipped", f.Path)
		}
	}
	if w := discover.NameTooLong(tooLong); w != "" {
		env.Warnf("%s", w)
	}
	if w := discover.NameIncomplete(incomplete, "sessions"); w != "" {
		env.Warnf("%s", w)
	}
	if w := discover.NameLeftOut(skipped, "session files"); w != "" {
		env.Warnf("%s", w)
	}
	return out
}

// update parses what the index does not cover yet: one streaming read of the
// appended bytes through buf (the worker's, reused from file to file), memory
// bounded by the longest line, never by the file.
func (s *scanner) update(fl *file, buf *jsonl.Buffer) error {
	f, err := agentfs.Open(fl.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", fl.Path, err)
	}
	stamp := index.StampOf(st)
	fl.mtime = st.ModTime()

	sum := summary{}
	if e, ok := s.ix.Get(fl.Path); ok {
		switch e.Plan(stamp) {
		case index.Fresh:
			p := e.Payload
			fl.Sum, fl.Complete = &p, true
			return nil
		case index.Append:
			// pi only appends; pi-rust rewrites through a new inode (Rebuild).
			if c, err := index.PrefixSum(f, e.Offset); err == nil && c == e.Check && e.Offset == e.Payload.Off {
				sum = e.Payload.clone()
			}
		}
	}
	if sum.Off == 0 && s.budget.Over() {
		fl.Sum = quickSummary(f, nil)
		return nil
	}
	if sum.Off == 0 && !headerFits(f, stamp.Size) {
		// The header is a short first line (quickSummary reads no more for
		// it): a file whose first line is longer is no session, and is not
		// read on (a transcript of one 8 GB line, issue 34).
		fl.Sum, fl.Complete = &sum, true
		return nil
	}
	partial, err := sum.scanRange(f, stamp.Size, s.budget, buf)
	if err != nil {
		return fmt.Errorf("read %s: %w", fl.Path, err)
	}
	if c, err := index.PrefixSum(f, sum.Off); err == nil && (sum.HeaderOK || sum.Bad > 0) {
		s.ix.Put(fl.Path, index.Entry[summary]{Stamp: stamp, Offset: sum.Off, Check: c, Partial: partial, Payload: sum})
	}
	if partial {
		fl.Sum = quickSummary(f, &sum)
		return nil
	}
	fl.Sum, fl.Complete = &sum, true
	return nil
}

// headerFits reports whether f's first line ends within headWindow bytes (or
// the file is no longer than that).
func headerFits(f io.ReaderAt, size int64) bool {
	if size <= headWindow {
		return true
	}
	b := make([]byte, headWindow)
	n, _ := f.ReadAt(b, 0)
	return bytes.IndexByte(b[:n], '\n') >= 0
}

// scanRange folds the complete lines in [s.Off, end) into s; with a budget it may
// stop early at a line boundary (partial).
func (s *summary) scanRange(f *os.File, end int64, budget discover.Budget, buf *jsonl.Buffer) (partial bool, err error) {
	// ReadRangeUntil: s.Off may be inside a line over jsonl.MaxLine, read that far.
	next, stats, partial, err := discover.ReadRangeUntil(buf, f, s.Off, end, budget, func(line []byte, off int64) error {
		s.feed(line)
		if !s.HeaderOK {
			return errStop // line 1 is not a header: not a session file
		}
		return nil
	})
	switch {
	case errors.Is(err, errStop):
		return false, nil
	case err != nil:
		return false, err
	}
	s.Off = next
	s.TooLong += stats.TooLong
	return partial, nil
}

// clone copies a summary so that the index's copy is never mutated.
func (s summary) clone() summary {
	s.Models = append([]string(nil), s.Models...)
	s.Slots = s.Slots.Clone()
	return s
}

// quickSummary describes a file from its head (header, first prompt, first model)
// and its tail (leaf, latest model and title, last activity) without reading the
// middle. Token and cost totals are left out: they need every assistant row.
func quickSummary(f *os.File, partial *summary) *summary {
	q := &summary{}
	if _, err := f.Seek(0, io.SeekStart); err == nil {
		_, _, _ = jsonl.Read(io.LimitReader(f, headWindow), 0, func(line []byte, _ int64) error {
			q.feed(line)
			if !q.HeaderOK {
				return errStop
			}
			return nil
		})
	}
	if !q.HeaderOK {
		return q
	}
	if partial != nil && partial.PromptSeen && !q.PromptSeen {
		q.Prompt, q.PromptSeen = partial.Prompt, true
	}
	for w := int64(tailWindow); w <= maxTailWindow; w *= 4 {
		lines, _, atStart, err := jsonl.Tail(f.Name(), w)
		if err != nil {
			break
		}
		if len(lines) > 0 || atStart {
			for _, l := range lines {
				q.feedTail(l)
			}
			break
		}
	}
	q.Tokens, q.Cost = discover.Tokens{}, 0
	if partial != nil {
		q.TooLong = partial.TooLong // the lines the read passed: named all the same
	}
	return q
}

// feedTail is feed for a line of the tail window, which may repeat lines the head
// scan already saw: only state that later lines overwrite is taken from it.
func (s *summary) feedTail(line []byte) {
	prompt, seen := s.Prompt, s.PromptSeen
	s.feed(line)
	s.Prompt, s.PromptSeen = prompt, seen
}
