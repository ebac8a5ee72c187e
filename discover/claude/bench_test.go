package claude

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/e2e/synth"
	"github.com/agentctl/agentctl/proc"
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

// benchHome is a warm 2,000-session home (as BenchmarkDiscover's) and one of its
// session ids.
func benchHome(b *testing.B) (*testEnv, *Adapter, string) {
	home := b.TempDir()
	if err := synth.WriteClaudeHome(home, 2000, 10<<10, 200<<10, 1); err != nil {
		b.Fatal(err)
	}
	env := newEnv(b, home, &proc.Fake{})
	a := testAdapter()
	ss, err := a.Discover(context.Background(), env.Env)
	if err != nil || len(ss) != 2000 {
		b.Fatalf("warm-up: %d sessions, %v", len(ss), err)
	}
	return env, a, ss[len(ss)/2].ID
}

// BenchmarkFind looks one session up by full id and by an 8-character prefix in
// the warm home: what status, peek and logs pay to resolve their argument.
func BenchmarkFind(b *testing.B) {
	env, a, id := benchHome(b)
	for _, q := range []discover.Query{{Prefix: id}, {Prefix: id[:8]}} {
		b.Run(fmt.Sprintf("prefix%d", len(q.Prefix)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ss, err := a.Find(context.Background(), env.Env, q); err != nil || len(ss) != 1 {
					b.Fatalf("%d sessions, %v", len(ss), err)
				}
			}
		})
	}
}

// BenchmarkDiscoverOnlyAlive is BenchmarkDiscover for `list` without -a: with no
// live claude, only transcripts written in the last minute are read.
func BenchmarkDiscoverOnlyAlive(b *testing.B) {
	env, a, _ := benchHome(b)
	env.OnlyAlive = true
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Discover(context.Background(), env.Env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPeekBigTail peeks the last 20 messages of a 40 MB transcript whose
// tool results are megabytes long, so the window doubles up to many megabytes.
func BenchmarkPeekBigTail(b *testing.B) {
	home := b.TempDir()
	const sid, cwd = idA, "/w"
	var lines []string
	out := strings.Repeat("result line of a long tool output\n", 60000) // ~2 MB
	for i := 0; i < 20; i++ {
		ts := fmt.Sprintf("2026-11-20T21:%02d:00.000Z", i)
		lines = append(lines,
			userPrompt(sid, cwd, ts, fmt.Sprintf("prompt %d", i)),
			fmt.Sprintf(`{"type":"assistant","sessionId":%q,"timestamp":%q,"requestId":"r%d","message":{"id":"m%d","model":"claude-opus-4-8","role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"make"}}],"usage":{"input_tokens":1,"output_tokens":1}}}`, sid, ts, i, i, i),
			fmt.Sprintf(`{"type":"user","sessionId":%q,"timestamp":%q,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":%q}]}}`, sid, ts, i, out),
		)
	}
	p := writeTranscript(b, home, "-w", sid, lines...)
	env := newEnv(b, home, nil)
	a := testAdapter()
	b.ReportAllocs()
	for b.Loop() {
		if ms, err := a.Peek(context.Background(), env.Env, discover.Session{ID: sid, Path: p}, 20); err != nil || len(ms) != 20 {
			b.Fatalf("%d messages, %v", len(ms), err)
		}
	}
}
