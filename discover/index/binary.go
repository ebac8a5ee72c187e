package index

import (
	"encoding"
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
//	payload (uvarint length + bytes); entries are grouped by bucket (point.go), and
//	the bucket directory and footer follow them.
const binaryMagic = "agentctl-index-bin2\n"

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

// encodeBinary writes every entry, grouped by the bucket of its path's hash,
// then the bucket directory (see point.go), so that a lookup reads one bucket.
// Entries never decoded are written back as they were read; damaged ones are
// dropped.
func encodeBinary[T any](header string, entries map[string]*slot[T], c *binaryCodec[T]) ([]byte, error) {
	type keyed struct {
		bucket uint64
		path   string
	}
	keys := make([]keyed, 0, len(entries))
	size := len(binaryMagic) + len(header) + 16
	k := bucketCount(len(entries))
	for p, s := range entries {
		if s.lazy != nil {
			size += len(s.lazy.raw)
		}
		keys = append(keys, keyed{bucketOf(p, k), p}) // hashed once, not per comparison
		size += len(p) + 48
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].bucket != keys[j].bucket {
			return keys[i].bucket < keys[j].bucket
		}
		return keys[i].path < keys[j].path
	})
	type out struct {
		path    string
		bucket  uint64
		raw     []byte
		present bool
		s       *slot[T]
	}
	list := make([]out, 0, len(keys))
	for _, kp := range keys {
		s := entries[kp.path]
		o := out{path: kp.path, bucket: kp.bucket, s: s}
		if l := s.lazy; l != nil {
			// Read from the file and not replaced since: write it back as it was,
			// unless it turned out damaged.
			if l.damaged.Load() {
				continue
			}
			o.raw, o.present = l.raw, true
		} else if s.Val != nil && c.present(*s.Val) {
			enc, err := c.encode(*s.Val)
			if err != nil {
				return nil, err
			}
			o.raw, o.present = enc, true
			size += len(enc)
		}
		list = append(list, o)
	}
	// Sized once the payloads are encoded: a buffer grown by appending (an
	// index written whole after a cold parse) copies itself into fresh memory
	// again and again.
	e := Enc{Buf: make([]byte, 0, size+int(k)*12+32)}
	e.Buf = append(e.Buf, binaryMagic...)
	e.Str(header)
	e.Uint(uint64(len(list)))
	starts := make([]uint64, k+1)
	next := uint64(0) // the next bucket whose start is not set yet
	for _, o := range list {
		for b := o.bucket; next <= b; next++ {
			starts[next] = uint64(len(e.Buf))
		}
		// Field by field: a lazy payload may be being decoded concurrently.
		s := o.s
		appendEntry(&e, o.path, s.Head.Stamp, s.Head.Offset, s.Head.Check, s.Head.Partial, o.present, o.raw)
	}
	for ; next <= k; next++ {
		starts[next] = uint64(len(e.Buf))
	}
	appendDirectory(&e, starts)
	return e.Buf, nil
}

// appendEntry writes one entry as the index file and the journal hold it.
func appendEntry(e *Enc, path string, stamp Stamp, offset int64, check uint64, partial, present bool, raw []byte) {
	e.Str(path)
	e.Uint(stamp.Dev)
	e.Uint(stamp.Ino)
	e.Int(stamp.Size)
	e.Int(stamp.MtimeNs)
	e.Int(offset)
	e.Uint64(check)
	var flags byte
	if partial {
		flags |= 1
	}
	if present {
		flags |= 2
	}
	e.Byte(flags)
	e.Bytes(raw)
}

// decodeEntry reads what appendEntry wrote into s (its payload, if any, left
// encoded in lazy) and returns the path, a view of the decoder's bytes.
func decodeEntry[T any](d *Dec, s *slot[T], lazy *lazyPayload) ([]byte, bool) {
	pl := d.Bytes()
	s.Head.Stamp.Dev = d.Uint()
	s.Head.Stamp.Ino = d.Uint()
	s.Head.Stamp.Size = d.Int()
	s.Head.Stamp.MtimeNs = d.Int()
	s.Head.Offset = d.Int()
	s.Head.Check = d.Uint64()
	flags := d.Byte()
	raw := d.Bytes()
	if d.Bad() {
		return nil, false
	}
	s.Head.Partial = flags&1 != 0
	if flags&2 != 0 {
		s.lazy = lazy
		s.lazy.raw = raw
	}
	return pl, true
}

// decodeBinary reads what encodeBinary wrote (b without its trailer). The paths
// are copied out of b (b may be a mapped file: see Load), a few allocations for
// all of them; the payloads stay encoded, views of b, until Get.
func decodeBinary[T any](b []byte, header string) (map[string]*slot[T], bool) {
	if len(b) < len(binaryMagic) || string(b[:len(binaryMagic)]) != binaryMagic {
		return nil, false
	}
	dirStart, _, ok := readFooter(b)
	if !ok {
		return nil, false
	}
	entriesPart := b[:dirStart]
	d := NewDec(entriesPart[len(binaryMagic):])
	if h := d.Bytes(); d.Bad() || string(h) != header {
		return nil, false
	}
	n := d.Uint()
	if d.Bad() || n > uint64(len(b)) {
		return nil, false
	}
	entries := make(map[string]*slot[T], n)
	slots := make([]slot[T], n) // one allocation for all of them
	lazies := make([]lazyPayload, n)
	var paths pathArena
	for i := range slots {
		pl, ok := decodeEntry(&d, &slots[i], &lazies[i])
		if !ok {
			return nil, false
		}
		entries[paths.str(pl)] = &slots[i]
	}
	if !d.Done() {
		return nil, false
	}
	return entries, true
}

// pathArena copies strings into shared chunks: one allocation per 64 KiB of
// paths instead of one per path. A chunk is never appended to past its
// capacity, so the strings already handed out are never moved.
type pathArena struct{ buf []byte }

func (a *pathArena) str(b []byte) string {
	const chunk = 64 << 10
	if len(b) == 0 {
		return ""
	}
	if len(b) > cap(a.buf)-len(a.buf) {
		if len(b) > chunk/4 {
			return string(b)
		}
		a.buf = make([]byte, 0, chunk)
	}
	i := len(a.buf)
	a.buf = append(a.buf, b...)
	return unsafe.String(&a.buf[i], len(b))
}
