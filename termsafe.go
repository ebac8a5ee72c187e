package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// termSafe is the one sanitiser of human output: every string that came from an
// agent's files, a gateway, config or an argument passes through it before it
// reaches a terminal (table cells, status, peek, warnings, errors). C0 and C1
// controls, ESC, DEL, the line and paragraph separators and the bidi overrides
// (U+202A–U+202E, U+2066–U+2069) are shown escaped (\x1b, \n, \u202e); invalid
// UTF-8 bytes as \xff. A newline therefore never breaks a table row and no
// escape sequence can clear the screen or set a window title. JSON output keeps
// the exact string; only human output is sanitised.
func termSafe(s string) string { return sanitise(s, false) }

// termSafeText is termSafe for multi-line text (peek): newlines and tabs are
// kept, everything else termSafe escapes is escaped.
func termSafeText(s string) string { return sanitise(s, true) }

func sanitise(s string, keepLines bool) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f || keepLines && (c == '\n' || c == '\t') {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !unsafeRune(r, n) {
				i += n
				continue
			}
		}
		break
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c < 0x7f, keepLines && (c == '\n' || c == '\t'):
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\r':
				b.WriteString(`\r`)
			default:
				b.WriteString(`\x`)
				b.WriteString(hex2(c))
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(c))
		case unsafeRune(r, n):
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)))
			b.WriteString(h)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func hex2(c byte) string {
	const hex = "0123456789abcdef"
	return string([]byte{hex[c>>4], hex[c&0xf]})
}

// unsafeRune reports whether a non-ASCII rune (n bytes) must be escaped.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1: // invalid UTF-8
		return true
	case r >= 0x80 && r < 0xa0: // C1, including CSI (U+009B)
		return true
	case r == 0x2028 || r == 0x2029: // line and paragraph separators
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi overrides
		return true
	}
	return false
}

// printHuman is fmt.Fprintf for human output with every string, error and
// Stringer argument passed through termSafe: the one way a command prints a
// line that carries ids, paths or messages read from elsewhere.
func printHuman(w io.Writer, format string, args ...any) (int, error) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = termSafe(v)
		case error:
			args[i] = termSafe(v.Error())
		case fmt.Stringer:
			args[i] = termSafe(v.String())
		}
	}
	return fmt.Fprintf(w, format, args...)
}

// idLineSafe reports whether id may be printed as a line of its own, for
// scripts to read back (list -q, each host:id across hosts): not empty, and
// nothing termSafe would escape — a newline in an id would print a second,
// forged id. The printers leave such an id out, with a warning.
func idLineSafe(id string) bool { return id != "" && termSafe(id) == id }

// shellWordSafe reports whether w is a word a shell reads back as itself,
// unquoted: only ASCII letters, digits and - _ . : + @ , %. Tab completion
// offers only such ids (a $(…) in an id would run on Tab, or when the line
// runs).
func shellWordSafe(w string) bool {
	if w == "" {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-_.:+@,%", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// shellJoin quotes words for a shell, each as shellQuote does.
func shellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shellQuote(w)
	}
	return strings.Join(q, " ")
}

// shellQuote quotes w for a POSIX shell so that the line is safe to print and
// to paste: plain when it has only safe characters, else in '…'; a word that
// termSafe would change (an ESC, a newline, a bidi override, invalid UTF-8) is
// written as $'…' with those bytes as \xNN escapes (bash, zsh, ksh and POSIX
// 2024 sh read it), so no control byte reaches the terminal and the word still
// means the same bytes.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return w
	}
	if termSafe(w) == w {
		return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(w); {
		c := w[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\\' || c == '\'':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c >= 0x20 && c < 0x7f:
				b.WriteByte(c)
			default:
				b.WriteString(`\x` + hex2(c))
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(w[i:])
		if unsafeRune(r, n) {
			for j := i; j < i+n; j++ {
				b.WriteString(`\x` + hex2(w[j]))
			}
		} else {
			b.WriteString(w[i : i+n])
		}
		i += n
	}
	b.WriteString("'")
	return b.String()
}
