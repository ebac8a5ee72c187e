package pi

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"unsafe"

	"github.com/agentctl/agentctl/jsonl"
)

// A cold listing decodes every line of every session file into a sumEntry;
// with encoding/json that is most of its time (it validates the line, then
// walks it again to skip the content the listing never needs). scanEntry does
// both in one pass over the bytes, for the lines it can answer exactly: those
// where json.Unmarshal(line, &e) would succeed and fill e the same way. It
// reports false for any other line (invalid JSON, a value of an unexpected
// type, a key that only differs in case or is escaped, a repeated key, a
// string to unescape that it cannot copy as is…), and the caller decodes that
// line with encoding/json, so results never depend on which path ran.

// maxScanDepth bounds the nesting scanEntry follows; deeper lines go to
// encoding/json (which has limits of its own).
const maxScanDepth = 512

// strictScanner validates JSON as encoding/json does (RFC 8259: no control
// characters in strings, only the standard escapes, the number grammar,
// true/false/null), returning -1 where a line is not valid.
type strictScanner struct {
	b []byte
	// clean: b is jsonl.Clean, so no string in it can be invalid and skip
	// finds a string's end by its quotes alone.
	clean bool
}

// skip returns the index past the string at b[i] == '"' when only its end is
// wanted, or -1.
func (s *strictScanner) skip(i int) int {
	if !s.clean {
		j, _ := s.str(i)
		return j
	}
	return jsonl.StringEnd(s.b, i)
}

