package claude

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

// fact is one row of the fixture README's "Expected facts — Claude Code
// transcripts" table.
type fact struct {
	id, bucket, cwd, version, entrypoint, model, prompt string
	prompts, toolResults, meta                          int
	assistantLines, messages                            int
	in, out, cacheCreate, cacheRead                     int64
	endsWith                                            string // "assistant end_turn" | "user prompt"
}

var fixtureFacts = []fact{
	{"63a9dd20-452d-46cb-844e-bd4800ad2458", "-home-dev-webapp", "/home/dev/webapp", "2.1.197", "sdk-cli", "claude-opus-4-8", "say hi", 3, 0, 0, 3, 3, 30, 15, 0, 0, "assistant end_turn"},
	{"9ee4fdd2-41ff-4937-a320-74e0a6f6767c", "-home-dev-webapp", "/home/dev/webapp", "2.1.197", "sdk-cli", "claude-opus-4-8", "say hi", 5, 0, 0, 5, 5, 50, 25, 0, 0, "assistant end_turn"},
	{"75098152-d081-42b6-b9b6-e7787f9a8747", "-home-dev-api-server", "/home/dev/api-server", "2.1.197", "sdk-cli", "claude-opus-4-8", "TOOLTEST please run it", 1, 1, 0, 2, 2, 20, 10, 0, 0, "assistant end_turn"},
	{"26c4fe79-442c-4df9-8a1c-fd975e69e040", "-home-dev-scratch", "/home/dev/scratch", "2.1.197", "sdk-cli", "", "sig test SLEEP=25", 1, 0, 0, 0, 0, 0, 0, 0, 0, "user prompt"},
	{"491a4bda-98b7-49ec-936d-04a53f8571e6", "-home-dev-infra", "/home/dev/infra", "2.1.197", "cli", "", "slow SLEEP=10", 1, 0, 0, 0, 0, 0, 0, 0, 0, "user prompt"},
	{"a120e32a-dc4b-4674-b6da-a98024f2d6f8", "-home-dev-notes", "/home/dev/notes", "2.1.197", "cli", "claude-opus-4-8", "first prompt", 1, 0, 0, 1, 1, 10, 5, 0, 0, "assistant end_turn"},
	{"7e3394de-1ab5-4927-b7d8-0b4531418047", "-home-dev-notes", "/home/dev/notes", "2.1.197", "cli", "claude-opus-4-8", "second prompt after clear", 1, 0, 2, 1, 1, 10, 5, 0, 0, "assistant end_turn"},
	{"7f04c4ca-6b23-48fb-8d29-ea8f0ec1d19d", "-home-dev-My-Project-dir", "/home/dev/My.Project dir", "2.1.197", "sdk-cli", "claude-opus-4-8", "slug test SLEEP=3", 1, 0, 0, 1, 1, 10, 5, 0, 0, "assistant end_turn"},
	{"ff38fc66-0e6f-49a9-bddf-965cd7d30d7f", "-home-dev-cli-tool", "/home/dev/cli-tool", "2.1.329", "sdk-cli", "claude-opus-5-5", "TOOLTEST v329 SLEEP=3\nTOOLCMD: echo v329", 2, 2, 0, 4, 4, 40, 20, 0, 0, "assistant end_turn"},
	{"d957d5fe-663c-4e98-a802-1b18889c112d", "-home-dev-cli-tool", "/home/dev/cli-tool", "2.1.329", "cli", "claude-opus-5-5", "first prompt v329", 2, 0, 0, 1, 1, 10, 5, 0, 0, "user prompt"},
}

// parseWhole runs the aggregator over a whole file, as a cold index does.
func parseWhole(t testing.TB, path string) *aggregate {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	var a aggregate
	if _, partial, err := parseRange(f, 0, st.Size(), &a, discover.Budget{}, nil); err != nil || partial {
		t.Fatalf("parse %s: partial=%v err=%v", path, partial, err)
	}
	return &a
}

func endsWith(a *aggregate) string {
	switch a.Last.Kind {
	case tailEnd:
		return "assistant " + a.Last.StopReason
	case tailPrompt:
		return "user prompt"
	}
	return "other"
}

