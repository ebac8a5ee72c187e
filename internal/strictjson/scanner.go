// Package strictjson walks JSON exactly as encoding/json validates it (RFC
// 8259: no control character in a string, only the standard escapes, the
// number grammar, true/false/null), in one pass over the bytes and without
// allocating. The adapters' line scanners (Codex's rollout records, Pi's
// session entries) are built on it: they fill a record from the members they
// model and answer exactly as json.Unmarshal would, or give up and let
// encoding/json decode the line, so results never depend on which path ran.
package strictjson

import (
	"encoding/binary"
)

// MaxDepth bounds the nesting a Scanner follows; deeper values are reported
// invalid, and the caller leaves them to encoding/json (which has limits of its
// own).
const MaxDepth = 512

// Scanner walks the JSON in B. Its methods take the index where a token
// starts and return the index just past it, or -1 where B is not valid there.
type Scanner struct {
	B []byte
	// Loose > 0: a string longer than Loose bytes is delimited by its quotes
	// alone (the first quote not escaped) and not validated, for a caller
	// that blanks such strings before encoding/json would see them.
	Loose int
	// Clean: B is Clean, so no string in it can be invalid and Skip finds a
	// string's end by its quotes alone.
	Clean bool
}

// WS returns the index of the first byte at or after i that is not JSON
// whitespace.
func (s *Scanner) WS(i int) int {
	for i < len(s.B) {
		switch s.B[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Str returns the index past the string at B[i] == '"' and whether it holds
// bytes that json.Unmarshal would not copy as they are (escapes, non-ASCII).
// A Loose string is reported as holding such bytes.
func (s *Scanner) Str(i int) (int, bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	b := s.B
	if s.Loose > 0 {
		if end := StringEnd(b, i); end >= 0 && end-i-2 > s.Loose {
			return end, true
		}
	}
	i++
	special := false
	for {
		// Eight bytes at a time while none is a quote, a backslash or a
		// control character (strings are most of a line's bytes).
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q, e := x^(ones*'"'), x^(ones*'\\')
			if ((q-ones)&^q|(e-ones)&^e|(x-ones*0x20)&^x)&highs != 0 {
				break
			}
			if x&highs != 0 {
				special = true
			}
			i += 8
		}
		if i >= len(b) {
			return -1, false
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, special
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
}

// Skip returns the index past the string at B[i] == '"' when only its end is
// wanted, or -1.
func (s *Scanner) Skip(i int) int {
	if s.Clean {
		return StringEnd(s.B, i)
	}
	j, _ := s.Str(i)
	return j
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// Num returns the index past the number at B[i], and whether it is a plain
// integer (no fraction or exponent).
func (s *Scanner) Num(i int) (int, bool) {
	b := s.B
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

// Value returns the index past the value starting at B[i] (no leading
// whitespace), depth levels deep, or -1. It walks containers with a loop of its
// own rather than members: it is the path most skipped bytes take, and a call
// per member there was no faster (BenchmarkScanEntry, cold Pi and Codex
// listings).
func (s *Scanner) Value(i, depth int) int {
	b := s.B
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; c {
	case '"':
		return s.Skip(i)
	case '{', '[':
		if depth >= MaxDepth {
			return -1
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = s.WS(i + 1)
		if i < len(b) && b[i] == closer {
			return i + 1
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1
				}
				if i = s.Skip(i); i < 0 {
					return -1
				}
				if i = s.WS(i); i >= len(b) || b[i] != ':' {
					return -1
				}
				i = s.WS(i + 1)
			}
			if i = s.Value(i, depth+1); i < 0 {
				return -1
			}
			if i = s.WS(i); i >= len(b) {
				return -1
			}
			switch b[i] {
			case ',':
				i = s.WS(i + 1)
			case closer:
				return i + 1
			default:
				return -1
			}
		}
	case 't':
		return s.Lit(i, "true")
	case 'f':
		return s.Lit(i, "false")
	case 'n':
		return s.Lit(i, "null")
	default:
		j, _ := s.Num(i)
		return j
	}
}

// Lit returns the index past word (true, false, null) at B[i], or -1.
func (s *Scanner) Lit(i int, word string) int {
	if len(s.B)-i >= len(word) && string(s.B[i:i+len(word)]) == word {
		return i + len(word)
	}
	return -1
}

// Object walks the object at B[i] == '{', depth levels deep, calling field for
// each member with the key's raw bytes (without quotes; plain false when
// escaped or not ASCII) and the index where its value starts; field returns
// the index past the value (s.Value for a value it does not want), or -1 to
// give up. Object returns the index past the object, or -1 (invalid, or given
// up).
func (s *Scanner) Object(i, depth int, field func(key []byte, plain bool, v0 int) int) int {
	return s.members(i, depth, '{', '}', func(k0 int) int {
		b := s.B
		if k0 >= len(b) || b[k0] != '"' {
			return -1
		}
		k1, special := s.Str(k0)
		if k1 < 0 {
			return -1
		}
		c := s.WS(k1)
		if c >= len(b) || b[c] != ':' {
			return -1
		}
		return field(b[k0+1:k1-1], !special, s.WS(c+1))
	})
}

// Array walks the array at B[i] == '[', depth levels deep, calling elem with
// the index where each element starts; elem returns the index past it, or -1
// to give up.
func (s *Scanner) Array(i, depth int, elem func(v0 int) int) int {
	return s.members(i, depth, '[', ']', elem)
}

// members walks the object or array at B[i] == open: item gets the index
// where each member starts and returns the index past it, or -1.
func (s *Scanner) members(i, depth int, open, closer byte, item func(i int) int) int {
	b := s.B
	if i >= len(b) || b[i] != open || depth >= MaxDepth {
		return -1
	}
	i = s.WS(i + 1)
	if i < len(b) && b[i] == closer {
		return i + 1
	}
	for {
		if i = item(i); i < 0 {
			return -1
		}
		if i = s.WS(i); i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = s.WS(i + 1)
		case closer:
			return i + 1
		default:
			return -1
		}
	}
}

// EqualFoldASCII reports whether key may equal f under encoding/json's
// case-insensitive key matching: ASCII letters folded, and any non-ASCII
// byte counted as a possible match (encoding/json folds Unicode too: the
// Kelvin sign is a 'k'). key and f have the same length.
func EqualFoldASCII(key []byte, f string) bool {
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
