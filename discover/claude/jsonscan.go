package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A transcript line is one JSON object, often of many kilobytes (attachments,
// prompt snapshots, tool output) of which a listing needs a few short top-level
// fields. Decoding whole lines with encoding/json would build all of it; these
// helpers walk the bytes, hand out raw sub-slices and decode only what is asked
// for. They check structure loosely: a line they cannot walk is skipped as
// invalid, like a line encoding/json rejects.

var errSyntax = errors.New("malformed JSON")

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, error) {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, errSyntax
		}
		i += j
		// The quote is escaped iff an odd number of backslashes precede it.
		n := 0
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i, nil
		}
	}
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, errSyntax
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errSyntax
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				if j == i {
					return 0, errSyntax
				}
				return j, nil
			}
			j++
		}
		if j == i {
			return 0, errSyntax
		}
		return j, nil
	}
}

// eachField calls fn with every top-level key (raw, without quotes) and raw value
// of the object b. fn returns false to stop early.
func eachField(b []byte, fn func(key, val []byte) bool) error {
	return eachFieldMsg(b, nil, nil, fn)
}

// eachFieldMsg is eachField that also fills *m, *ok as parseMessage and
// "it did" would for the value of a top-level "message" key (the last one),
// reading its fields on the walk that finds its end. Where that walk cannot
// tell the end exactly as skipValue does, it leaves *ok false and the value is
// skipped as by eachField. With m nil it is eachField.
func eachFieldMsg(b []byte, m *message, ok *bool, fn func(key, val []byte) bool) error {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errSyntax
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return errSyntax
		}
		end, err := skipString(b, i)
		if err != nil {
			return err
		}
		key := b[i+1 : end-1]
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return errSyntax
		}
		vs := skipWS(b, i+1)
		ve := -1
		if m != nil && string(key) == "message" {
			*m, *ok = message{}, false
			if vs < len(b) && b[vs] == '{' {
				if ve = walkMessage(b, vs, m); ve >= 0 {
					*ok = true
				} else {
					*m = message{}
				}
			}
		}
		if ve < 0 {
			if ve, err = skipValue(b, vs); err != nil {
				return err
			}
		}
		if !fn(key, b[vs:ve]) {
			return nil
		}
		i = skipWS(b, ve)
		if i >= len(b) {
			return errSyntax
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return nil
		default:
			return errSyntax
		}
	}
}

// walkMessage walks the object at b[i] == '{' member by member, as eachField
// does, into m, and returns the index past it: where skipValue(b, i) ends, for
// it counts brackets outside strings and every byte this walk passes is a
// string, a value skipValue skips, or punctuation. A walk that fails, or a
// bare value holding a quote or an opening bracket (which skipValue's count
// would see and eachField's does not), returns -1.
func walkMessage(b []byte, i int, m *message) int {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		end, err := skipString(b, i)
		if err != nil {
			return -1
		}
		key := b[i+1 : end-1]
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		vs := skipWS(b, i+1)
		ve, err := skipValue(b, vs)
		if err != nil {
			return -1
		}
		switch b[vs] {
		case '"', '{', '[':
		default:
			if bytes.ContainsAny(b[vs:ve], `"{[`) {
				return -1
			}
		}
		m.set(key, b[vs:ve])
		i = skipWS(b, ve)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// eachElem calls fn with every raw element of the array b; a non-array is an
// error.
func eachElem(b []byte, fn func(val []byte) bool) error {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return errSyntax
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for {
		vs := skipWS(b, i)
		ve, err := skipValue(b, vs)
		if err != nil {
			return err
		}
		if !fn(b[vs:ve]) {
			return nil
		}
		i = skipWS(b, ve)
		if i >= len(b) {
			return errSyntax
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return nil
		default:
			return errSyntax
		}
	}
}

// block is one element of a message's content array, its fields raw (nil when
// absent): text, tool_use (ID, Name, Input) and tool_result (ToolUseID,
// Content, IsError) are the kinds read.
type block struct {
	Type, Text, ID, Name, Input, ToolUseID, Content, IsError []byte
}

// eachBlock calls fn with every block of the content array c until fn returns
// false; content that is not an array has none.
func eachBlock(c []byte, fn func(b *block) bool) {
	_ = eachElem(c, func(raw []byte) bool {
		var b block
		_ = eachField(raw, func(k, v []byte) bool {
			switch string(k) {
			case "type":
				b.Type = v
			case "text":
				b.Text = v
			case "id":
				b.ID = v
			case "name":
				b.Name = v
			case "input":
				b.Input = v
			case "tool_use_id":
				b.ToolUseID = v
			case "content":
				b.Content = v
			case "is_error":
				b.IsError = v
			}
			return true
		})
		return fn(&b)
	})
}

// field returns the raw value of key in object b (nil if absent).
func field(b []byte, key string) []byte {
	var out []byte
	_ = eachField(b, func(k, v []byte) bool {
		if string(k) == key {
			out = v
			return false
		}
		return true
	})
	return out
}

func isString(v []byte) bool { return len(v) >= 2 && v[0] == '"' }
func isArray(v []byte) bool  { return len(v) > 0 && v[0] == '[' }
func isObject(v []byte) bool { return len(v) > 0 && v[0] == '{' }
func isTrue(v []byte) bool   { return string(v) == "true" }

// str decodes a raw JSON string; anything else gives "". Invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func str(v []byte) string {
	if !isString(v) {
		return ""
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		if utf8.Valid(inner) {
			return string(inner)
		}
		return fixUTF8(inner)
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return ""
	}
	return s
}

// strEq reports whether the raw JSON string v equals s (no escapes in s).
func strEq(v []byte, s string) bool {
	return len(v) == len(s)+2 && v[0] == '"' && string(v[1:len(v)-1]) == s
}

// strPrefix decodes at most about max bytes from the start of a raw JSON string:
// enough to classify and cut a prompt without decoding megabytes of pasted text.
func strPrefix(v []byte, max int) string {
	if !isString(v) || len(v)-2 <= max {
		return str(v)
	}
	inner := v[1 : len(v)-1]
	cut := max
	// Do not cut inside an escape sequence: walk the escapes up to the cut.
	for i := 0; i < cut && i < len(inner); i++ {
		if inner[i] == '\\' {
			n := 2
			if i+1 < len(inner) && inner[i+1] == 'u' {
				n = 6
				// A surrogate pair is two \u escapes; keep them together.
				if i+7 < len(inner) && inner[i+6] == '\\' && inner[i+7] == 'u' {
					n = 12
				}
			}
			if i+n > cut {
				cut = i
				break
			}
			i += n - 1
		}
	}
	// Back off to a UTF-8 boundary.
	for cut > 0 && cut < len(inner) && !utf8.RuneStart(inner[cut]) {
		cut--
	}
	buf := make([]byte, 0, cut+2)
	buf = append(buf, '"')
	buf = append(buf, inner[:cut]...)
	buf = append(buf, '"')
	return str(buf)
}

// num decodes a raw JSON number (integers; floats are truncated). Non-numbers
// give 0.
func num(v []byte) int64 {
	if len(v) == 0 {
		return 0
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(string(v), 64); err == nil {
		return int64(f)
	}
	return 0
}

// fixUTF8 replaces each invalid byte with U+FFFD, as encoding/json does.
func fixUTF8(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteString("\uFFFD")
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}
