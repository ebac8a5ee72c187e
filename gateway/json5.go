package gateway

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// parseJSON5 decodes OpenClaw's config file (JSON5: comments, unquoted keys,
// single-quoted strings, trailing commas, hex and signed numbers, Infinity/NaN).
// Objects become map[string]any, arrays []any, numbers float64. agentctl needs two
// values from that file, which is not worth a dependency.
func parseJSON5(s string) (any, error) {
	p := &json5{s: strings.TrimPrefix(s, "\ufeff")}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.i < len(p.s) {
		return nil, p.errorf("unexpected %q after the top-level value", p.peekRune())
	}
	return v, nil
}

type json5 struct {
	s string
	i int
}

const json5MaxDepth = 200

func (p *json5) errorf(format string, args ...any) error {
	line := 1 + strings.Count(p.s[:p.i], "\n")
	col := p.i - strings.LastIndexByte(p.s[:p.i], '\n')
	return fmt.Errorf("JSON5 line %d, column %d: %s", line, col, fmt.Sprintf(format, args...))
}

func (p *json5) peekRune() rune {
	r, _ := utf8.DecodeRuneInString(p.s[p.i:])
	return r
}

// space skips white space and comments.
func (p *json5) space() error {
	for p.i < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		switch {
		case r == '/' && strings.HasPrefix(p.s[p.i:], "//"):
			end := strings.IndexAny(p.s[p.i:], "\n\r\u2028\u2029")
			if end < 0 {
				p.i = len(p.s)
			} else {
				p.i += end
			}
		case r == '/' && strings.HasPrefix(p.s[p.i:], "/*"):
			end := strings.Index(p.s[p.i+2:], "*/")
			if end < 0 {
				return p.errorf("unterminated /* comment")
			}
			p.i += 2 + end + 2
		case unicode.IsSpace(r) || r == '\ufeff':
			p.i += n
		default:
			return nil
		}
	}
	return nil
}

func (p *json5) value(depth int) (any, error) {
	if depth > json5MaxDepth {
		return nil, p.errorf("nested too deeply")
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.i >= len(p.s) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"' || c == '\'':
		return p.str()
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	}
	id := p.ident()
	switch id {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	case "Infinity":
		return math.Inf(1), nil
	case "NaN":
		return math.NaN(), nil
	}
	return nil, p.errorf("unexpected %q", p.peekRune())
}

func (p *json5) object(depth int) (any, error) {
	p.i++ // {
	m := map[string]any{}
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i >= len(p.s) {
			return nil, p.errorf("unterminated object")
		}
		if p.s[p.i] == '}' {
			p.i++
			return m, nil
		}
		var key string
		if c := p.s[p.i]; c == '"' || c == '\'' {
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			key = k
		} else if key = p.ident(); key == "" {
			return nil, p.errorf("want an object key, got %q", p.peekRune())
		}
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.errorf("want ':' after key %q", key)
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[key] = v
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			continue
		}
		return nil, p.errorf("want ',' or '}' in object")
	}
}

func (p *json5) array(depth int) (any, error) {
	p.i++ // [
	a := []any{}
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i >= len(p.s) {
			return nil, p.errorf("unterminated array")
		}
		if p.s[p.i] == ']' {
			p.i++
			return a, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == ']' {
			continue
		}
		return nil, p.errorf("want ',' or ']' in array")
	}
}

// ident reads an ECMAScript identifier name (no \u escapes), or "".
func (p *json5) ident() string {
	start := p.i
	for p.i < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		if r == '_' || r == '$' || unicode.IsLetter(r) || (p.i > start && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r))) {
			p.i += n
			continue
		}
		break
	}
	return p.s[start:p.i]
}

func (p *json5) str() (string, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), nil
		case c == '\n' || c == '\r':
			return "", p.errorf("newline in string")
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		p.i++ // backslash
		if p.i >= len(p.s) {
			break
		}
		e := p.s[p.i]
		p.i++
		switch e {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '0':
			b.WriteByte(0)
		case '\n':
			// line continuation
		case '\r':
			if p.i < len(p.s) && p.s[p.i] == '\n' {
				p.i++
			}
		case 'x':
			if p.i+2 > len(p.s) {
				return "", p.errorf("short \\x escape")
			}
			n, err := strconv.ParseUint(p.s[p.i:p.i+2], 16, 8)
			if err != nil {
				return "", p.errorf("bad \\x escape")
			}
			b.WriteRune(rune(n))
			p.i += 2
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16IsHigh(r) && strings.HasPrefix(p.s[p.i:], "\\u") {
				save := p.i
				p.i += 2
				lo, err := p.hex4()
				if err == nil && lo >= 0xDC00 && lo <= 0xDFFF {
					r = (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000
				} else {
					p.i = save
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(e) // \' \" \\ \/ and any other character stand for themselves
		}
	}
	return "", p.errorf("unterminated string")
}

func utf16IsHigh(r rune) bool { return r >= 0xD800 && r <= 0xDBFF }

func (p *json5) hex4() (rune, error) {
	if p.i+4 > len(p.s) {
		return 0, p.errorf("short \\u escape")
	}
	n, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 16)
	if err != nil {
		return 0, p.errorf("bad \\u escape")
	}
	p.i += 4
	return rune(n), nil
}

func (p *json5) number() (any, error) {
	start := p.i
	sign := 1.0
	if c := p.s[p.i]; c == '+' || c == '-' {
		if c == '-' {
			sign = -1
		}
		p.i++
	}
	rest := p.s[p.i:]
	switch {
	case strings.HasPrefix(rest, "Infinity"):
		p.i += len("Infinity")
		return sign * math.Inf(1), nil
	case strings.HasPrefix(rest, "NaN"):
		p.i += len("NaN")
		return math.NaN(), nil
	case strings.HasPrefix(rest, "0x") || strings.HasPrefix(rest, "0X"):
		p.i += 2
		h := p.i
		for p.i < len(p.s) && strings.IndexByte("0123456789abcdefABCDEF", p.s[p.i]) >= 0 {
			p.i++
		}
		n, err := strconv.ParseUint(p.s[h:p.i], 16, 64)
		if err != nil {
			return nil, p.errorf("bad hex number %q", p.s[start:p.i])
		}
		return sign * float64(n), nil
	}
	for p.i < len(p.s) && strings.IndexByte("0123456789.eE+-", p.s[p.i]) >= 0 {
		if c := p.s[p.i]; (c == '+' || c == '-') && p.s[p.i-1] != 'e' && p.s[p.i-1] != 'E' {
			break
		}
		p.i++
	}
	lit := strings.TrimPrefix(strings.TrimPrefix(p.s[start:p.i], "+"), "-")
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return nil, p.errorf("bad number %q", p.s[start:p.i])
	}
	return sign * f, nil
}