func (s *strictScanner) ws(i int) int {
	for i < len(s.b) {
		switch s.b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// str returns the index past the string at b[i] == '"' and whether it holds
// bytes that json.Unmarshal would not copy as they are (escapes, non-ASCII).
func (s *strictScanner) str(i int) (int, bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	b := s.b
	i++
	special := false
	for {
		// Strings are most of a line's bytes: find the closing quote
		// candidate with IndexByte (vectorised), then check the bytes before
		// it eight at a time for a backslash, a control character or a
		// non-ASCII byte; only where one is found is it walked byte by byte.
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1, false
		}
		q += i
		for i < q {
			for i+8 <= q {
				x := binary.LittleEndian.Uint64(b[i:])
				e := x ^ (ones * '\\')
				if ((e-ones)&^e|(x-ones*0x20)|x)&highs != 0 {
					break
				}
				i += 8
			}
			if i >= q {
				break
			}
			c := b[i]
			switch {
			case c == '\\':
				special = true
				if i+1 >= len(b) {
					return -1, false
				}
				switch b[i+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					i += 2
				case 'u':
					if i+6 > len(b) {
						return -1, false
					}
					for _, h := range b[i+2 : i+6] {
						if !isHexDigit(h) {
							return -1, false
						}
					}
					i += 6
				default:
					return -1, false
				}
			case c < 0x20:
				return -1, false
			default:
				if c >= 0x80 {
					special = true
				}
				i++
			}
		}
		if i == q {
			return q + 1, special
		}
		// An escape ran past q: that quote was escaped; look for the next.
	}
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// num returns the index past the number at b[i], and whether it is a plain
// integer (no fraction or exponent).
func (s *strictScanner) num(i int) (int, bool) {
	b := s.b
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return -1, false
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, integer
}

// value returns the index past the value starting at b[i] (no leading
// whitespace), or -1.
func (s *strictScanner) value(i, depth int) int {
	b := s.b
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; c {
	case '"':
		return s.skip(i)
	case '{', '[':
		if depth >= maxScanDepth {
			return -1
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = s.ws(i + 1)
		if i < len(b) && b[i] == closer {
			return i + 1
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1
				}
				if i = s.skip(i); i < 0 {
					return -1
				}
				if i = s.ws(i); i >= len(b) || b[i] != ':' {
					return -1
				}
				i = s.ws(i + 1)
			}
			if i = s.value(i, depth+1); i < 0 {
				return -1
			}
			if i = s.ws(i); i >= len(b) {
				return -1
			}
			switch b[i] {
			case ',':
				i = s.ws(i + 1)
			case closer:
				return i + 1
			default:
				return -1
			}
		}
	case 't':
		return s.lit(i, "true")
	case 'f':
		return s.lit(i, "false")
	case 'n':
		return s.lit(i, "null")
	default:
		j, _ := s.num(i)
		return j
	}
}

func (s *strictScanner) lit(i int, word string) int {
	if len(s.b)-i >= len(word) && string(s.b[i:i+len(word)]) == word {
		return i + len(word)
	}
	return -1
}

// object walks the object at b[i] == '{', calling field for each member with
// the key's raw bytes (without quotes; plain false when escaped or not ASCII)
// and the index where its value starts; field returns the index past the
// value (s.value for a value it does not want), or -1 to give up. object
// returns the index past the object, or -1 (invalid, or given up).
func (s *strictScanner) object(i, depth int, field func(key []byte, plain bool, v0 int) int) int {
	b := s.b
	if i >= len(b) || b[i] != '{' || depth >= maxScanDepth {
		return -1
	}
	i = s.ws(i + 1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		k0 := i
		k1, special := s.str(i)
		if k1 < 0 {
			return -1
		}
		if i = s.ws(k1); i >= len(b) || b[i] != ':' {
			return -1
		}
		v1 := field(b[k0+1:k1-1], !special && asciiKey(b[k0+1:k1-1]), s.ws(i+1))
		if v1 < 0 {
			return -1
		}
		if i = s.ws(v1); i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = s.ws(i + 1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// known reports whether key names one of fields, exactly (exact) or only
// case-insensitively as encoding/json also matches (exact false, found true).
func known(key []byte, fields []string) (idx int, exact, found bool) {
	for i, f := range fields {
		if string(key) == f {
			return i, true, true
		}
	}
	for i, f := range fields {
		if len(key) == len(f) && equalFoldASCII(key, f) {
			return i, false, true
		}
	}
	return -1, false, false
}

// equalFoldASCII is a conservative case-insensitive comparison: any non-ASCII
// byte counts as a possible match (encoding/json folds Unicode too), so such
// keys are left to encoding/json.
func equalFoldASCII(key []byte, f string) bool {
	for i := range len(key) {
		a, c := key[i], f[i]
		if a >= 0x80 {
			return true
		}
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if a != c {
			return false
		}
	}
	return true
}

// plainKey: a key with a non-ASCII byte may fold onto a field name (the Kelvin
// sign is a 'k'): only ASCII keys are compared here.
func asciiKey(key []byte) bool {
	for _, c := range key {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

var (
	entryFields   = []string{"type", "id", "timestamp", "provider", "modelId", "name", "message"}
	messageFields = []string{"role", "provider", "model", "usage", "stopReason", "errorMessage", "timestamp"}
	usageFields   = []string{"input", "output", "cacheRead", "cacheWrite", "cost"}
)

// field is one member a scanEntry level decodes: its value's bytes (valid
// JSON), whether a string value needs unescaping, and where it starts and ends.
type field struct {
	v       []byte
	special bool
	v0, v1  int
}

// member handles one key of an object scanEntry decodes: a key that is not one
// of names is skipped (its value validated); a key json.Unmarshal might match
// otherwise (escaped, non-ASCII, another case) or a repeated one gives up (-1).
// For a wanted key, decode gets the value's start and returns its end (-1:
// give up).
func member(s *strictScanner, key []byte, plain bool, v0 int, names []string, seen []bool, decode func(k, v0 int) int) int {
	if !plain {
		return -1
	}
	k, exact, found := known(key, names)
	if !found {
		return s.value(v0, 1)
	}
	if !exact || seen[k] {
		return -1
	}
	seen[k] = true
	return decode(k, v0)
}

// scalar is the value at v0 when it is not an object or array: its span and
// whether a string holds escapes or non-ASCII bytes.
func scalar(s *strictScanner, v0 int) (f field, ok bool) {
	var v1 int
	if v0 < len(s.b) && s.b[v0] == '"' {
		v1, f.special = s.str(v0)
	} else {
		v1 = s.value(v0, 1)
	}
	if v1 < 0 {
		return f, false
	}
	return field{v: s.b[v0:v1], special: f.special, v0: v0, v1: v1}, true
}

// strVal decodes a string field: a string, or null (leaves *dst). False for
// anything json.Unmarshal would treat otherwise. A string without escapes is
// not copied: it aliases the line, which the caller reuses for the next one,
// so what outlives the line is copied there (summary.feed).
func strVal(f field, dst *string) bool {
	switch {
	case f.v[0] == 'n':
		return true
	case f.v[0] != '"':
		return false
	case f.special:
		v, ok := unquote(f.v)
		if ok {
			*dst = v
		}
		return ok
	case len(f.v) == 2:
		*dst = ""
	default:
		*dst = unsafe.String(&f.v[1], len(f.v)-2)
	}
	return true
}

// unquote is json.Unmarshal of a string literal (its own variable, so that
// strVal's destination does not escape).
func unquote(v []byte) (string, bool) {
	p := new(string)
	err := json.Unmarshal(v, p)
	return *p, err == nil
}

// intVal decodes an int64 field: an integer literal in range, or null.
func intVal(s *strictScanner, f field, dst *int64) bool {
	if f.v[0] == 'n' {
		return true
	}
	if f.v[0] != '-' && !isDigit(f.v[0]) {
		return false
	}
	if _, integer := s.num(f.v0); !integer {
		return false
	}
	n, err := strconv.ParseInt(string(f.v), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// scanEntry fills e from line as json.Unmarshal(line, &e) would, for a zero
// e, and reports whether it could (false: e is unspecified, decode the line
// with encoding/json). Its strings alias line (see strVal).
func scanEntry(line []byte, e *sumEntry) bool {
	m, u, name := &sumMessage{}, &usage{}, new(string)
	var b entryBuf
	ok := scanEntryInto(line, e, &b, m, u, name)
	if b.hasName {
		e.Name = name
	}
	if b.hasMessage {
		e.Message = m
		if b.hasUsage {
			m.Usage = u
		}
	}
	return ok
}

// entryBuf is what scanEntryInto found besides e's plain fields: whether it
// filled the message, usage and name it was given storage for (the caller's,
// so that a line allocates nothing: the caller points e at them), and what it
// learnt of message.content on the way.
type entryBuf struct {
	hasMessage, hasUsage, hasName bool
	// content is message.content's value (nil: no such key) when
	// contentKnown: the message held at most one key that encoding/json
	// matches to "content" (any case), spelled exactly so. That is the
	// RawMessage json.Unmarshal gives firstPrompt for the same line.
	content      []byte
	contentKnown bool
}

// scanEntryInto is scanEntry but for e's pointers: the message, its usage and
// the name go to m, u and name, and b says which were there.
func scanEntryInto(line []byte, e *sumEntry, b *entryBuf, m *sumMessage, u *usage, name *string) bool {
	s := &strictScanner{b: line, clean: jsonl.Clean(line)}
	contentSeen, contentOK := false, true
	var seen [7]bool
	var msgSeen [7]bool
	var useSeen [5]bool
	// str decodes the string (or null) at v0 into dst and returns its end.
	str := func(v0 int, dst *string) int {
		f, ok := scalar(s, v0)
		if !ok || !strVal(f, dst) {
			return -1
		}
		return f.v1
	}
	usageOf := func(v0 int, u *usage) int {
		return s.object(v0, 2, func(key []byte, plain bool, x0 int) int {
			return member(s, key, plain, x0, usageFields, useSeen[:], func(k, x0 int) int {
				f, ok := scalar(s, x0)
				if !ok {
					return -1
				}
				switch k {
				case 0:
					ok = intVal(s, f, &u.Input)
				case 1:
					ok = intVal(s, f, &u.Output)
				case 2:
					ok = intVal(s, f, &u.CacheRead)
				case 3:
					ok = intVal(s, f, &u.CacheWrite)
				default:
					ok = costVal(s, f, &u.Cost)
				}
				if !ok {
					return -1
				}
				return f.v1
			})
		})
	}
	messageOf := func(v0 int, m *sumMessage) int {
		return s.object(v0, 1, func(key []byte, plain bool, w0 int) int {
			if plain && len(key) == len("content") && equalFoldASCII(key, "content") {
				end := s.value(w0, 1)
				if string(key) != "content" || contentSeen {
					contentOK = false
				} else if end >= 0 {
					b.content = s.b[w0:end]
				}
				contentSeen = true
				return end
			}
			return member(s, key, plain, w0, messageFields, msgSeen[:], func(k, w0 int) int {
				switch k {
				case 0:
					return str(w0, &m.Role)
				case 1:
					return str(w0, &m.Provider)
				case 2:
					return str(w0, &m.Model)
				case 3:
					if s.lit(w0, "null") > 0 {
						return w0 + 4
					}
					b.hasUsage = true
					return usageOf(w0, u)
				case 4:
					return str(w0, &m.StopReason)
				case 5:
					return str(w0, &m.ErrorMessage)
				}
				f, ok := scalar(s, w0)
				if !ok || !msVal(f, &m.Timestamp) {
					return -1
				}
				return f.v1
			})
		})
	}
	end := s.object(s.ws(0), 0, func(key []byte, plain bool, v0 int) int {
		return member(s, key, plain, v0, entryFields, seen[:], func(k, v0 int) int {
			switch k {
			case 0:
				return str(v0, &e.Type)
			case 1:
				return str(v0, &e.ID)
			case 2:
				return str(v0, &e.Timestamp)
			case 3:
				return str(v0, &e.Provider)
			case 4:
				return str(v0, &e.ModelID)
			case 5:
				if s.lit(v0, "null") > 0 {
					return v0 + 4
				}
				b.hasName = true
				return str(v0, name)
			}
			if s.lit(v0, "null") > 0 {
				return v0 + 4
			}
			b.hasMessage = true
			return messageOf(v0, m)
		})
	})
	b.contentKnown = contentOK
	return end >= 0 && s.ws(end) == len(line)
}

// numVal is json.Unmarshal of a valid JSON number literal into a float64: the
// value, or false where it reports an error (out of range).
func numVal(v []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

func isNumber(v []byte) bool { return v[0] == '-' || isDigit(v[0]) }

// msVal is (*msTime).UnmarshalJSON for a value the scanner validated: a number
// decoded here, anything else handed to it.
func msVal(f field, m *msTime) bool {
	if !isNumber(f.v) {
		return m.UnmarshalJSON(f.v) == nil
	}
	if x, ok := numVal(f.v); ok {
		*m = msTime(x)
	}
	return true // out of range: UnmarshalJSON leaves m too
}

// costVal is (*costTotal).UnmarshalJSON for a value the scanner validated: a
// number, or an object whose only "total" key is spelled so, decoded here;
// anything else handed to it.
func costVal(s *strictScanner, f field, c *costTotal) bool {
	if isNumber(f.v) {
		if x, ok := numVal(f.v); ok {
			*c = costTotal(x)
		}
		return true
	}
	if f.v[0] != '{' {
		return c.UnmarshalJSON(f.v) == nil
	}
	total, seen, plainKeys := 0.0, false, true
	ok := true // json.Unmarshal into struct{Total float64} succeeds
	end := s.object(f.v0, 3, func(key []byte, plain bool, v0 int) int {
		_, exact, found := known(key, []string{"total"})
		if !plain || (found && (!exact || seen)) {
			plainKeys = false
			return -1
		}
		if !found {
			return s.value(v0, 1)
		}
		seen = true
		v, vok := scalar(s, v0)
		if !vok {
			return -1
		}
		switch {
		case v.v[0] == 'n':
		case isNumber(v.v):
			x, good := numVal(v.v)
			total, ok = x, ok && good
		default:
			ok = false // a type error: the object is dropped
		}
		return v.v1
	})
	if end != f.v1 || !plainKeys {
		return c.UnmarshalJSON(f.v) == nil
	}
	if ok {
		*c = costTotal(total)
	}
	return true
}
