package openclaw

import (
	"encoding/json"
	"testing"
)

func FuzzToMessages(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1767225600000}`,
		`{"role":"assistant","content":[{"type":"toolCall","name":"exec","arguments":{"command":"ls"}}],"timestamp":1e300}`,
		`{"role":"toolResult","content":"x"}`, `{`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		toMessages([]json.RawMessage{b})
		contentText(b)
		toolSummary(b)
	})
}
