package claude

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/discover"
)

// TestPeekTruncatedWhileMapped: a transcript truncated after peek mapped it
// faults on access; peek then reads it instead of crashing.
func TestPeekTruncatedWhileMapped(t *testing.T) {
	const sid, cwd = idA, "/w"
	home := t.TempDir()
	pad := strings.Repeat("x", 64<<10)
	var lines []string
	for i := 0; i < 8; i++ {
		lines = append(lines, userPrompt(sid, cwd, "2026-11-20T21:00:0"+itoa(i)+".000Z", "prompt "+itoa(i)+" "+pad))
	}
	p := writeTranscript(t, home, "-w", sid, lines...)
	want := peek(t, newEnv(t, home, nil).Env, discover.Session{ID: sid, Path: p}, 3)
	keep := lines[:2]
	shorter := strings.Join(keep, "\n") + "\n"
	// Truncated right after it was mapped: the mapped read faults, and says so.
	truncateAfterMapping := func(path string) (*discover.Tail, error) {
		tail, err := discover.OpenTailMapped(path)
		if err == nil && !tail.Mapped() {
			t.Skip("this platform does not map transcripts")
		}
		if terr := os.Truncate(path, int64(len(shorter))); terr != nil {
			t.Fatal(terr)
		}
		return tail, err
	}
	if _, err := peekTail(t.Context(), p, 3, truncateAfterMapping); !errors.Is(err, errFault) {
		t.Fatalf("mapped read of a truncated file: err %v, want errFault", err)
	}
	// peek, which falls back to plain reads on errFault, shows what is left.
	got := peek(t, newEnv(t, home, nil).Env, discover.Session{ID: sid, Path: p}, 3)
	if len(want) != 3 || len(got) != 2 || !strings.HasPrefix(got[1].Text, "prompt 1 ") {
		t.Errorf("before: %d items; after truncation: %+v", len(want), got)
	}
}
