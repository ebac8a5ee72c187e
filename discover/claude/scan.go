package claude

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// indexVersion changes whenever aggregate's meaning changes (not only its shape, which
// the index checks by itself).
const indexVersion = 5 // 5: Slots (usage by time)

// Windows for reads that must not depend on a transcript's size.
const (
	tailWindow  = 256 << 10 // peek's first window
	quickTail   = 64 << 10  // last bytes read for a quick summary
	quickHead   = 1 << 20   // most bytes read from the start for a quick summary
	quickBuffer = 32 << 10  // first read of a quick summary's head: most hold it all
)

// loadIndex opens the adapter's parse index in dir ("": caching disabled).
func loadIndex(dir string) *index.Index[*aggregate] {
	return index.Load[*aggregate](dir, Name, indexVersion)
}

// fileState is one transcript as seen by this command.
type fileState struct {
	transcript
	Stamp index.Stamp
	Mtime time.Time
	Agg   *aggregate
	// Complete is false when the transcript was summarised from its head and tail
	// only (time budget exhausted before a full parse): token totals are unknown.
	Complete bool
	// Subs are the session's subagent transcripts (<id>/subagents/agent-*.jsonl).
	Subs []*fileState
	// Inherited is the usage a fork copied from an earlier session (fork.go).
	Inherited []modelUsage
}

// subagentFiles stats the subagent transcripts of the sessions that have a
// <id>/ folder. Their usage belongs to the parent session (Claude Code's own
// cost-state counts it there); they are never sessions of their own.
func (s *scanner) subagentFiles(ctx context.Context, files []*fileState) []*fileState {
	var mu sync.Mutex
	var all []*fileState
	if !discover.Parallel(ctx, len(files), func(i int) {
		f := files[i]
		if !f.HasDir {
			return
		}
		dir := filepath.Join(filepath.Dir(f.Path), f.ID, "subagents")
		names, err := readNames(dir)
		if err != nil {
			return // no subagents
		}
		sort.Strings(names)
		var subs []*fileState
		for _, name := range names {
			if !strings.HasPrefix(name, "agent-") || !strings.HasSuffix(name, ".jsonl") {
				continue
			}
			path := filepath.Join(dir, name)
			stamp, regular, err := index.StatPath(path)
			if err != nil || !regular {
				continue
			}
			subs = append(subs, &fileState{transcript: transcript{ID: f.ID, Path: path}, Stamp: stamp, Mtime: time.Unix(0, stamp.MtimeNs)})
		}
		f.Subs = subs
		mu.Lock()
		all = append(all, subs...)
		mu.Unlock()
	}) {
		s.cut = true
	}
	return all
}

// scanner brings the parse index up to date for a set of transcripts.
type scanner struct {
	ix *index.Index[*aggregate]
	// budget ends full parsing: the remaining files get a summary (every field
	// but the token totals, see summary) so the adapter answers within its
	// timeout, and the next run continues from the saved partial state.
	budget discover.Budget
	// cut is set when the context ended the scan before every file was handled.
	cut bool
	// late are the ids of the transcripts left unread because the budget gave
	// up (the oldest: files are read newest first). A cold disk makes even
	// summaries slow; the adapter then answers in time with what it read,
	// naming the rest, instead of running into its deadline with nothing.
	late []string
	// mustRead, when set, names the transcripts a listing never leaves out
	// when the budget gives up: those a live session may be (mustread.go).
	// They are read first, and summarised when time is short, so a slow disk
	// costs a listing old sessions, never a live one's status.
	mustRead func(*fileState) bool
	// dirStamps are the bucket directories' stamps, taken before their names
	// were read (a full listing records fork families under them: forktable.go).
	dirMu     sync.Mutex
	dirStamps map[string]index.Stamp
	// unreadable are the bucket folders that could not be listed (not gone,
	// not a file): their sessions are missing, which the adapter warns about.
	unreadable []error
}

