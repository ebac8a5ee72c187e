package gemini

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
)

// TestIndexKeepsUnchangedFiles: a listing with the parse index warm opens no
// session file and lists exactly what a listing without the index does; a file
// appended to since (a live session's next turn) is read again, and the
// listing follows it.
func TestIndexKeepsUnchangedFiles(t *testing.T) {
	home := t.TempDir()
	const id = "0a000000-2222-4333-8444-555555555555"
	p := writeSession(t, home, "p", "/w/p", "session-2026-12-01T10-00-0a000000.jsonl",
		header(id, "2026-12-01T10:00:00.000Z"), setMessages("2026-12-01T10:00:00.001Z", ctxMsg),
		userMsg("u1", "2026-12-01T10:01:00.000Z", "first"), geminiMsg("g1", "2026-12-01T10:01:05.000Z", "done", tok1, "gemini-2.5-flash"))
	for i := range 20 {
		writeSession(t, home, "q", "/w/q", "session-2026-12-01T11-00-1b00000"+string(rune('a'+i%6))+".jsonl",
			header("1b00000"+string(rune('a'+i%6))+"-2222-4333-8444-555555555555", "2026-12-01T11:00:00.000Z"),
			userMsg("u1", "2026-12-01T11:01:00.000Z", "other"))
	}
	env, _ := testEnv(t, home, nil)
	env.StateDir = t.TempDir()
	uncached := func() map[string]discover.Session {
		env.NoCache = true
		defer func() { env.NoCache = false }()
		return discoverAll(t, env)
	}
	want := uncached()
	discoverAll(t, env) // indexes
	var mu sync.Mutex
	var opened []string
	restore := agentfs.SetHook(func(p string) { mu.Lock(); opened = append(opened, p); mu.Unlock() })
	got := discoverAll(t, env)
	restore()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("warm listing (-no index +index):\n%s", d)
	}
	for _, o := range opened {
		if strings.Contains(o, "/chats/") {
			t.Errorf("warm listing opened %s", o)
		}
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(userMsg("u2", "2026-12-01T10:02:00.000Z", "second") + "\n" + geminiMsg("g2", "2026-12-01T10:02:05.000Z", "done", tok1, "gemini-2.5-flash") + "\n")
	f.Close()
	want = uncached()
	got = discoverAll(t, env)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("after an append (-no index +index):\n%s", d)
	}
	if n := got[id].Extra["user_prompts"]; n != 2 {
		t.Errorf("after an append the session has %v prompts, want 2", n)
	}
}
