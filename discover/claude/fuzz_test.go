package claude

import "testing"

func FuzzParseRecord(f *testing.F) {
	for _, s := range []string{
		`{"type":"assistant","timestamp":"2026-01-01T00:00:00Z","message":{"model":"m","usage":{"input_tokens":1,"output_tokens":-2,"cache_read_input_tokens":1e30}}}`,
		`{"type":"user","cwd":"/w\u001b[2J","message":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"type":"summary"}`, `{`, `[]`, `{"message":{"content":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r record
		parseRecord(b, &r)
		parseMessage(b)
		parseUsage(b)
		parseUserContent(b, 200)
	})
}
