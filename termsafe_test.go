package main

import (
	"errors"
	"strings"
	"testing"
)

func TestTermSafe(t *testing.T) {
	for _, c := range []struct{ in, out, text string }{
		{"plain /home/u/x", "plain /home/u/x", "plain /home/u/x"},
		{"", "", ""},
		{"clear\x1b[2J\x1b[H", `clear\x1b[2J\x1b[H`, `clear\x1b[2J\x1b[H`},
		{"title\x1b]0;pwned\x07", `title\x1b]0;pwned\x07`, `title\x1b]0;pwned\x07`},
		{"two\nlines\r\tx", `two\nlines\r\tx`, "two\nlines\\r\tx"},
		{"del\x7f nul\x00", `del\x7f nul\x00`, `del\x7f nul\x00`},
		{"c1 \u009b31m \u0085", `c1 \u009b31m \u0085`, `c1 \u009b31m \u0085`},
		{"bidi \u202eevil\u202c \u2066x\u2069", `bidi \u202eevil\u202c \u2066x\u2069`, `bidi \u202eevil\u202c \u2066x\u2069`},
		{"sep\u2028x", `sep\u2028x`, `sep\u2028x`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`, `bad \xff\xfe utf8`},
		{"ünïcödé — ok → 日本", "ünïcödé — ok → 日本", "ünïcödé — ok → 日本"},
	} {
		if got := termSafe(c.in); got != c.out {
			t.Errorf("termSafe(%q) = %q, want %q", c.in, got, c.out)
		}
		if got := termSafeText(c.in); got != c.text {
			t.Errorf("termSafeText(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

func FuzzTermSafe(f *testing.F) {
	for _, s := range []string{"a\x1b[2Jb", "x\u202ey", "\xff", "a\nb\tc", "ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{termSafe(s), termSafeText(s)} {
			for i := 0; i < len(out); i++ {
				if c := out[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
					t.Fatalf("raw control %#x in %q", c, out)
				}
			}
			for _, r := range out {
				if r >= 0x80 && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
					t.Fatalf("raw %U in %q", r, out)
				}
			}
		}
		for i := 0; i < len(termSafe(s)); i++ {
			if c := termSafe(s)[i]; c == '\n' || c == '\t' {
				t.Fatalf("termSafe kept %#x", c)
			}
		}
	})
}

func TestPrintHuman(t *testing.T) {
	var b strings.Builder
	printHuman(&b, "stopped %s (%v) %d %q\n", "id\x1b[2J", errors.New("bad\x07"), 3, "q\u202e")
	if got, want := b.String(), "stopped id\\x1b[2J (bad\\x07) 3 \"q\\\\u202e\"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestShellQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/srv/app-1", "/srv/app-1"},
		{"", "''"},
		{"a b'c", `'a b'\''c'`},
		{"a\x1b]0;x\x07b", `$'a\x1b]0;x\x07b'`},
		{"it's\n\u202e\xff\\", `$'it\'s\x0a\xe2\x80\xae\xff\\'`},
		{"é ok", "'é ok'"},
	} {
		if got := shellQuote(c.in); got != c.want {
			t.Errorf("shellQuote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	for _, w := range []string{"01a1fabc-0000", "ses_AbC.1:2+3@4,5%"} {
		if !shellWordSafe(w) {
			t.Errorf("shellWordSafe(%q) = false", w)
		}
	}
	for _, w := range []string{"", "a b", "$(x)", "`x`", "a'b", "a\"b", "a;b", "a|b", "~x", "a*", "a\nb", "é", "a=b", "a/b"} {
		if shellWordSafe(w) {
			t.Errorf("shellWordSafe(%q) = true", w)
		}
	}
}
