package index

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"

	"github.com/agentctl/agentctl/internal/agentfs"
)

// Lookups read one bucket, not the index. A binary index file ends (before its
// trailer) in a bucket directory: entries are grouped by fnv-1a(path) mod k (k a
// power of two, about half the entry count), and the directory holds each
// bucket's start offset (k+1 little-endian uint64, the last one the end of the
// entries) and each bucket's CRC-32C (k uint32), then a footer: the directory's
// offset and k (uint64 each). A command that names one session (LoadPoint) reads
// the header, the footer, two offsets, a CRC and one bucket: O(1) bytes whatever
// the history's size.
//
// What such a command parses goes to a journal beside the index file (name.journal,
// bounded by journalCap): records of (length, CRC-32C, header hash, entry), appended
// with one write each. Full loads apply the journal over the index, and full saves
// fold it in and remove it; a torn or foreign record ends the journal's reading.

const (
	footerLen  = 16
	journalCap = 1 << 20
	bucketCap  = 64 << 20 // a bucket larger than this is damage
)

// bucketCount is the directory size for n entries.
func bucketCount(n int) uint64 {
	if n < 2 {
		return 1
	}
	return 1 << bits.Len(uint(n/2-1)) // ≥ n/2, a power of two
}

// pathHash is 64-bit FNV-1a (hash/fnv's New64a), inline: a save hashes every
// path, and the hash.Hash64 interface cost an allocation and a copy each time.
func pathHash(p string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(p); i++ {
		h ^= uint64(p[i])
		h *= 1099511628211
	}
	return h
}

func bucketOf(p string, k uint64) uint64 { return pathHash(p) & (k - 1) }

// appendDirectory writes the bucket directory and the footer after the entries.
func appendDirectory(e *Enc, starts []uint64) {
	dirStart := uint64(len(e.Buf))
	k := uint64(len(starts) - 1)
	body := e.Buf
	for _, s := range starts {
		e.Buf = binary.LittleEndian.AppendUint64(e.Buf, s)
	}
	for i := uint64(0); i < k; i++ {
		e.Buf = binary.LittleEndian.AppendUint32(e.Buf, crc32.Checksum(body[starts[i]:starts[i+1]], castagnoli))
	}
	e.Buf = binary.LittleEndian.AppendUint64(e.Buf, dirStart)
	e.Buf = binary.LittleEndian.AppendUint64(e.Buf, k)
}

// readFooter checks the footer of body (a file without its trailer) and returns
// where the directory starts and the bucket count.
func readFooter(body []byte) (dirStart, k uint64, ok bool) {
	if len(body) < footerLen {
		return 0, 0, false
	}
	f := body[len(body)-footerLen:]
	dirStart, k = binary.LittleEndian.Uint64(f), binary.LittleEndian.Uint64(f[8:])
	return dirStart, k, validDirectory(uint64(len(body)), dirStart, k)
}

func validDirectory(bodyLen, dirStart, k uint64) bool {
	return k > 0 && k&(k-1) == 0 && k < 1<<40 && dirStart >= uint64(len(binaryMagic)) &&
		dirStart <= bodyLen && bodyLen-dirStart == (k+1)*8+k*4+footerLen
}

// pointFile reads single buckets of an index file.
type pointFile struct {
	f        *os.File
	path     string
	dirStart uint64
	k        uint64
}

// openPoint opens the index file at path for bucket reads, or returns nil when it
// is missing or not a binary index of header.
func openPoint(path, header string) *pointFile {
	f, err := agentfs.Open(path)
	if err != nil {
		return nil
	}
	p := &pointFile{f: f, path: path}
	st, err := f.Stat()
	size := int64(0)
	if err == nil {
		size = st.Size()
	}
	var want Enc
	want.Buf = append(want.Buf, binaryMagic...)
	want.Str(header)
	tail := make([]byte, footerLen+sumLen)
	head := make([]byte, len(want.Buf))
	if size < int64(len(head)+len(tail)) ||
		!p.read(head, 0) || string(head) != string(want.Buf) ||
		!p.read(tail, size-int64(len(tail))) || string(tail[footerLen:footerLen+len(sumMagic)]) != sumMagic {
		f.Close()
		return nil
	}
	p.dirStart, p.k = binary.LittleEndian.Uint64(tail), binary.LittleEndian.Uint64(tail[8:])
	if !validDirectory(uint64(size)-uint64(sumLen), p.dirStart, p.k) || p.dirStart < uint64(len(head)) {
		f.Close()
		return nil
	}
	return p
}

