package pi

import (
	"encoding/json"
	"strconv"
	"unsafe"

	"github.com/agentctl/agentctl/internal/strictjson"
)

// A cold listing decodes every line of every session file into a sumEntry;
// with encoding/json that is most of its time (it validates the line, then
// walks it again to skip the content the listing never needs). scanEntry does
// both in one pass over the bytes, for the lines it can answer exactly: those
// where json.Unmarshal(line, &e) would succeed and fill e the same way. It
// reports false for any other line (invalid JSON, a value of an unexpected
// type, a key that only differs in case or is escaped, a repeated key, a
// string to unescape that it cannot copy as is…), and the caller decodes that
// line with encoding/json, so results never depend on which path ran. The
// walk is strictjson.Scanner's, with Clean lines' skipped strings found by
// their quotes alone.

// known reports whether key names one of fields, exactly (exact) or only
// case-insensitively as encoding/json also matches (exact false, found true).
func known(key []byte, fields []string) (idx int, exact, found bool) {
	for i, f := range fields {
		if string(key) == f {
			return i, true, true
		}
	}
	for i, f := range fields {
		if len(key) == len(f) && strictjson.EqualFoldASCII(key, f) {
			return i, false, true
		}
	}
	return -1, false, false
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
func member(s *strictjson.Scanner, key []byte, plain bool, v0 int, names []string, seen []bool, decode func(k, v0 int) int) int {
	if !plain {
		return -1
	}
	k, exact, found := known(key, names)
	if !found {
		return s.Value(v0, 1)
	}
	if !exact || seen[k] {
		return -1
	}
	seen[k] = true
	return decode(k, v0)
}

// scalar is the value at v0 when it is not an object or array: its span and
// whether a string holds escapes or non-ASCII bytes.
func scalar(s *strictjson.Scanner, v0 int) (f field, ok bool) {
	var v1 int
	if v0 < len(s.B) && s.B[v0] == '"' {
		v1, f.special = s.Str(v0)
	} else {
		v1 = s.Value(v0, 1)
	}
	if v1 < 0 {
		return f, false
	}
	return field{v: s.B[v0:v1], special: f.special, v0: v0, v1: v1}, true
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
func intVal(s *strictjson.Scanner, f field, dst *int64) bool {
	if f.v[0] == 'n' {
		return true
	}
	if f.v[0] != '-' && !isDigit(f.v[0]) {
		return false
	}
	if _, integer := s.Num(f.v0); !integer {
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
	s := &strictjson.Scanner{B: line, Clean: strictjson.Clean(line)}
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
		return s.Object(v0, 2, func(key []byte, plain bool, x0 int) int {
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
		return s.Object(v0, 1, func(key []byte, plain bool, w0 int) int {
			if plain && len(key) == len("content") && strictjson.EqualFoldASCII(key, "content") {
				end := s.Value(w0, 1)
				if string(key) != "content" || contentSeen {
					contentOK = false
				} else if end >= 0 {
					b.content = s.B[w0:end]
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
					if s.Lit(w0, "null") > 0 {
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
	end := s.Object(s.WS(0), 0, func(key []byte, plain bool, v0 int) int {
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
				if s.Lit(v0, "null") > 0 {
					return v0 + 4
				}
				b.hasName = true
				return str(v0, name)
			}
			if s.Lit(v0, "null") > 0 {
				return v0 + 4
			}
			b.hasMessage = true
			return messageOf(v0, m)
		})
	})
	b.contentKnown = contentOK
	return end >= 0 && s.WS(end) == len(line)
}

// numVal is json.Unmarshal of a valid JSON number literal into a float64: the
// value, or false where it reports an error (out of range).
func numVal(v []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

func isNumber(v []byte) bool { return v[0] == '-' || isDigit(v[0]) }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

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
func costVal(s *strictjson.Scanner, f field, c *costTotal) bool {
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
	end := s.Object(f.v0, 3, func(key []byte, plain bool, v0 int) int {
		_, exact, found := known(key, []string{"total"})
		if !plain || (found && (!exact || seen)) {
			plainKeys = false
			return -1
		}
		if !found {
			return s.Value(v0, 1)
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
