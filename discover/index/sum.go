package index

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
)

// Every index file ends in a trailer: sumMagic and the CRC-32C of everything
// before it (little-endian). A file whose trailer is missing or does not match —
// a flipped bit, a truncated or extended file, one written by a version without
// the trailer — is discarded and rebuilt, never trusted (product.md §10: deleting
// the cache changes no output, so a damaged cache must not either). The header
// inside names the index, its version and the payload's shape, so a file of
// another adapter or version is discarded too.
const sumMagic = "\x00crc32c"

const sumLen = len(sumMagic) + 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendSum appends the trailer to b.
func appendSum(b []byte) []byte {
	sum := crc32.Checksum(b, castagnoli)
	b = append(b, sumMagic...)
	return binary.LittleEndian.AppendUint32(b, sum)
}

// verifySum returns b without its trailer, and whether the trailer matches.
func verifySum(b []byte) ([]byte, bool) {
	if len(b) < sumLen {
		return nil, false
	}
	body, tr := b[:len(b)-sumLen], b[len(b)-sumLen:]
	if !bytes.Equal(tr[:len(sumMagic)], []byte(sumMagic)) {
		return nil, false
	}
	return body, binary.LittleEndian.Uint32(tr[len(sumMagic):]) == crc32.Checksum(body, castagnoli)
}

// verifySumReader is verifySum over a file read sequentially: it returns the
// length of the body.
func verifySumReader(r io.ReaderAt) (int64, bool) {
	size, err := sizeOf(r)
	if err != nil || size < int64(sumLen) {
		return 0, false
	}
	n := size - int64(sumLen)
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, n)); err != nil {
		return 0, false
	}
	tr := make([]byte, sumLen)
	if _, err := r.ReadAt(tr, n); err != nil {
		return 0, false
	}
	if !bytes.Equal(tr[:len(sumMagic)], []byte(sumMagic)) || binary.LittleEndian.Uint32(tr[len(sumMagic):]) != h.Sum32() {
		return 0, false
	}
	return n, true
}

func sizeOf(r io.ReaderAt) (int64, error) {
	if f, ok := r.(interface {
		Seek(int64, int) (int64, error)
	}); ok {
		return f.Seek(0, io.SeekEnd)
	}
	return 0, io.ErrUnexpectedEOF
}
