package claude

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover/proc"
	"github.com/agentctl/agentctl/e2e/synth"
)

// BenchmarkDiscover lists ~2,000 synthetic sessions (10 KB–200 KB) with a warm
// parse index: the path every `agentctl list` takes once the index exists.
func BenchmarkDiscover(b *testing.B) {
	home := b.TempDir()
	if err := synth.WriteClaudeHome(home, 2000, 10<<10, 200<<10, 1); err != nil {
		b.Fatal(err)
	}
	env := newEnv(b, home, &proc.Fake{})
	a := testAdapter()
	if ss, err := a.Discover(context.Background(), env.Env); err != nil || len(ss) != 2000 {
		b.Fatalf("warm-up: %d sessions, %v", len(ss), err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Discover(context.Background(), env.Env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiscoverCold parses 200 synthetic sessions from scratch (no index):
// the first run on a machine, or AGENTCTL_NO_CACHE.
func BenchmarkDiscoverCold(b *testing.B) {
	home := b.TempDir()
	if err := synth.WriteClaudeHome(home, 200, 10<<10, 2<<20, 2); err != nil {
		b.Fatal(err)
	}
	env := newEnv(b, home, &proc.Fake{})
	env.NoCache = true
	a := testAdapter()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Discover(context.Background(), env.Env); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSynthHome: the generator's transcripts parse cleanly, and their repeated
// per-block usage is counted once per reply.
func TestSynthHome(t *testing.T) {
	home := t.TempDir()
	if err := synth.WriteClaudeHome(home, 30, 5<<10, 300<<10, 7); err != nil {
		t.Fatal(err)
	}
	ts, err := listTranscripts(home + "/.claude")
	if err != nil || len(ts) != 30 {
		t.Fatalf("%d transcripts, %v", len(ts), err)
	}
	again := t.TempDir()
	if err := synth.WriteClaudeHome(again, 30, 5<<10, 300<<10, 7); err != nil {
		t.Fatal(err)
	}
	ts2, _ := listTranscripts(again + "/.claude")
	ids := func(ts []transcript) (out []string) {
		for _, tr := range ts {
			out = append(out, tr.ID)
		}
		sort.Strings(out)
		return out
	}
	if diff := cmp.Diff(ids(ts), ids(ts2)); diff != "" {
		t.Errorf("same seed, other sessions (-first +second):\n%s", diff)
	}
	for _, tr := range ts {
		if st, err := os.Stat(tr.Path); err != nil || st.Size() < 5<<10 || st.Size() > 300<<10+16<<10 {
			t.Errorf("%s: size %d outside 5 KiB–300 KiB (+ one turn)", tr.ID, st.Size())
		}
		a := parseWhole(t, tr.Path)
		switch {
		case a.BadLines != 0 || a.TooLong != 0:
			t.Errorf("%s: %d bad lines", tr.ID, a.BadLines)
		case a.Cwd == "" || a.Prompt == "" || a.Model != "claude-opus-4-8" || !strings.HasPrefix(a.Cwd, "/home/bench/"):
			t.Errorf("%s: cwd %q prompt %q model %q", tr.ID, a.Cwd, a.Prompt, a.Model)
		case a.Messages != 2*a.Prompts || a.AssistantLines <= a.Messages:
			t.Errorf("%s: %d prompts, %d messages from %d lines: want 2 replies per prompt, several lines each", tr.ID, a.Prompts, a.Messages, a.AssistantLines)
		}
	}
}
