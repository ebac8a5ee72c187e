package pi

import "testing"

func FuzzFeed(f *testing.F) {
	for _, s := range []string{
		`{"type":"session","id":"x","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}`,
		`{"type":"message","id":"a","timestamp":"2026-01-01T00:00:00Z","message":{"role":"assistant","model":"m","provider":"p","usage":{"input":1,"output":-2,"cost":{"total":"NaN"}},"timestamp":1e300}}`,
		`{"type":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}`,
		`{`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s summary
		s.feed(b)
		s.activity()
		s.started()
		firstPrompt(b)
	})
}
