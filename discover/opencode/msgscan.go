package opencode

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/strictjson"
)

// decodeMsg decodes a message file into m as json.Unmarshal(b, m) does, and
// reports whether that succeeds. A cold listing decodes every message file of
// the legacy tree, and encoding/json's reflection and full validation pass cost
// more than reading the files: the common shape is decoded here in one pass
// (validating what it skips), and anything it is not certain of — an escape in
// a string it keeps, a key that differs from a field's only by case, a
// repeated field, null, a number or type a field does not take, an error
// object, deep nesting — goes to encoding/json, which then decides. So the
// result is encoding/json's for every input (TestDecodeMsgMatchesJSON,
// FuzzDecodeMsg). str makes the strings kept (interning them saves memory).
func decodeMsg(b []byte, m *msgData, str func([]byte) string) bool {
	*m = msgData{}
	s := msgScanner{js: strictjson.Scanner{B: b}, str: str}
	if s.message(m) {
		return true
	}
	*m = msgData{}
	return json.Unmarshal(b, m) == nil
}

// msgScanner is a cursor (i) over a message file walked by js, which
// validates as encoding/json does.
type msgScanner struct {
	js  strictjson.Scanner
	i   int
	str func([]byte) string
}

var (
	msgKeys   = []string{"id", "sessionID", "role", "parentID", "time", "finish", "error", "providerID", "modelID", "model", "tokens", "cost"}
	timeKeys  = []string{"created", "completed"}
	modelKeys = []string{"providerID", "modelID"}
	tokenKeys = []string{"input", "output", "reasoning", "cache"}
	cacheKeys = []string{"read", "write"}
)

// foldsToKey reports whether an ASCII key equals a field's key but for case
// (encoding/json matches keys without regard to case): every key of every
// level, lower-cased.
func foldsToKey(key []byte) bool {
	var low [16]byte
	if len(key) > len(low) {
		return false // longer than any field's key
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	switch string(low[:len(key)]) {
	case "id", "sessionid", "role", "parentid", "time", "finish", "error", "providerid", "modelid", "model", "tokens", "cost",
		"created", "completed", "input", "output", "reasoning", "cache", "read", "write":
		return true
	}
	return false
}

func (s *msgScanner) message(m *msgData) bool {
	s.ws()
	var seen uint32
	ok := s.object(keysOf(msgKeys), &seen, func(k int) bool {
		switch k {
		case 0:
			return s.strField(&m.ID)
		case 1:
			return s.strField(&m.SessionID)
		case 2:
			return s.strField(&m.Role)
		case 3:
			return s.strField(&m.ParentID)
		case 4:
			var seen uint32
			return s.object(keysOf(timeKeys), &seen, func(k int) bool {
				if k == 0 {
					return s.intField(&m.Time.Created)
				}
				return s.intField(&m.Time.Completed)
			})
		case 5:
			return s.strField(&m.Finish)
		case 6:
			return false // error: rare, and its data kept raw; encoding/json decodes it
		case 7:
			return s.strField(&m.ProviderID)
		case 8:
			return s.strField(&m.ModelID)
		case 9:
			var seen uint32
			return s.object(keysOf(modelKeys), &seen, func(k int) bool {
				if k == 0 {
					return s.strField(&m.Model.ProviderID)
				}
				return s.strField(&m.Model.ModelID)
			})
		case 10:
			m.Tokens = &msgTokens{}
			t := m.Tokens
			var seen uint32
			return s.object(keysOf(tokenKeys), &seen, func(k int) bool {
				switch k {
				case 0:
					return s.intField(&t.Input)
				case 1:
					return s.intField(&t.Output)
				case 2:
					return s.intField(&t.Reasoning)
				}
				var seen uint32
				return s.object(keysOf(cacheKeys), &seen, func(k int) bool {
					if k == 0 {
						return s.intField(&t.Cache.Read)
					}
					return s.intField(&t.Cache.Write)
				})
			})
		case 11:
			tok, ok := s.number()
			if !ok {
				return false
			}
			f, err := strconv.ParseFloat(string(tok), 64)
			if err != nil {
				return false
			}
			m.Cost = &f
			return true
		}
		return false
	})
	if !ok {
		return false
	}
	s.ws()
	return s.i == len(s.js.B)
}

// keysOf is a field list for object (a type, so its callers read as a table).
type keysOf []string

// object reads the object at s.i, calling field with the index in keys of each
// known key (its value then at s.i, field consuming it) and skipping the values
// of the others. It fails on a key it cannot be sure encoding/json would not
// match to a field (escaped, not ASCII, or a known key in another case), and on
// a known key seen twice (encoding/json would merge the two).
func (s *msgScanner) object(keys keysOf, seen *uint32, field func(k int) bool) bool {
	if !s.byte('{') {
		return false
	}
	s.ws()
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		key, esc, ok := s.string()
		if !ok || esc {
			return false
		}
		k := -1
		for j, name := range keys {
			if string(key) == name {
				k = j
				break
			}
		}
		if k < 0 {
			for _, c := range key {
				if c >= utf8.RuneSelf {
					return false
				}
			}
			if foldsToKey(key) {
				return false
			}
		}
		s.ws()
		if !s.byte(':') {
			return false
		}
		s.ws()
		if k >= 0 {
			if *seen&(1<<k) != 0 {
				return false
			}
			*seen |= 1 << k
			if !field(k) {
				return false
			}
		} else if !s.skip() {
			return false
		}
		s.ws()
		switch s.next() {
		case ',':
		case '}':
			return true
		default:
			return false
		}
	}
}

func (s *msgScanner) strField(dst *string) bool {
	v, esc, ok := s.string()
	if !ok || esc || !utf8.Valid(v) {
		return false
	}
	*dst = s.str(v)
	return true
}

func (s *msgScanner) intField(dst *int64) bool {
	tok, ok := s.number()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

func (s *msgScanner) peek() byte {
	if s.i < len(s.js.B) {
		return s.js.B[s.i]
	}
	return 0
}

func (s *msgScanner) next() byte {
	c := s.peek()
	s.i++
	return c
}

func (s *msgScanner) byte(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.i++
	return true
}

func (s *msgScanner) ws() { s.i = s.js.WS(s.i) }

// string reads the string at s.i and returns its bytes between the quotes;
// esc reports a backslash among them (the bytes are then not its value).
func (s *msgScanner) string() (v []byte, esc, ok bool) {
	if s.peek() != '"' {
		return nil, false, false
	}
	end, special := s.js.Str(s.i)
	if end < 0 {
		return nil, false, false
	}
	v = s.js.B[s.i+1 : end-1]
	s.i = end
	return v, special && bytes.IndexByte(v, '\\') >= 0, true
}

// number reads a number at s.i as JSON's grammar has it.
func (s *msgScanner) number() ([]byte, bool) {
	end, _ := s.js.Num(s.i)
	if end < 0 {
		return nil, false
	}
	v := s.js.B[s.i:end]
	s.i = end
	return v, true
}

// skip validates and passes over the value at s.i.
func (s *msgScanner) skip() bool {
	end := s.js.Value(s.i, 0)
	if end < 0 {
		return false
	}
	s.i = end
	return true
}
