package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/discover"
)

//go:generate go run ./discover/internal/sessiongen -src discover/session.go -json jsonsession_gen.go

// appendSessionJSON appends s as encoding/json (elemEncoder) would print it: an
// element of an indented array (encoding/json with SetIndent("  ", "  ") and
// SetEscapeHTML(false)), without the leading "  " and the trailing newline.
// Listings print tens of thousands of sessions, and encoding them by reflection
// was most of `list --json`'s CPU and garbage (README "Performance": the mixed
// home's listing would miss its time target). ok is false when a value needs
// encoding/json's own handling (an error such as a NaN cost or a year beyond
// 9999): the caller then encodes that session the generic way, so the output —
// and every error — stays exactly encoding/json's. The fields, their names,
// order and omissions come from discover.Session itself (sessionFields, written
// by go generate); TestSessionJSONMatchesStdlib compares the two on every field.
func appendSessionJSON(b []byte, s *discover.Session) (_ []byte, ok bool) {
	w := jsonElem{b: append(b, '{'), ind: indents[:len("\n    ")], first: true, ok: true}
	w.sessionFields(s)
	w.b = append(w.b, "\n  }"...)
	return w.b, w.ok
}

// jsonElem writes one array element's object as encoding/json indents it; ok
// turns false at the first value encoding/json would refuse.
type jsonElem struct {
	b     []byte
	ind   string // a field's newline and indentation: a prefix of indents
	first bool   // no field written yet at this depth
	ok    bool
}

// key starts a field.
func (w *jsonElem) key(k string) {
	if w.first {
		w.first = false
	} else {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, w.ind...)
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, `": `...)
}

// str writes a string field that is omitted when empty.
func (w *jsonElem) str(k, v string) {
	if v != "" {
		w.key(k)
		w.string(v)
	}
}

func (w *jsonElem) string(v string) { w.b = appendJSONString(w.b, v) }
func (w *jsonElem) raw(v string)    { w.b = append(w.b, v...) }
func (w *jsonElem) int(v int64)     { w.b = strconv.AppendInt(w.b, v, 10) }

func (w *jsonElem) float(f float64) {
	var ok bool
	if w.b, ok = appendJSONFloat(w.b, f); !ok {
		w.ok = false
	}
}

func (w *jsonElem) time(t time.Time) {
	var ok bool
	if w.b, ok = appendJSONTime(w.b, t); !ok {
		w.ok = false
	}
}

// open starts an object value whose fields follow, one level deeper; close
// ends it.
func (w *jsonElem) open() {
	w.b = append(w.b, '{')
	w.ind = indents[:len(w.ind)+2]
	w.first = true
}

// indents is every depth's newline and indentation (a prefix), deeper than
// any Session field goes.
const indents = "\n                    "

func (w *jsonElem) close() {
	w.ind = w.ind[:len(w.ind)-2]
	w.b = append(w.b, w.ind...)
	w.b = append(w.b, '}')
	w.first = false
}

// strings writes a non-empty array of strings.
func (w *jsonElem) strings(v []string) {
	w.b = append(w.b, '[')
	for i, m := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, w.ind...)
		w.b = append(w.b, "  "...)
		w.b = appendJSONString(w.b, m)
	}
	w.b = append(w.b, w.ind...)
	w.b = append(w.b, ']')
}

// stringMap writes a non-empty map of strings, keys sorted as encoding/json
// sorts them.
func (w *jsonElem) stringMap(m map[string]string) {
	w.b = append(w.b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, w.ind...)
		w.b = append(w.b, "  "...)
		w.b = appendJSONString(w.b, k)
		w.b = append(w.b, ": "...)
		w.b = appendJSONString(w.b, m[k])
	}
	w.b = append(w.b, w.ind...)
	w.b = append(w.b, '}')
}

// anyMap writes a non-empty map[string]any (appendExtraJSON).
func (w *jsonElem) anyMap(m map[string]any) {
	var ok bool
	if w.b, ok = appendExtraJSON(w.b, m, w.ind); !ok {
		w.ok = false
	}
}

// value writes v the generic way (encoding/json at this depth): for values
// rare in a listing, such as a launch's budget.
func (w *jsonElem) value(v any) {
	sub, err := json.MarshalIndent(v, w.ind[1:], "  ")
	if err != nil {
		w.ok = false
		return
	}
	w.b = append(w.b, sub...)
}

// appendExtraJSON appends the extra map as a field's value at indentation ind
// (a newline and spaces). Strings, booleans and
// numbers are written directly; any other value (nested maps, slices, nil) is
// encoded by encoding/json at its indentation.
func appendExtraJSON(b []byte, m map[string]any, ind string) (_ []byte, ok bool) {
	var arr [16]string
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, ind...)
		b = append(b, "  "...)
		b = appendJSONString(b, k)
		b = append(b, ": "...)
		switch v := m[k].(type) {
		case string:
			b = appendJSONString(b, v)
		case bool:
			b = strconv.AppendBool(b, v)
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case float64:
			if b, ok = appendJSONFloat(b, v); !ok {
				return b, false
			}
		default:
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent(ind[1:]+"  ", "  ")
			if enc.Encode(v) != nil {
				return b, false
			}
			b = append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, ind...)
	b = append(b, '}')
	return b, true
}

// appendJSONTime is time.Time.MarshalJSON without its allocation; ok is false
// where MarshalJSON fails.
func appendJSONTime(b []byte, t time.Time) (_ []byte, ok bool) {
	b = append(b, '"')
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	// MarshalJSON's checks (time.appendStrictRFC3339).
	num2 := func(b []byte) byte { return 10*(b[0]-'0') + (b[1] - '0') }
	switch {
	case len(b) < n0+5 || b[n0+4] != '-': // year must be exactly 4 digits wide
		return b, false
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		if ('0' <= c && c <= '9') || num2(b[len(b)-len("07:00"):]) >= 24 {
			return b, false
		}
	}
	return append(b, '"'), true
}

// appendJSONFloat is encoding/json's float64 encoding; ok is false for NaN and
// infinities, which it refuses.
func appendJSONFloat(b []byte, f float64) (_ []byte, ok bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendJSONString is encoding/json's string encoding with HTML escaping off:
// quotes, backslashes and control characters escaped, invalid UTF-8 replaced by
// U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
