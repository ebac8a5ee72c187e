package strictjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// valid is what a Scanner says of b as a whole document.
func valid(b []byte, clean bool) bool {
	s := &Scanner{B: b, Clean: clean}
	end := s.Value(s.WS(0), 0)
	return end >= 0 && s.WS(end) == len(b)
}

func TestValueIsJSONValid(t *testing.T) {
	long := strings.Repeat("abcdefgh", 5)
	for _, doc := range []string{
		`{}`, `[]`, ` {"a" : [1, -2.5e+3, true, false, null, "x"]} `, `"` + long + `\u00e9\n"`,
		`{"a":"` + long + "\x01" + `"}`, `{"a":"` + long + `\x"}`, `{"a":1,}`, `[1 2]`, `{"a"}`,
		`01`, `-`, `1.`, `1e`, `.5`, `tru`, `nul`, `"\ud800"`, "\"\xff\"", `{"a":1}}`, `"abc\"`,
		strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1),
	} {
		want := json.Valid([]byte(doc))
		if got := valid([]byte(doc), false); got != want {
			t.Errorf("Value(%.60q) valid %v, encoding/json says %v", doc, got, want)
		}
		if Clean([]byte(doc)) {
			if got := valid([]byte(doc), true); got != want {
				t.Errorf("Value(%.60q) on a clean line valid %v, encoding/json says %v", doc, got, want)
			}
		}
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if valid([]byte(deep), false) {
		t.Errorf("a document %d deep is walked; want it left to encoding/json", MaxDepth+1)
	}
}

func TestStrSpecial(t *testing.T) {
	for _, c := range []struct {
		str     string
		loose   int
		special bool
	}{
		{`"abc"`, 0, false},
		{`"abcdefghijklmnopqrstuvwxyz"`, 0, false},
		{`"abcdefghijklmnop\n"`, 0, true},
		{`"abcdefghijklmnopé"`, 0, true},
		{`"é"`, 0, true},
		{`"abcdefghijklmnopqrstuvwxyz"`, 8, true}, // loose: not looked at
		{`"abcdefgh"`, 8, false},
	} {
		s := &Scanner{B: []byte(c.str), Loose: c.loose}
		end, special := s.Str(0)
		if end != len(c.str) || special != c.special {
			t.Errorf("Str(%s) with Loose %d = %d, %v; want %d, %v", c.str, c.loose, end, special, len(c.str), c.special)
		}
	}
}

func TestNumInteger(t *testing.T) {
	for _, c := range []struct {
		num     string
		integer bool
	}{{"0", true}, {"-12", true}, {"1.5", false}, {"1e3", false}, {"-0E-0", false}} {
		s := &Scanner{B: []byte(c.num)}
		end, integer := s.Num(0)
		if end != len(c.num) || integer != c.integer {
			t.Errorf("Num(%s) = %d, %v; want %d, %v", c.num, end, integer, len(c.num), c.integer)
		}
	}
}

// FuzzValue: for any bytes, the Scanner accepts exactly what encoding/json
// accepts (below MaxDepth), on the byte-by-byte path and, for a clean input,
// on the quotes-only one; a string it calls plain decodes to its raw bytes.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,"b\"c",{"d":null}]}`, `"\u00e9"`, "\"a\x01\"", `[1,]`, `-0.5e+7`, `"é\\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := json.Valid(b)
		shallow := bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) < MaxDepth
		if got := valid(b, false); got != want && shallow {
			t.Fatalf("Value(%q) valid %v, encoding/json says %v", b, got, want)
		}
		if Clean(b) {
			if got := valid(b, true); got != want && shallow {
				t.Fatalf("Value(%q) on a clean input valid %v, encoding/json says %v", b, got, want)
			}
		}
		if len(b) > 0 && b[0] == '"' {
			s := &Scanner{B: b}
			if end, special := s.Str(0); end > 0 && !special {
				var v string
				if err := json.Unmarshal(b[:end], &v); err != nil || v != string(b[1:end-1]) {
					t.Fatalf("Str(%q) plain up to %d, but encoding/json gives %q (%v)", b, end, v, err)
				}
			}
		}
	})
}
