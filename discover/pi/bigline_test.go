package pi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/jsonl"
)

// TestLongLineNamed: a session file holding a line over jsonl.MaxLine (here a
// sparse run of 65 MiB between two entries) is listed from the rest of its
// lines, and every listing names the file in a warning, the first (which reads
// past the line) and the next (whose index entry is fresh and reads nothing),
// as Claude Code's does (docs/reading-limits.md).
func TestLongLineNamed(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".pi", "agent", "sessions", "--w--")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const id = "01a1b869-9e7c-730f-b314-09a8eca3a542"
	p := simple(t, dir, id, "2026-11-20T21:40:00.000Z", "/w", "hello")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if err := f.Truncate(st.Size() + jsonl.MaxLine + 1<<20); err != nil { // a line of NULs, sparse
		t.Fatal(err)
	}
	tail := "\n" + userMsg("aa000004", "aa000003", "2026-11-20T21:41:00.000Z", textBlocks("again")) + "\n" +
		asstMsg("aa000005", "aa000004", "2026-11-20T21:41:01.000Z", "FAKE-REPLY to: again", "stop", 200, 50, costObj(0.0003)) + "\n"
	if _, err := f.WriteString(tail); err != nil {
		t.Fatal(err)
	}
	f.Close()
	env, warns := testEnv(t, home, nil)
	env.StateDir = t.TempDir()
	for run := range 2 {
		*warns = nil
		ss := discovertest.DiscoverAll(t, New(), env)
		s, ok := ss[id]
		if !ok {
			t.Fatalf("run %d: session not listed (%d sessions, warnings %q)", run, len(ss), *warns)
		}
		if s.Tokens == nil || s.Tokens.Input != 123+200 || s.Tokens.Output != 45+50 {
			t.Errorf("run %d: tokens %+v, want the two replies around the long line (323 in, 95 out)", run, s.Tokens)
		}
		want := "1 file(s) with a line over 64 MiB, skipped as unreadable: " + p
		if len(*warns) != 1 || !strings.HasPrefix((*warns)[0], want) {
			t.Errorf("run %d: warnings %q, want one starting %q", run, *warns, want)
		}
	}
}
