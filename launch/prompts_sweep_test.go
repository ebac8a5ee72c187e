package launch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A prompt file a killed launcher left behind goes at the next sweep; one of a
// launch still starting stays.
func TestSweepPromptsRemovesOnlyOldOnes(t *testing.T) {
	l := testLauncher(t)
	dir := filepath.Join(l.Store.Dir, "prompts")
	if n, err := l.SweepPrompts(); n != 0 || err != nil {
		t.Fatalf("no prompts dir: %d, %v", n, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	now := l.now()
	for name, age := range map[string]time.Duration{"claude-code-prompt-old": 2 * time.Hour, "codex-prompt-new": time.Minute} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("the whole task"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := l.SweepPrompts()
	if n != 1 || err != nil {
		t.Fatalf("removed %d (%v), want 1", n, err)
	}
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"codex-prompt-new"}) {
		t.Errorf("left %v, want only the new prompt", left)
	}
}
