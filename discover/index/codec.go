package index

import (
	"encoding/binary"
	"errors"
	"time"
	"unique"
)

// ErrEncoding is what a payload's UnmarshalBinary returns when Dec found its
// bytes damaged; the index then drops the entry and the file is parsed again.
var ErrEncoding = errors.New("parse index entry: bad encoding")

// Enc writes the flat encoding the index file and the adapters' payloads use:
// varints, and strings as a uvarint length then the bytes.
type Enc struct{ Buf []byte }

func (e *Enc) Uint(v uint64)   { e.Buf = binary.AppendUvarint(e.Buf, v) }
func (e *Enc) Int(v int64)     { e.Buf = binary.AppendVarint(e.Buf, v) }
func (e *Enc) Uint64(v uint64) { e.Buf = binary.LittleEndian.AppendUint64(e.Buf, v) }
func (e *Enc) Uint32(v uint32) { e.Buf = binary.LittleEndian.AppendUint32(e.Buf, v) }
func (e *Enc) Byte(c byte)     { e.Buf = append(e.Buf, c) }
func (e *Enc) Str(s string)    { e.Uint(uint64(len(s))); e.Buf = append(e.Buf, s...) }
func (e *Enc) Bytes(b []byte)  { e.Uint(uint64(len(b))); e.Buf = append(e.Buf, b...) }

func (e *Enc) Bool(v bool) {
	if v {
		e.Uint(1)
	} else {
		e.Uint(0)
	}
}

// Time writes t's binary form, which keeps the zone offset exactly, length
// first; the zero time is empty.
func (e *Enc) Time(t time.Time) error {
	if t.IsZero() && t.Location() == time.UTC {
		e.Uint(0)
		return nil
	}
	n := len(e.Buf)
	e.Buf = append(e.Buf, 0) // the length fits in one byte: the form is ≤ 16 bytes
	var err error
	if e.Buf, err = t.AppendBinary(e.Buf); err != nil {
		return err
	}
	e.Buf[n] = byte(len(e.Buf) - n - 1)
	return nil
}

// Dec reads what Enc wrote. After the first damage every read returns zero and
// Done reports false, so a decoder reads every field and checks once.
type Dec struct {
	buf []byte
	bad bool
}

// NewDec reads b.
func NewDec(b []byte) Dec { return Dec{buf: b} }

func (d *Dec) fail() { d.bad, d.buf = true, nil }

// Done reports whether everything was read, undamaged.
func (d *Dec) Done() bool { return !d.bad && len(d.buf) == 0 }

// Bad reports whether the bytes were damaged.
func (d *Dec) Bad() bool { return d.bad }

// Len is how many bytes are left to read.
func (d *Dec) Len() int { return len(d.buf) }

// varint reads one varint with read (binary.Uvarint or binary.Varint).
func varint[T uint64 | int64](d *Dec, read func([]byte) (T, int)) T {
	v, n := read(d.buf)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// fixed reads size bytes, little-endian, with get.
func fixed[T uint32 | uint64](d *Dec, size int, get func([]byte) T) T {
	if len(d.buf) < size {
		d.fail()
		return 0
	}
	v := get(d.buf)
	d.buf = d.buf[size:]
	return v
}

func (d *Dec) Uint() uint64   { return varint(d, binary.Uvarint) }
func (d *Dec) Int() int64     { return varint(d, binary.Varint) }
func (d *Dec) Uint64() uint64 { return fixed(d, 8, binary.LittleEndian.Uint64) }
func (d *Dec) Uint32() uint32 { return fixed(d, 4, binary.LittleEndian.Uint32) }

func (d *Dec) Byte() byte {
	if len(d.buf) < 1 {
		d.fail()
		return 0
	}
	c := d.buf[0]
	d.buf = d.buf[1:]
	return c
}

func (d *Dec) Bool() bool { return d.Uint() == 1 }

// Bytes returns a view of the next length-prefixed bytes, capped so that
// appending to it never writes into what follows.
func (d *Dec) Bytes() []byte {
	n := d.Uint()
	if n > uint64(len(d.buf)) {
		d.fail()
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

func (d *Dec) Str() string { return string(d.Bytes()) }

// Shared is Str for values that repeat across files (directories, models,
// versions, modes), which a listing decodes all at once: the canonical copy
// (unique.Make), allocated only the first time.
func (d *Dec) Shared() string {
	b := d.Bytes()
	if len(b) == 0 {
		return ""
	}
	return unique.Make(string(b)).Value()
}

// Count reads a slice length, bounded by what the remaining bytes can hold.
func (d *Dec) Count() int {
	n := d.Uint()
	if n > uint64(len(d.buf)) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *Dec) Time() time.Time {
	b := d.Bytes()
	if len(b) == 0 {
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalBinary(b); err != nil {
		d.fail()
		return time.Time{}
	}
	return t
}