// TestFixtureTranscriptFacts checks every per-transcript fact of the fixture
// README: counts, tokens and the last conversation record.
func TestFixtureTranscriptFacts(t *testing.T) {
	for _, f := range fixtureFacts {
		t.Run(f.id[:8], func(t *testing.T) {
			a := parseWhole(t, filepath.Join("testdata/home/.claude/projects", f.bucket, f.id+".jsonl"))
			u := a.Tokens()
			got := fact{
				id: f.id, bucket: f.bucket, cwd: a.Cwd, version: a.Version, entrypoint: a.Entrypoint, model: a.Model,
				prompt: a.firstPrompt(), prompts: a.Prompts, toolResults: a.ToolResults, meta: a.MetaUsers,
				assistantLines: a.AssistantLines, messages: a.Messages,
				in: u.In, out: u.Out, cacheCreate: u.CW5m + u.CW1h, cacheRead: u.CR, endsWith: endsWith(a),
			}
			if diff := cmp.Diff(f, got, cmp.AllowUnexported(fact{})); diff != "" {
				t.Errorf("facts (-README +parsed):\n%s", diff)
			}
			if a.BadLines != 0 || a.TooLong != 0 {
				t.Errorf("skipped lines: %d invalid, %d too long; want none", a.BadLines, a.TooLong)
			}
		})
	}
}

// TestFixtureSessions checks the listing of every fixture transcript: the same
// facts as they reach discover.Session.
func TestFixtureSessions(t *testing.T) {
	env := newEnv(t, copyHome(t), nil)
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	if len(got) != len(fixtureFacts) {
		t.Errorf("got %d sessions %v, want %d", len(got), sortedIDs(got), len(fixtureFacts))
	}
	for _, f := range fixtureFacts {
		s, ok := got[f.id]
		if !ok {
			t.Errorf("session %s missing", f.id)
			continue
		}
		var models []string
		if f.model != "" {
			models = []string{f.model}
		}
		type view struct {
			Cwd, Model, Prompt, Version, Entrypoint, Branch string
			Models                                          []string
			Tokens                                          discover.Tokens
		}
		want := view{f.cwd, f.model, f.prompt, f.version, f.entrypoint, "HEAD", models,
			discover.Tokens{Input: f.in, Output: f.out, CacheWrite: f.cacheCreate, CacheRead: f.cacheRead}}
		var tok discover.Tokens
		if s.Tokens != nil {
			tok = *s.Tokens
		} else {
			t.Errorf("%s: tokens missing", f.id)
		}
		have := view{s.Cwd, s.Model, s.Prompt, s.AgentVersion, s.Entrypoint, s.GitBranch, s.Models, tok}
		if diff := cmp.Diff(want, have); diff != "" {
			t.Errorf("%s (-want +got):\n%s", f.id, diff)
		}
		if s.Adapter != Name || filepath.Base(s.Path) != f.id+".jsonl" {
			t.Errorf("%s: adapter %q path %q", f.id, s.Adapter, s.Path)
		}
	}
}

// TestFixtureTimesAndTitles pins started_at (smallest top-level timestamp, which
// for a fork is its parent's), last_activity, title and permission mode.
func TestFixtureTimesAndTitles(t *testing.T) {
	env := newEnv(t, copyHome(t), nil)
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	type row struct{ Started, Last, Title, Perm string }
	want := map[string]row{
		"63a9dd20-452d-46cb-844e-bd4800ad2458": {"2026-11-20T21:42:34.831Z", "2026-11-20T21:44:39.484Z", "say hi", "default"},
		"9ee4fdd2-41ff-4937-a320-74e0a6f6767c": {"2026-11-20T21:42:34.923Z", "2026-11-20T21:44:40.679Z", "say hi", "default"},
		"7e3394de-1ab5-4927-b7d8-0b4531418047": {"2026-11-20T21:44:56.38Z", "2026-11-20T21:45:01.384Z", "second prompt after clear", "default"},
		"d957d5fe-663c-4e98-a802-1b18889c112d": {"2026-11-20T21:47:43.328Z", "2026-11-20T21:47:48.075Z", "first prompt v329", "auto"},
		"ff38fc66-0e6f-49a9-bddf-965cd7d30d7f": {"2026-11-20T21:47:20.332Z", "2026-11-20T21:48:58.883Z", "TOOLTEST v329 SLEEP=3 TOOLCMD: echo v329", "default"},
	}
	for id, w := range want {
		s := got[id]
		have := row{s.StartedAt.Format(time.RFC3339Nano), s.LastActivity.Format(time.RFC3339Nano), s.Title, s.PermissionMode}
		if diff := cmp.Diff(w, have); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id[:8], diff)
		}
	}
}
