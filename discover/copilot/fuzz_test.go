package copilot

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/discover"
)

// seedLines adds every line of the fixture's event logs.
func seedLines(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtureHome, ".copilot/session-state/*/events.jsonl"))
	if len(paths) == 0 {
		f.Fatal("no fixture event logs")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
	}
	for _, s := range []string{evUsage1, evShutdown2, `{`, `[]`, `{"type":"session.usage_record","data":{"usage":{"inputTokens":1,"cacheReadTokens":5}}}`,
		`{"type":"session.usage_record","data":{"usage":{"inputTokens":9e18,"outputTokens":9e18}}}`,
		`{"type":"tool.execution_complete","data":{"toolCallId":"t","success":false,"error":{"message":"\u001b[31mboom"}}}`} {
		f.Add([]byte(s))
	}
}

func nonNegative(t *testing.T, what string, tok discover.Tokens) {
	t.Helper()
	if tok.Input < 0 || tok.Output < 0 || tok.CacheRead < 0 || tok.CacheWrite < 0 {
		t.Fatalf("%s: negative tokens %+v", what, tok)
	}
}

// FuzzParseEvents: any line, alone or twice after a real session's start,
// never panics and never gives negative tokens; slots sum to the tokens.
func FuzzParseEvents(f *testing.F) {
	seedLines(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		body := bytes.Join([][]byte{[]byte(evStartLine), line, []byte(evUserLine), line, []byte(evUsage1)}, []byte("\n"))
		s, err := parseEvents(bytes.NewReader(append(body, '\n')))
		if err != nil {
			t.Fatal(err)
		}
		nonNegative(t, "tokens", s.tokens())
		nonNegative(t, "records", s.Tokens)
		if s.Slots.Sum() != s.Tokens {
			t.Fatalf("slots %v do not sum to %v", s.Slots.Sum(), s.Tokens)
		}
		s.outcome()
		s.inFlight()
		s.errDetail()
		_ = s.model()
	})
}

// FuzzPeekEvents: rendering any line never panics.
func FuzzPeekEvents(f *testing.F) {
	seedLines(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		body := bytes.Join([][]byte{[]byte(`{"type":"assistant.message","data":{"toolRequests":[{"toolCallId":"t","name":"bash","arguments":{"command":"ls"}}]}}`), line, line}, []byte("\n"))
		if _, err := peekEvents(context.Background(), bytes.NewReader(append(body, '\n')), true); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseWorkspace: workspace.yaml of any shape never panics.
func FuzzParseWorkspace(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtureHome, ".copilot/session-state/*/workspace.yaml"))
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte("id: [\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseWorkspace(b)
	})
}
