package index

import (
	"hash/fnv"
	"io"
	"reflect"
	"strings"
)

// checkLen is how many bytes before the parsed offset PrefixSum hashes: enough to
// cover the tail of the last parsed line, whose end alone (a common suffix such as
// `"gitBranch":"HEAD"}`) would not tell a rewritten file from the original.
const checkLen = 512

// PrefixSum hashes the up to 512 bytes before off. Store it with the entry; before
// parsing appended bytes, compare it again to detect a file that was rewritten in
// place (same inode, not append-only), which must be rebuilt instead.
func PrefixSum(r io.ReaderAt, off int64) (uint64, error) {
	start := off - checkLen
	if start < 0 {
		start = 0
	}
	buf := make([]byte, off-start)
	if _, err := r.ReadAt(buf, start); err != nil && !(err == io.EOF && len(buf) == 0) {
		return 0, err
	}
	h := fnv.New64a()
	h.Write(buf)
	return h.Sum64() ^ uint64(off), nil
}

// typeSig describes T's shape (field names and kinds, recursively), so that a
// payload type that changed is discarded instead of half-decoded by gob.
func typeSig[T any]() string {
	var b strings.Builder
	writeSig(&b, reflect.TypeOf((*T)(nil)).Elem(), map[reflect.Type]bool{})
	h := fnv.New64a()
	h.Write([]byte(b.String()))
	return hex64(h.Sum64())
}

func writeSig(b *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	b.WriteString(t.Kind().String())
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		b.WriteByte('<')
		writeSig(b, t.Elem(), seen)
		b.WriteByte('>')
	case reflect.Map:
		b.WriteByte('<')
		writeSig(b, t.Key(), seen)
		b.WriteByte(',')
		writeSig(b, t.Elem(), seen)
		b.WriteByte('>')
	case reflect.Struct:
		if seen[t] {
			b.WriteString(t.Name())
			return
		}
		seen[t] = true
		b.WriteByte('{')
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			b.WriteString(f.Name)
			b.WriteByte(':')
			writeSig(b, f.Type, seen)
			b.WriteByte(';')
		}
		b.WriteByte('}')
	}
}

func hex64(v uint64) string {
	const digits = "0123456789abcdef"
	var out [16]byte
	for i := 15; i >= 0; i-- {
		out[i] = digits[v&0xf]
		v >>= 4
	}
	return string(out[:])
}
