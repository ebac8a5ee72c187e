// Package index is the incremental parse index: per agent file, what an adapter
// already extracted from it and up to which byte, so the next command parses only
// what was appended since. It is a pure cache. Losing it, or finding it corrupt,
// costs time and never changes output: every consumer must produce the same result
// from a full parse as from cached state plus the appended bytes.
//
// One index file per adapter lives in agentctl's cache directory. Entries are keyed
// by path and validated by a Stamp (device, inode, size, mtime); the payload is the
// adapter's own type, opaque to this package.
package index

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/meta"
)

// Entry is what the index remembers about one file.
type Entry[T any] struct {
	Stamp Stamp
	// Offset is the end of the last complete line parsed: where parsing resumes.
	Offset int64
	// Check is a hash of the bytes just before Offset (see PrefixSum). Before
	// appending, the caller re-hashes them to prove the parsed prefix is unchanged.
	Check uint64
	// Partial means parsing stopped before the end of the file on purpose (e.g. a
	// time budget), not because the rest was an unfinished line.
	Partial bool
	Payload T
}

// entryHead is an Entry without its payload.
type entryHead struct {
	Stamp   Stamp
	Offset  int64
	Check   uint64
	Partial bool
}

// entry is the slot's entry with payload p.
func (s *slot[T]) entry(p T) Entry[T] {
	h := &s.Head
	return Entry[T]{Stamp: h.Stamp, Offset: h.Offset, Check: h.Check, Partial: h.Partial, Payload: p}
}

// payload is the payload Put, or the zero T.
func (s *slot[T]) payload() T {
	if s.Val == nil {
		var zero T
		return zero
	}
	return *s.Val
}

// Action is what a caller must do with a file given its current stamp.
type Action int

const (
	// Fresh: the entry describes the file as it is; nothing to read.
	Fresh Action = iota
	// Append: the same file grew (or parsing was unfinished); parse from Offset
	// after verifying Check.
	Append
	// Rebuild: a different or shrunk file; parse from 0 with a new payload.
	Rebuild
)

// Plan decides how to bring e up to date with a file whose stamp is now.
func (e Entry[T]) Plan(now Stamp) Action {
	return entryHead{Stamp: e.Stamp, Offset: e.Offset, Partial: e.Partial}.plan(now)
}

func (e entryHead) plan(now Stamp) Action {
	switch {
	case !now.SameFile(e.Stamp), now.Size < e.Stamp.Size, now.Size < e.Offset:
		return Rebuild
	case now == e.Stamp && !e.Partial:
		return Fresh
	}
	return Append
}

// Index is the in-memory view of one adapter's index file. It is safe for
// concurrent use. A payload returned by Get belongs to the caller until it is
// handed back with Put.
type Index[T any] struct {
	path   string // "" when caching is disabled
	header string

	mu      sync.RWMutex // Get only reads the map: workers do not queue on it
	entries map[string]*slot[T]
	dirty   bool
	codec   *binaryCodec[T] // nil: the whole file is one gob stream
	// mapping, when set, is the mapped index file (agentfs.MapIndexFile) the
	// lazy payloads are views of: it faults if truncated in place, so they are
	// read under noFault.
	mapping []byte

	// point, set by LoadPoint, reads entries from the file one bucket at a time;
	// puts are the paths Put since (Save appends them to the journal).
	point   *pointFile // opened on the first entry asked for that the journal has not
	opened  bool
	pointed bool
	missed  map[string]bool
	puts    map[string]bool
}

// slot holds one entry and whether this run used it (for pruning). The payload
// is behind a pointer, set only for entries Put (or gob-decoded): a listing's
// index holds tens of thousands of lazy slots, and a payload type such as Pi's
// summary is hundreds of bytes of zeros in each.
type slot[T any] struct {
	Head entryHead
	Val  *T
	seen atomic.Bool // not encoded
	// lazy, when set, holds the payload still encoded (binary format): it is
	// decoded by each Get, so a command that needs a few entries does not pay for
	// decoding them all. Only damaged changes after Load.
	lazy *lazyPayload
}

type lazyPayload struct {
	raw     []byte
	damaged atomic.Bool // decoding failed
}

// file is the on-disk shape.
type file[T any] struct {
	Header  string
	Entries map[string]*slot[T]
}

