package strictjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	long := strings.Repeat("abcdefgh", 8)
	for _, c := range []struct {
		line  string
		clean bool
	}{
		{``, true},
		{`{"a":"b"}`, true},
		{`{"a":"\"\\\/\b\f\n\r\t\u00e9\uABCD"}`, true},
		{`{"a":"é` + long + `"}`, true},
		{"{\"a\":\"b\"}\r", false},              // a CR: valid between tokens, not clean
		{"{\"a\":\t\"b\"}", false},              // a tab
		{"{\"a\":\"" + long + "\x01\"}", false}, // a control character past 32 bytes
		{"{\"a\":\"" + long + "\x1f" + long + "\"}", false},
		{"{\"a\":\"" + long + "\x7f\x80\xff\"}", true}, // DEL and non-ASCII are valid in strings
		{`{"a":"\q"}`, false},
		{`{"a":"\u12G4"}`, false},
		{`{"a":"\u12"}`, false},
		{`{"a":"b\`, false},
		{`{"a":"\\\"}`, true}, // clean, though the string does not end: the walk finds that
	} {
		if got := Clean([]byte(c.line)); got != c.clean {
			t.Errorf("Clean(%q) = %v, want %v", c.line, got, c.clean)
		}
	}
}

func TestStringEnd(t *testing.T) {
	for _, c := range []struct {
		b   string
		end int
	}{
		{`""`, 2},
		{`"abc",`, 5},
		{`"a\"b"x`, 6},
		{`"a\\"x`, 5},
		{`"a\\\"b"`, 8},
		{`"\\\\"`, 6},
		{`"abc`, -1},
		{`"abc\"`, -1},
	} {
		if got := StringEnd([]byte(c.b), 0); got != c.end {
			t.Errorf("StringEnd(%q) = %d, want %d", c.b, got, c.end)
		}
	}
}

// FuzzStringEnd: in a clean line, the string found by its quotes alone is the
// one encoding/json reads, with the same end and the same validity.
func FuzzStringEnd(f *testing.F) {
	for _, s := range []string{`abc"`, `a\"b"`, `a\\"`, `\u00e9"`, `é"`, `a\q"`, "a\x01\"", `abc`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		b := append([]byte{'"'}, s...)
		if !Clean(b) {
			return
		}
		end := StringEnd(b, 0)
		dec := json.NewDecoder(bytes.NewReader(b))
		tok, err := dec.Token()
		if end < 0 {
			if err == nil {
				t.Fatalf("StringEnd(%q) = -1; encoding/json reads %q", b, tok)
			}
			return
		}
		var v string
		if err := json.Unmarshal(b[:end], &v); err != nil {
			t.Fatalf("StringEnd(%q) = %d, but %q does not decode: %v", b, end, b[:end], err)
		}
		if s, ok := tok.(string); err != nil || !ok || s != v || dec.InputOffset() != int64(end) {
			t.Fatalf("StringEnd(%q) = %d (%q); encoding/json reads %v (%v) up to %d", b, end, v, tok, err, dec.InputOffset())
		}
	})
}
