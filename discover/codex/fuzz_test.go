package codex

import (
	"regexp"
	"strings"
	"testing"
)

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x","cwd":"/w"}}`,
		`{"timestamp":"99999-01-01T00:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":-5}}}}`,
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`,
		`{`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		decode(b)
		_ = parseTS(string(b))
	})
}

// FuzzIDFromStem: the table-driven id check of a rollout name answers as the
// pattern it stands for, in lower case.
func FuzzIDFromStem(f *testing.F) {
	f.Add("rollout-2026-11-20T21-44-31-01a1faeb-1023-71b2-9931-d11b29406e2b")
	f.Add("rollout-2026-11-20T21-44-31-01A1FAEB-1023-71b2-9931-d11b29406e2b")
	f.Add("rollout-2026-11-20T21-44-31-01a1faeb-1023-71b2-9931-d11b29406e2g")
	f.Add("x")
	re := regexp.MustCompile(`([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$`)
	f.Fuzz(func(t *testing.T, stem string) {
		want := ""
		if len(stem) >= 36 {
			if m := re.FindString(stem[len(stem)-36:]); m != "" {
				want = strings.ToLower(m)
			}
		}
		if got := idFromStem(stem); got != want {
			t.Fatalf("idFromStem(%q) = %q, want %q", stem, got, want)
		}
	})
}
