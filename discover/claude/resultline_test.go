package claude

import (
	"encoding/json"
	"strings"
	"testing"
)

// resultLineCases are tool_result contents around resultLine's 1 KiB shortcut:
// first lines that end before, at and after it, long runs of blank lines and
// spaces, escapes and multi-byte runes across the cut, and text blocks.
func resultLineCases() [][]byte {
	var texts []string
	for _, pad := range []int{0, 1, 90, 99, 100, 101, 950, 980, 1000, 1020, 1023, 1024, 1030, 70000} {
		texts = append(texts,
			strings.Repeat(" ", pad)+"first line\nsecond",
			strings.Repeat("\n", pad)+"after blank lines\nmore",
			strings.Repeat("x", pad)+"\n"+strings.Repeat("y", 5000),
			"abc"+strings.Repeat(" ", pad)+"def"+strings.Repeat("z", 3000),
			strings.Repeat("é", pad)+"\"quoted\"\ttab\nnext",
			strings.Repeat(" \n", pad)+strings.Repeat("w", 200),
			strings.Repeat("\t", pad),
			strings.Repeat("😀", pad)+"\nend",
			strings.Repeat(" ", pad)+strings.Repeat("v", 300)+"\n",
			strings.Repeat("\n", pad)+strings.Repeat("é", 80)+" "+strings.Repeat("u", 80),
		)
	}
	var out [][]byte
	for _, t := range texts {
		s, _ := json.Marshal(t)
		out = append(out, s)
		blocks, _ := json.Marshal([]map[string]string{{"type": "image"}, {"type": "text", "text": strings.TrimLeft(t, " \n\t")[:0]}, {"type": "text", "text": t}, {"type": "text", "text": "later"}})
		out = append(out, blocks)
	}
	return append(out, []byte(`"\u00e9\n"`), []byte(`[]`), []byte(`null`), []byte(`"`+strings.Repeat(`\n`, 600)+strings.Repeat(`\u00e9`, 300)+`"`))
}

// TestResultLine: the shortcut gives what decoding the whole prefix gives.
func TestResultLine(t *testing.T) {
	for i, c := range resultLineCases() {
		want := firstLine(resultText(c), 100)
		if got := resultLine(c, 100); got != want {
			t.Errorf("case %d (%.60q…): got %q, want %q", i, c, got, want)
		}
	}
}

func FuzzResultLine(f *testing.F) {
	for _, c := range resultLineCases() {
		f.Add(c, 100)
	}
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		if max < 1 || max > 2000 {
			return
		}
		// A tool result's body is a value the record's JSON scan delimited: an
		// unterminated string (which the whole decode rejects, the prefix decode
		// need not) never reaches resultLine.
		if !json.Valid(b) {
			return
		}
		if got, want := resultLine(b, max), firstLine(resultText(b), max); got != want {
			t.Errorf("%q: got %q, want %q", b, got, want)
		}
	})
}
