package index

import (
	"encoding"
	"encoding/binary"
	"reflect"
	"sort"
	"unsafe"
)

// The binary format, used when the payload type encodes itself
// (encoding.BinaryMarshaler and BinaryUnmarshaler). A listing of a big history
// loads the index on every command, so it must cost little more than reading the
// file: no reflection, paths not copied, payloads decoded only when asked for.
//
//	magic, header (uvarint length + bytes), entry count (uvarint), then per entry:
//	path (uvarint length + bytes), dev, ino (uvarint), size, mtime, offset (varint),
//	check (8 bytes little-endian), flags (bit 0: partial, bit 1: payload present),
//	payload (uvarint length + bytes).
const binaryMagic = "agentctl-index-bin1\n"

// binaryCodec encodes and decodes payloads of type T through their own methods.
type binaryCodec[T any] struct {
	encode func(T) ([]byte, error)
	decode func([]byte, *T) error
	// present reports whether a payload is worth storing (a nil pointer is not).
	present func(T) bool
}

// binaryCodecOf returns the codec for T, or nil when T does not encode itself.
// T may be a pointer to a type with the methods, or a type whose pointer has them.
func binaryCodecOf[T any]() *binaryCodec[T] {
	t := reflect.TypeFor[T]()
	um := reflect.TypeFor[encoding.BinaryUnmarshaler]()
	m := reflect.TypeFor[encoding.BinaryMarshaler]()
	switch {
	case t.Kind() == reflect.Pointer && t.Implements(m) && t.Implements(um):
		elem := t.Elem()
		return &binaryCodec[T]{
			encode: func(v T) ([]byte, error) { return any(v).(encoding.BinaryMarshaler).MarshalBinary() },
			decode: func(b []byte, p *T) error {
				v := reflect.New(elem).Interface()
				if err := v.(encoding.BinaryUnmarshaler).UnmarshalBinary(b); err != nil {
					return err
				}
				*p = v.(T)
				return nil
			},
			present: func(v T) bool { return !reflect.ValueOf(&v).Elem().IsNil() },
		}
	case t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(m) && reflect.PointerTo(t).Implements(um):
		return &binaryCodec[T]{
			encode: func(v T) ([]byte, error) { return any(&v).(encoding.BinaryMarshaler).MarshalBinary() },
			decode: func(b []byte, p *T) error {
				var v T
				if err := any(&v).(encoding.BinaryUnmarshaler).UnmarshalBinary(b); err != nil {
					return err
				}
				*p = v
				return nil
			},
			present: func(T) bool { return true },
		}
	}
	return nil
}

// encodeBinary writes every entry, sorted by path. Entries never decoded are
// written back as they were read; damaged ones are dropped.
func encodeBinary[T any](header string, entries map[string]*slot[T], c *binaryCodec[T]) ([]byte, error) {
	paths := make([]string, 0, len(entries))
	size := len(binaryMagic) + len(header) + 16
	for p, s := range entries {
		if s.lazy != nil {
			size += len(s.lazy.raw)
		}
		paths = append(paths, p)
		size += len(p) + 48
	}
	sort.Strings(paths)
	b := make([]byte, 0, size)
	b = append(b, binaryMagic...)
	b = binary.AppendUvarint(b, uint64(len(header)))
	b = append(b, header...)
	type out struct {
		path    string
		raw     []byte
		present bool
		s       *slot[T]
	}
	list := make([]out, 0, len(paths))
	for _, p := range paths {
		s := entries[p]
		o := out{path: p, s: s}
		if l := s.lazy; l != nil {
			// Read from the file and not replaced since: write it back as it was,
			// unless it turned out damaged.
			if l.damaged.Load() {
				continue
			}
			o.raw, o.present = l.raw, true
		} else if c.present(s.E.Payload) {
			enc, err := c.encode(s.E.Payload)
			if err != nil {
				return nil, err
			}
			o.raw, o.present = enc, true
		}
		list = append(list, o)
	}
	b = binary.AppendUvarint(b, uint64(len(list)))
	for _, o := range list {
		p, s := o.path, o.s
		// Field by field: a lazy payload may be being decoded concurrently.
		stamp, offset, check, partial := s.E.Stamp, s.E.Offset, s.E.Check, s.E.Partial
		present := o.present
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = binary.AppendUvarint(b, stamp.Dev)
		b = binary.AppendUvarint(b, stamp.Ino)
		b = binary.AppendVarint(b, stamp.Size)
		b = binary.AppendVarint(b, stamp.MtimeNs)
		b = binary.AppendVarint(b, offset)
		b = binary.LittleEndian.AppendUint64(b, check)
		var flags byte
		if partial {
			flags |= 1
		}
		if present {
			flags |= 2
		}
		b = append(b, flags)
		b = binary.AppendUvarint(b, uint64(len(o.raw)))
		b = append(b, o.raw...)
	}
	return b, nil
}

// decodeBinary reads what encodeBinary wrote. The paths are views of b (which is
// never modified afterwards), and payloads stay encoded until Get.
func decodeBinary[T any](b []byte, header string) (map[string]*slot[T], bool) {
	if len(b) < len(binaryMagic) || string(b[:len(binaryMagic)]) != binaryMagic {
		return nil, false
	}
	str := unsafe.String(unsafe.SliceData(b), len(b))
	d := binDec{b: b, off: len(binaryMagic)}
	if h := d.bytes(); d.bad || string(h) != header {
		return nil, false
	}
	n := d.uvarint()
	if d.bad || n > uint64(len(b)) {
		return nil, false
	}
	entries := make(map[string]*slot[T], n)
	slots := make([]slot[T], n) // one allocation for all of them
	lazies := make([]lazyPayload, n)
	for i := range slots {
		pl := d.bytes()
		if d.bad {
			return nil, false
		}
		path := str[d.off-len(pl) : d.off]
		s := &slots[i]
		s.E.Stamp.Dev = d.uvarint()
		s.E.Stamp.Ino = d.uvarint()
		s.E.Stamp.Size = d.varint()
		s.E.Stamp.MtimeNs = d.varint()
		s.E.Offset = d.varint()
		s.E.Check = d.uint64()
		flags := d.byte()
		raw := d.bytes()
		if d.bad {
			return nil, false
		}
		s.E.Partial = flags&1 != 0
		if flags&2 != 0 {
			s.lazy = &lazies[i]
			s.lazy.raw = raw
		}
		entries[path] = s
	}
	if d.off != len(b) {
		return nil, false
	}
	return entries, true
}

type binDec struct {
	b   []byte
	off int
	bad bool
}

func (d *binDec) uvarint() uint64 {
	if d.bad {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.off += n
	return v
}

func (d *binDec) varint() int64 {
	if d.bad {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.off += n
	return v
}

func (d *binDec) uint64() uint64 {
	if d.bad || len(d.b)-d.off < 8 {
		d.bad = true
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

func (d *binDec) byte() byte {
	if d.bad || d.off >= len(d.b) {
		d.bad = true
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *binDec) bytes() []byte {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)-d.off) {
		d.bad = true
		return nil
	}
	s := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return s
}