// Load reads the index called name from dir. dir "" disables caching: Get always
// misses and Save does nothing. A missing, unreadable, corrupt or outdated file
// (other version, or a payload type that changed shape) is silently discarded.
// Bump version whenever the meaning of the payload changes.
func Load[T any](dir, name string, version int) *Index[T] {
	ix := &Index[T]{
		header:  fmt.Sprintf("agentctl-index/%s/v%d/%s", name, version, typeSig[T]()),
		entries: map[string]*slot[T]{},
		codec:   binaryCodecOf[T](),
	}
	if dir == "" {
		return ix
	}
	ix.path = filepath.Join(dir, name+".index")
	if ix.codec != nil {
		// Payloads with their own binary encoding: the file mapped (or read where
		// it cannot be), entries decoded on use. The paths are copied out; the
		// encoded payloads stay views of the mapping, read only under noFault,
		// and the mapping is released once the index is unreachable.
		b, mapped, err := agentfs.MapIndexFile(ix.path)
		if err != nil {
			ix.applyJournal()
			return ix
		}
		var entries map[string]*slot[T]
		ok := NoFault(func() {
			if body, sumOK := verifySum(b); sumOK {
				entries, _ = decodeBinary[T](body, ix.header)
			}
		})
		if !ok || entries == nil {
			ix.dirty = true // rewrite it, so a corrupt file does not cost every run
			entries = map[string]*slot[T]{}
			if mapped {
				agentfs.UnmapIndexFile(b)
			}
		} else if mapped {
			ix.mapping = b
			runtime.AddCleanup(ix, agentfs.UnmapIndexFile, b)
		}
		ix.entries = entries
		ix.applyJournal()
		return ix
	}
	fd, err := os.Open(ix.path)
	if err != nil {
		return ix
	}
	defer fd.Close()
	// Checked first, streamed (the file can be megabytes; memory stays bounded),
	// then decoded from the verified bytes only.
	n, ok := verifySumReader(fd)
	if !ok {
		ix.dirty = true
		return ix
	}
	if _, err := fd.Seek(0, io.SeekStart); err != nil {
		return ix
	}
	var f file[T]
	if err := gob.NewDecoder(bufio.NewReaderSize(io.LimitReader(fd, n), 64<<10)).Decode(&f); err != nil || f.Header != ix.header {
		ix.dirty = true // rewrite it, so a corrupt file does not cost every run
		return ix
	}
	if f.Entries != nil {
		ix.entries = f.Entries
	}
	return ix
}

// applyJournal lays the journal's entries (newer than the file's) over the
// file's; the next Save folds them in.
func (ix *Index[T]) applyJournal() {
	for p, s := range ix.readJournal() {
		ix.entries[p] = s
		ix.dirty = true
	}
}

// LoadPoint is Load for a command that needs a few entries (one session's): it
// reads none until asked, then only the bucket of each path asked for (point.go),
// plus the journal; Save appends what was Put to the journal. Indexes without a
// binary payload encoding are loaded whole.
func LoadPoint[T any](dir, name string, version int) *Index[T] {
	if binaryCodecOf[T]() == nil || dir == "" {
		return Load[T](dir, name, version)
	}
	ix := &Index[T]{
		header:  fmt.Sprintf("agentctl-index/%s/v%d/%s", name, version, typeSig[T]()),
		entries: map[string]*slot[T]{},
		codec:   binaryCodecOf[T](),
		path:    filepath.Join(dir, name+".index"),
		pointed: true,
		missed:  map[string]bool{},
		puts:    map[string]bool{},
	}
	ix.entries = ix.readJournal()
	if ix.entries == nil {
		ix.entries = map[string]*slot[T]{}
	}
	return ix
}

// slotOf returns the slot of path, reading its bucket in point mode.
func (ix *Index[T]) slotOf(path string) *slot[T] {
	ix.mu.RLock()
	s := ix.entries[path]
	missed := ix.missed[path]
	ix.mu.RUnlock()
	if s != nil || !ix.pointed || missed {
		return s
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if s := ix.entries[path]; s != nil {
		return s
	}
	ix.missed[path] = true
	if !ix.opened {
		ix.opened = true
		ix.point = openPoint(ix.path, ix.header)
	}
	if ix.point == nil {
		return nil
	}
	b, ok := ix.point.bucket(path)
	if !ok {
		return nil
	}
	d := NewDec(b)
	for d.Len() > 0 {
		var e slot[T]
		pl, ok := decodeEntry(&d, &e, &lazyPayload{})
		if !ok {
			return nil
		}
		if string(pl) == path {
			if _, have := ix.entries[path]; !have {
				ix.entries[path] = &e
			}
			return ix.entries[path]
		}
	}
	return nil
}

// Close releases the file a point load keeps open (LoadPoint); the index then
// reads no more entries from it. A no-op for a full load.
func (ix *Index[T]) Close() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.point != nil {
		ix.point.f.Close()
		ix.point = nil
	}
	ix.opened = true
}

// mapped reports whether the payloads are views of a mapped file.
func (ix *Index[T]) mapped() bool { return ix.mapping != nil }

// Enabled reports whether the index is backed by a file.
func (ix *Index[T]) Enabled() bool { return ix.path != "" }