func (p *pointFile) read(b []byte, off int64) bool {
	n, err := agentfs.ReadAt(p.f, p.path, b, off)
	return err == nil && n == len(b)
}

// bucket returns the verified bytes of the bucket path belongs to.
func (p *pointFile) bucket(path string) ([]byte, bool) {
	b := bucketOf(path, p.k)
	var se [16]byte
	var sum [4]byte
	if !p.read(se[:], int64(p.dirStart+b*8)) || !p.read(sum[:], int64(p.dirStart+(p.k+1)*8+b*4)) {
		return nil, false
	}
	start, end := binary.LittleEndian.Uint64(se[:]), binary.LittleEndian.Uint64(se[8:])
	if start > end || end > p.dirStart || end-start > bucketCap || start < uint64(len(binaryMagic)) {
		return nil, false
	}
	buf := make([]byte, end-start)
	if !p.read(buf, int64(start)) || crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(sum[:]) {
		return nil, false
	}
	return buf, true
}

// journalPath is the journal beside the index file.
func journalPath(indexPath string) string {
	return indexPath[:len(indexPath)-len(".index")] + ".journal"
}

func headerHash(header string) uint64 { return pathHash(header) }

// readJournal returns the entries of the journal of ix, later records winning.
func (ix *Index[T]) readJournal() map[string]*slot[T] {
	b, err := agentfs.ReadIndexFile(journalPath(ix.path))
	if err != nil || len(b) == 0 {
		return nil
	}
	hh := headerHash(ix.header)
	out := map[string]*slot[T]{}
	for len(b) >= 16 {
		n := uint64(binary.LittleEndian.Uint32(b))
		sum := binary.LittleEndian.Uint32(b[4:])
		if uint64(len(b)-8) < n || n < 8 {
			break
		}
		rec := b[8 : 8+n]
		b = b[8+n:]
		if crc32.Checksum(rec, castagnoli) != sum {
			break
		}
		if binary.LittleEndian.Uint64(rec) != hh {
			continue // another version's record
		}
		d := NewDec(rec[8:])
		s := &slot[T]{}
		pl, ok := decodeEntry(&d, s, &lazyPayload{})
		if !ok || !d.Done() {
			break
		}
		out[string(pl)] = s
	}
	return out
}

// appendJournal appends one record per entry to the journal.
func (ix *Index[T]) appendJournal(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	hh := headerHash(ix.header)
	var out []byte
	for _, p := range paths {
		s := ix.entries[p]
		var e Enc
		e.Uint64(hh)
		var raw []byte
		present := false
		if s.lazy != nil {
			raw, present = s.lazy.raw, true
		} else if s.Val != nil && ix.codec.present(*s.Val) {
			enc, err := ix.codec.encode(*s.Val)
			if err != nil {
				return err
			}
			raw, present = enc, true
		}
		appendEntry(&e, p, s.Head.Stamp, s.Head.Offset, s.Head.Check, s.Head.Partial, present, raw)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(e.Buf)))
		out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(e.Buf, castagnoli))
		out = append(out, e.Buf...)
	}
	jp := journalPath(ix.path)
	flags := os.O_WRONLY | os.O_APPEND | os.O_CREATE
	if st, err := os.Stat(jp); err == nil && st.Size()+int64(len(out)) > journalCap {
		flags |= os.O_TRUNC // a cache: what it held is parsed again when needed
	}
	if err := os.MkdirAll(filepath.Dir(jp), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(jp, flags, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(out)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeJournal deletes the journal once a full save holds its entries.
func (ix *Index[T]) removeJournal() {
	if err := os.Remove(journalPath(ix.path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return
	}
}
