package discover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// ErrNoSession is returned by Peek when a session has nothing to show yet.
var ErrNoSession = errors.New("no messages yet")

var ansiRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)
})

// Clean strips ANSI escapes and C0 control characters (except \n and \t) and
// replaces invalid UTF-8, so agent text cannot drive the user's terminal.
func Clean(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = ansiRE().ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// OneLine collapses whitespace and cuts s to max runes with an ellipsis.
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(Clean(s)), " ")
	if max > 0 && utf8.RuneCountInString(s) > max {
		r := []rune(s)
		return string(r[:max-1]) + "…"
	}
	return s
}

// Truncate cuts s to max runes (no whitespace changes).
func Truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max])
}

// FirstLine is the first non-empty line of s, trimmed and cut to max runes.
func FirstLine(s string, max int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return Truncate(l, max)
		}
	}
	return ""
}

// ArgSummary is the one-line argument shown after a tool's name: the first
// non-empty string among keys of the JSON object args, else args as compact
// JSON (the raw text when it is not JSON), at most max runes either way.
func ArgSummary(args json.RawMessage, max int, keys ...string) string {
	var m map[string]any
	if len(keys) > 0 && json.Unmarshal(args, &m) == nil {
		for _, k := range keys {
			if v, ok := m[k].(string); ok && v != "" {
				return OneLine(v, max)
			}
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		return OneLine(string(args), max)
	}
	return OneLine(b.String(), max)
}

// LastN is the last n messages of ms (n <= 0: all).
func LastN(ms []Message, n int) []Message {
	if n > 0 && len(ms) > n {
		return ms[len(ms)-n:]
	}
	return ms
}

// Errorf wraps an adapter error with the path it concerns.
func Errorf(path string, err error) error { return fmt.Errorf("%s: %w", path, err) }
