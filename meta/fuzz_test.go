package meta

import (
	"strings"
	"testing"
	"time"
)

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"2h", "30d", "1.5h", "7d", "0", "-1h", "99999999999d", "1e9h", "d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		// Surrounding blanks are trimmed (a config value " -1h" is signed).
		if v := strings.TrimSpace(s); err == nil && d < 0 && (v == "" || v[0] != '-') {
			t.Fatalf("ParseDuration(%q) = %v: an unsigned duration came out negative (overflow)", s, d)
		}
		_ = time.Duration(d)
	})
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{`{}`, `{"schema":1}`, `{"launch_ttl":"7d","adapters":{"codex":{"binary":"x"}}}`, `{"x":`, `[]`, `null`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, _, err := ParseConfig("/fuzz/config.json", b)
		if err == nil && c == nil {
			t.Fatal("nil config without an error")
		}
	})
}
