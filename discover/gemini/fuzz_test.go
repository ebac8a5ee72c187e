package gemini

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// fixtureFiles are the recorded session files, the fuzz seeds.
func fixtureFiles(f *testing.F) [][]byte {
	paths, _ := filepath.Glob(filepath.Join(fixtureHome, ".gemini", "tmp", "*", "chats", "session-*"))
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		f.Fatal("no fixture files")
	}
	return out
}

func checkSummary(t *testing.T, s *summary) {
	tok, slots := s.Tokens()
	if tok.Input < 0 || tok.Output < 0 || tok.CacheRead < 0 || tok.CacheWrite != 0 {
		t.Fatalf("tokens %+v", tok)
	}
	if slots.Sum() != tok && len(slots) > 0 {
		// Slots leave out only usage without a timestamp.
		st := slots.Sum()
		if st.Input > tok.Input || st.Output > tok.Output || st.CacheRead > tok.CacheRead {
			t.Fatalf("slots %+v exceed tokens %+v", st, tok)
		}
	}
	if s.Prompts() < 0 || (s.Prompts() == 0) != (s.FirstPrompt == "") {
		t.Fatalf("prompts %d, first %q", s.Prompts(), s.FirstPrompt)
	}
	s.outcome()
}

// FuzzParse feeds whole files (JSONL patch logs) to the session parser and the
// peek replay: never a panic, never a negative count.
func FuzzParse(f *testing.F) {
	for _, b := range fixtureFiles(f) {
		f.Add(b)
	}
	f.Add([]byte("{\"$rewindTo\":\"x\"}\n{\"$set\":{\"messages\":[{\"id\":\"x\",\"type\":\"gemini\",\"tokens\":{\"input\":1e300}}]}}\n"))
	f.Add([]byte("{\"id\":\"g\",\"type\":\"gemini\",\"tokens\":{\"input\":1,\"cached\":2}}\n{\"$set\":7}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := readJSONL(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		checkSummary(t, s)
		msgs, err := replayFrom(context.Background(), bytes.NewReader(b), false)
		if err != nil {
			t.Fatal(err)
		}
		render(msgs, true)
	})
}

// FuzzParseJSON feeds older CLIs' single-JSON session files.
func FuzzParseJSON(f *testing.F) {
	f.Add([]byte(`{"sessionId":"a","startTime":"2025-01-01T00:00:00Z","messages":[{"id":"u","type":"user","content":"hi"},{"id":"g","type":"gemini","content":"yo","tokens":{"input":3,"output":1,"cached":1},"model":"m"}]}`))
	for _, b := range fixtureFiles(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := readJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		checkSummary(t, s)
		msgs, err := replayFrom(context.Background(), bytes.NewReader(b), true)
		if err != nil {
			t.Fatal(err)
		}
		render(msgs, false)
	})
}

// FuzzParseReport feeds the CLI's temp-dir error reports (and their names).
func FuzzParseReport(f *testing.F) {
	paths, _ := filepath.Glob("testdata/failed/tmpdir/*.json")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, filepath.Base(p), "DENYME please", "/tmp/gemh/.gemini/tmp/authproj")
	}
	f.Fuzz(func(t *testing.T, b []byte, name, prompt, dir string) {
		parseReport(b, failedTurn{Prompt: prompt, ProjectDir: dir})
		reportTime(name)
	})
}