// Get returns the entry for path and marks it as still in use.
func (ix *Index[T]) Get(path string) (Entry[T], bool) {
	s := ix.slotOf(path)
	if s == nil {
		return Entry[T]{}, false
	}
	s.seen.Store(true)
	if l := s.lazy; l != nil {
		// Decoded afresh for this caller and not kept: the index holds only the
		// encoded bytes, so a listing that reads every entry once does not hold
		// every payload until the index is dropped.
		e := s.entry(*new(T))
		var err error
		if !ix.noFault(func() { err = ix.codec.decode(l.raw, &e.Payload) }) {
			err = ErrEncoding // the mapped file was truncated: parse afresh
		}
		if err != nil {
			l.damaged.Store(true)    // Save drops it
			return Entry[T]{}, false // a damaged entry is a miss
		}
		return e, true
	}
	return s.entry(s.payload()), true
}

// Fresh reports whether the entry for path describes the file as stamped now
// (Plan == Fresh) and marks the entry as still in use, without decoding its
// payload: listings that only need a few payloads check the rest this way.
func (ix *Index[T]) Fresh(path string, now Stamp) bool {
	s := ix.slotOf(path)
	if s == nil {
		return false
	}
	s.seen.Store(true)
	return s.Head.plan(now) == Fresh
}

// Put stores the entry for path.
func (ix *Index[T]) Put(path string, e Entry[T]) {
	if ix.path == "" {
		return
	}
	p := e.Payload
	s := &slot[T]{Head: entryHead{Stamp: e.Stamp, Offset: e.Offset, Check: e.Check, Partial: e.Partial}, Val: &p}
	s.seen.Store(true)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.entries[path] = s
	ix.dirty = true
	if ix.pointed {
		ix.puts[path] = true
	}
}

// Len is the number of entries.
func (ix *Index[T]) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.entries)
}

// PruneUnseen drops the entries under prefix (a directory, "" for all) that were
// neither read nor written since Load. Call it only after a complete scan of
// prefix, so files that vanished do not accumulate; entries of other directories
// (another config root sharing the cache) are kept.
func (ix *Index[T]) PruneUnseen(prefix string) {
	if ix.pointed {
		return // it never saw every entry
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for p, s := range ix.entries {
		if !s.seen.Load() && (prefix == "" || strings.HasPrefix(p, prefix)) {
			delete(ix.entries, p)
			ix.dirty = true
		}
	}
}

// Save writes the index atomically if anything changed since Load. Call
// PruneUnseen first after a complete scan.
//
// Save is where a listing is done with the index: the pages of a mapped index
// file it read leave the process's resident memory (agentfs.ReleaseIndexFile;
// a later Get reads them back from the page cache). A listing of every
// adapter held each adapter's index file, megabytes each, until it exited.
func (ix *Index[T]) Save() error {
	if ix.path == "" {
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.mapped() {
		defer agentfs.ReleaseIndexFile(ix.mapping)
	}
	if !ix.dirty {
		return nil
	}
	if ix.pointed {
		paths := make([]string, 0, len(ix.puts))
		for p := range ix.puts {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		if err := ix.appendJournal(paths); err != nil {
			return fmt.Errorf("write parse index journal (a cache; delete %s if this persists): %w", journalPath(ix.path), err)
		}
		clear(ix.puts)
		ix.dirty = false
		return nil
	}
	var out []byte
	if ix.codec != nil {
		var b []byte
		var err error
		if !ix.noFault(func() { b, err = encodeBinary(ix.header, ix.entries, ix.codec) }) {
			// The mapped file was truncated under us: the payloads still encoded
			// are lost, so leave them out (they are parsed afresh next time).
			for _, s := range ix.entries {
				if s.lazy != nil {
					s.lazy.damaged.Store(true)
				}
			}
			b, err = encodeBinary(ix.header, ix.entries, ix.codec)
		}
		if err != nil {
			return fmt.Errorf("encode parse index %s: %w", ix.path, err)
		}
		out = b
	} else {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(file[T]{Header: ix.header, Entries: ix.entries}); err != nil {
			return fmt.Errorf("encode parse index %s: %w", ix.path, err)
		}
		out = buf.Bytes()
	}
	if err := meta.WriteFileAtomic(ix.path, appendSum(out)); err != nil {
		return fmt.Errorf("write parse index (a cache; delete %s if this persists): %w", ix.path, err)
	}
	if ix.codec != nil {
		ix.removeJournal() // its entries are in the file now
	}
	ix.dirty = false
	return nil
}

// Paths lists the indexed paths, sorted (for tests and diagnostics).
func (ix *Index[T]) Paths() []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]string, 0, len(ix.entries))
	for p := range ix.entries {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// noFault runs fn, which reads the mapped index file, when the index is mapped,
// with memory faults turned into a panic it recovers: it reports false if fn
// faulted (the file was truncated in place since it was mapped).
func (ix *Index[T]) noFault(fn func()) bool {
	if !ix.mapped() {
		fn()
		return true
	}
	return NoFault(fn)
}

// NoFault runs fn and reports false if it faulted on memory (a mapped file
// truncated meanwhile); any other panic goes on.
func NoFault(fn func()) (ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			ok = false
		}
	}()
	fn()
	return true
}
