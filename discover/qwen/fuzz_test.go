package qwen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/discover"
)

// seedChats adds every fixture transcript, whole and line by line.
func seedChats(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtureHome, ".qwen", "projects", "*", "chats", "*.jsonl"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		for _, l := range bytes.Split(b, []byte("\n")) {
			f.Add(append(l, '\n'))
		}
	}
	f.Add([]byte("{\n"))
	f.Add([]byte(`{"type":"system","subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_response","response_id":"r","input_token_count":1e300,"output_token_count":-1,"cached_content_token_count":"x"}}}` + "\n"))
}

// FuzzParse: the transcript parser never panics, never yields a negative
// count, and its subagent share never exceeds the total.
func FuzzParse(f *testing.F) {
	seedChats(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parse(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		tok := s.Tokens()
		for _, n := range []int64{tok.Input, tok.Output, tok.CacheRead, tok.CacheWrite, s.Sub.Input, s.Sub.Output, s.Sub.CacheRead} {
			if n < 0 {
				t.Fatalf("negative count in %+v / %+v", tok, s.Sub)
			}
		}
		if s.Sub.Input > tok.Input || s.Sub.Output > tok.Output || s.Sub.CacheRead > tok.CacheRead {
			t.Fatalf("subagent share %+v exceeds total %+v", s.Sub, tok)
		}
		s.outcome()
		s.blocked()
	})
}

// FuzzPeek: rendering any line never panics.
func FuzzPeek(f *testing.F) {
	seedChats(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var out []discover.Message
		for _, l := range bytes.Split(b, []byte("\n")) {
			out = render(out, l, true)
		}
	})
}