// missingFolder reports whether err says a folder is gone or is not a folder
// (a stray file or a dangling link in projects/): nothing to warn about.
func missingFolder(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// listAndStat lists and stats every transcript under root, a bucket at a time
// per worker, each file stat'ed relative to its open bucket.
func (s *scanner) listAndStat(ctx context.Context, root string) ([]*fileState, error) {
	dir := filepath.Join(root, "projects")
	buckets, err := bucketNames(dir)
	if err != nil || len(buckets) == 0 {
		return nil, err
	}
	per := make([][]*fileState, len(buckets))
	if !discover.Parallel(ctx, len(buckets), func(i int) {
		bdir := dir + string(filepath.Separator) + buckets[i]
		if st, _, err := index.StatPath(bdir); err == nil {
			s.dirMu.Lock()
			if s.dirStamps == nil {
				s.dirStamps = map[string]index.Stamp{}
			}
			s.dirStamps[bdir] = st
			s.dirMu.Unlock()
		}
		d, err := index.OpenDir(bdir)
		if err == nil {
			defer d.Close()
		}
		var names []string
		if err == nil {
			names, err = d.Names()
		}
		if err != nil {
			if !missingFolder(err) { // gone, or a symlink to something that is not a directory
				s.dirMu.Lock()
				s.unreadable = append(s.unreadable, err)
				s.dirMu.Unlock()
			}
			return
		}
		var out []*fileState
		var dirs map[string]bool
		for _, name := range names {
			id := sessionIDOf(name)
			if id == "" {
				if isUUID(name) {
					if dirs == nil {
						dirs = map[string]bool{}
					}
					dirs[name] = true
				}
				continue
			}
			stamp, regular, err := d.Stat(name)
			if err != nil || !regular {
				continue // vanished meanwhile, or a directory named like a transcript
			}
			path := bdir + string(filepath.Separator) + name
			id = path[len(path)-len(name):][:len(id)] // the listing keeps path, not name
			out = append(out, &fileState{transcript: transcript{ID: id, Path: path},
				Stamp: stamp, Mtime: time.Unix(0, stamp.MtimeNs)})
		}
		for _, f := range out {
			f.HasDir = dirs[f.ID]
		}
		per[i] = out
	}) {
		s.cut = true
	}
	n := 0
	for _, p := range per {
		n += len(p)
	}
	all := make([]*fileState, 0, n)
	for _, p := range per {
		all = append(all, p...)
	}
	return all, nil
}

// load brings the aggregate of every file up to date and returns the files that
// have one. Fresh index entries are used as they are; the others are parsed
// (appended bytes only when possible), newest first, so a cold index fills in the
// order users care about. Files that vanished meanwhile are skipped silently;
// other read errors are returned alongside (their sessions are missing).
// With giveUp, the files still pending when the budget gives up are left out
// (s.late), except those s.mustRead names, which are read first; sub-agent
// transcripts are not (their usage is a session's totals, which a listing must
// not drop without saying which session's).
func (s *scanner) load(ctx context.Context, states []*fileState, giveUp bool) ([]*fileState, []error) {
	var mu sync.Mutex
	var pending []*fileState
	var errs []error
	if !discover.Spread(ctx, len(states), func(i int) {
		f := states[i]
		if e, ok := s.ix.Get(f.Path); ok && e.Payload != nil && e.Plan(f.Stamp) == index.Fresh {
			f.Agg, f.Complete = e.Payload, true
			return
		}
		mu.Lock()
		pending = append(pending, f)
		mu.Unlock()
	}) {
		s.cut = true
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].Mtime.After(pending[j].Mtime) })
	var mustRead func(*fileState) bool
	if giveUp {
		mustRead = s.mustRead
	}
	must := discover.MustFirst(pending, mustRead)
	if !discover.ParallelWith(ctx, len(pending), func(i int, buf *jsonl.Buffer) {
		if giveUp && s.budget.GivenUp() && !must[i] {
			pending[i].Agg = nil
			mu.Lock()
			s.late = append(s.late, pending[i].ID)
			mu.Unlock()
			return
		}
		if err := s.update(pending[i], buf); err != nil {
			pending[i].Agg = nil
			if !errors.Is(err, fs.ErrNotExist) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}
	}) {
		s.cut = true
	}
	out := make([]*fileState, 0, len(states))
	for _, f := range states {
		if f.Agg != nil {
			out = append(out, f)
		}
	}
	return out, errs
}

// update parses what the index does not cover yet, reading through buf (the
// worker's, reused from file to file).
func (s *scanner) update(fst *fileState, buf *jsonl.Buffer) error {
	f, err := agentfs.Open(fst.Path)
	if err != nil {
		return err // ENOENT: deleted by Claude's cleanup meanwhile
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	stamp := index.StampOf(st)
	fst.Stamp, fst.Mtime = stamp, st.ModTime()

	var agg aggregate
	start := int64(0)
	if e, ok := s.ix.Get(fst.Path); ok && e.Payload != nil {
		switch e.Plan(stamp) {
		case index.Fresh:
			fst.Agg, fst.Complete = e.Payload, true
			return nil
		case index.Append:
			if sum, err := index.PrefixSum(f, e.Offset); err == nil && sum == e.Check {
				agg, start = e.Payload.clone(), e.Offset
			}
		}
	}
	if start == 0 && s.budget.Over() {
		fst.Agg = summary(fst.Path, f, stamp.Size, nil, 0)
		return nil
	}
	next, partial, err := parseRange(f, start, stamp.Size, &agg, s.budget, buf)
	if err != nil {
		return fmt.Errorf("read %s: %w", fst.Path, err)
	}
	sum, err := index.PrefixSum(f, next)
	if err == nil {
		s.ix.Put(fst.Path, index.Entry[*aggregate]{Stamp: stamp, Offset: next, Check: sum, Partial: partial, Payload: &agg})
	}
	if partial {
		fst.Agg = summary(fst.Path, f, stamp.Size, &agg, next)
		return nil
	}
	fst.Agg, fst.Complete = &agg, true
	return nil
}

// parseRange feeds the complete lines in [start, end) to a. With a budget it may
// stop early; it then returns the start of the first line not consumed.
func parseRange(f *os.File, start, end int64, a *aggregate, budget discover.Budget, buf *jsonl.Buffer) (next int64, partial bool, err error) {
	next, stats, partial, err := discover.ReadRangeUntil(buf, f, start, end, budget, func(line []byte, off int64) error {
		a.consume(line, off)
		return nil
	})
	a.TooLong += stats.TooLong
	return next, partial, err
}

// summary describes a transcript the time budget left no time to parse (head,
// when given, is the parse of its first next bytes): every field as a full parse
// gives it, the lines fed from a memory map instead of being read and copied;
// the caller lists it without token totals (fileState.Complete false). Where
// the file cannot be mapped, a quick summary from its head and tail.
func summary(path string, f *os.File, size int64, head *aggregate, next int64) *aggregate {
	var a aggregate
	if head != nil {
		a = head.clone()
	} else {
		next = 0
	}
	if size-next <= mappedMax && consumeMapped(path, next, size, &a) {
		return &a
	}
	return quickSummary(f, size, head)
}

// mappedMax is the most of a transcript a summary feeds from a memory map; past
// it, the head and tail only (quickSummary). Finding the line ends of a map
// costs as much as reading it, and a summary is what a listing short of time
// can afford: not gigabytes (a transcript of one 8 GB line, issue 34 item 4).
const mappedMax = 2 * jsonl.MaxLine

// consumeMapped feeds a the complete lines in [start, size) of the file at path
// (start is a line start) from a memory map. False when the file cannot be
// mapped, or shrank meanwhile; a is then partly fed and must be dropped.
func consumeMapped(path string, start, size int64, a *aggregate) (ok bool) {
	if start >= size {
		return true
	}
	tail, err := discover.OpenTailMapped(path)
	if err != nil {
		return false
	}
	defer tail.Close()
	if !tail.Mapped() || tail.Size() < size {
		return false
	}
	// A file truncated while mapped faults on access: an error, not a crash.
	return index.NoFault(func() {
		var lines [][]byte
		var offs []int64
		lines, offs, _, err = tail.Window(tail.Size() - start)
		for i, line := range lines {
			// Lines past size were appended after the stamp: the next run's.
			if offs[i] >= start && offs[i]+int64(len(line)) < size {
				a.consume(line, offs[i])
			}
		}
	}) && err == nil
}

// quickSummary describes a transcript from its first lines (cwd, first prompt,
// start, entrypoint) and its last 64 KiB (model, last activity, turn state)
// without reading the middle. Token totals are not known this way. head, when
// given, is a partial parse from offset 0 to use instead of reading the head.
func quickSummary(f *os.File, size int64, head *aggregate) *aggregate {
	var h aggregate
	if head != nil {
		h = head.clone()
	} else {
		// The first 32 KiB usually hold everything; read more only if not.
		off := int64(0)
		for _, limit := range []int64{min(size, quickBuffer), min(size, quickHead)} {
			if off >= limit {
				continue
			}
			if _, err := f.Seek(off, io.SeekStart); err != nil {
				break
			}
			next, _, err := jsonl.Read(io.LimitReader(f, limit-off), off, func(line []byte, at int64) error {
				h.consume(line, at)
				if h.Cwd != "" && h.Prompt != "" && h.Entrypoint != "" {
					return io.EOF // enough
				}
				return nil
			})
			if err != nil {
				break
			}
			off = next
		}
	}
	var t aggregate
	start := max(size-quickTail, 0)
	if _, err := f.Seek(start, io.SeekStart); err == nil {
		first := start > 0
		_, _, _ = jsonl.Read(io.LimitReader(f, size-start), start, func(line []byte, off int64) error {
			if first && !jsonl.StartsLine(f, off) {
				first = false
				return nil // the window began inside this line
			}
			first = false
			t.consume(line, off)
			return nil
		})
	}
	h.mergeTail(&t)
	return &h
}

// mergeTail takes the "last seen" facts from t, a parse of the file's tail.
func (a *aggregate) mergeTail(t *aggregate) {
	if a.Cwd == "" {
		a.Cwd = t.Cwd
	}
	if t.LastCwd != "" {
		a.LastCwd = t.LastCwd
	}
	if t.Model != "" {
		a.Model = t.Model
	}
	for _, m := range t.ByModel {
		a.modelIndex(m.Model, m.Tier)
	}
	if t.StartMs != 0 && (a.StartMs == 0 || t.StartMs < a.StartMs) {
		a.StartMs = t.StartMs
	}
	a.LastMs = max(a.LastMs, t.LastMs)
	for _, p := range []struct {
		dst *string
		src string
	}{
		{&a.CustomTitle, t.CustomTitle}, {&a.AgentName, t.AgentName}, {&a.AITitle, t.AITitle},
		{&a.Summary, t.Summary}, {&a.Version, t.Version}, {&a.PermMode, t.PermMode},
		{&a.PromptPermMode, t.PromptPermMode},
	} {
		if p.src != "" {
			*p.dst = p.src
		}
	}
	if a.Entrypoint == "" {
		a.Entrypoint = t.Entrypoint
	}
	if t.HasBranch {
		a.GitBranch, a.HasBranch = t.GitBranch, true
	}
	if t.Last.Kind != tailNone {
		a.setLast(t.Last)
	}
	a.LastTurnEnd = max(a.LastTurnEnd, t.LastTurnEnd)
}

// clone copies a so that appending to it does not touch the index's copy, and
// decodes the open message groups appending needs.
func (a aggregate) clone() aggregate {
	a.ByModel = append([]modelUsage(nil), a.ByModel...)
	a.Slots = a.Slots.Clone()
	if a.Recent == nil && a.recentRaw != nil {
		a.Recent = decodeGroups(a.recentRaw, len(a.ByModel))
	} else {
		a.Recent = append([]msgGroup(nil), a.Recent...)
	}
	a.recentRaw = nil
	return a
}
