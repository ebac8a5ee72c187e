package qwen

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// fact is what testdata/manifest.json says of one recorded session, copied
// here by hand (not from this package's output).
type fact struct {
	cwd, model    string
	models        []string
	prompt        string
	tokens        discover.Tokens
	subagents     discover.Tokens // manifest tokens_subagents
	status        string
	blocked       string
	started, last string
	file          string
}

var manifest = map[string]fact{
	"4d30ac6b-c8ca-4771-a849-ca3cedc7fc98": { // TUI, one prompt, SIGKILLed (stale sessions/22735.json)
		cwd: "/home/dev/webapp", model: "qwen3-coder-plus", models: []string{"qwen3-coder-plus"},
		prompt:    "explain the build layout",
		tokens:    discover.Tokens{Input: 3215, Output: 54, CacheRead: 7},
		subagents: discover.Tokens{Input: 2107, Output: 32, CacheRead: 4},
		status:    "stopped",
		started:   "2026-12-01T22:28:23.757Z", last: "2026-12-01T22:28:29.375Z",
		file: ".qwen/projects/-home-dev-webapp/chats/4d30ac6b-c8ca-4771-a849-ca3cedc7fc98.jsonl",
	},
	"5607b7d8-81ac-47ab-ad62-77346d688119": { // headless one-shot
		cwd: "/home/dev/webapp", model: "qwen3-coder-plus", models: []string{"qwen3-coder-plus"},
		prompt:    "list the TODO comments in main.go",
		tokens:    discover.Tokens{Input: 3599, Output: 130, CacheRead: 401},
		subagents: discover.Tokens{Input: 2299, Output: 70, CacheRead: 201},
		status:    "stopped",
		started:   "2026-12-01T22:28:59.750Z", last: "2026-12-01T22:29:02.363Z",
		file: ".qwen/projects/-home-dev-webapp/chats/5607b7d8-81ac-47ab-ad62-77346d688119.jsonl",
	},
	"29bc557d-a856-4500-8649-f043838f16dc": { // headless, then resumed with a tool call
		cwd: "/home/dev/webapp", model: "qwen3-coder-flash", models: []string{"qwen3-coder-flash"},
		prompt:    "summarise the README for a new contributor",
		tokens:    discover.Tokens{Input: 10598, Output: 180, CacheRead: 1402},
		subagents: discover.Tokens{Input: 2699, Output: 60, CacheRead: 301},
		status:    "stopped",
		started:   "2026-12-01T22:29:14.660Z", last: "2026-12-01T22:29:39.183Z",
		file: ".qwen/projects/-home-dev-webapp/chats/29bc557d-a856-4500-8649-f043838f16dc.jsonl",
	},
	"558b233b-3147-4452-99e6-e4fc9c3d5b79": { // every request answered 429
		cwd:     "/home/dev/billing",
		prompt:  "fix the invoice rounding bug",
		status:  "failed",
		blocked: "quota",
		started: "2026-12-01T22:29:55.956Z", last: "2026-12-01T22:30:00.404Z",
		file: ".qwen/projects/-home-dev-billing/chats/558b233b-3147-4452-99e6-e4fc9c3d5b79.jsonl",
	},
	"fff7093d-92a4-4ecc-b807-1ad198a1a91e": { // every request answered 401
		cwd:     "/home/dev/billing",
		prompt:  "deploy the staging stack",
		status:  "failed",
		blocked: "auth",
		started: "2026-12-01T22:30:10.188Z", last: "2026-12-01T22:30:11.178Z",
		file: ".qwen/projects/-home-dev-billing/chats/fff7093d-92a4-4ecc-b807-1ad198a1a91e.jsonl",
	},
}

// got is the manifest's view of a Session.
func viewOf(s discover.Session) fact {
	f := fact{cwd: s.Cwd, model: s.Model, models: s.Models, prompt: s.Prompt, status: s.Status, blocked: s.BlockedReason}
	if s.Tokens != nil {
		f.tokens = *s.Tokens
	}
	if sub, ok := s.Extra["tokens_subagents"].(discover.Tokens); ok {
		f.subagents = sub
	}
	if s.StartedAt != nil {
		f.started = s.StartedAt.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	if s.LastActivity != nil {
		f.last = s.LastActivity.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	if rel, err := filepath.Rel(fixtureHome, s.Path); err == nil {
		f.file = filepath.ToSlash(rel)
	}
	return f
}

// TestFixtureMatchesManifest: Discover over the recorded home, with no qwen
// process alive, says what the manifest says of every session.
func TestFixtureMatchesManifest(t *testing.T) {
	env, warns := testEnv(t, fixtureHome, nil, nil)
	got := discoverAll(t, New(), env)
	if len(got) != len(manifest) {
		t.Errorf("got %d sessions, manifest has %d", len(got), len(manifest))
	}
	for id, want := range manifest {
		s, ok := got[id]
		if !ok {
			t.Errorf("session %s missing", id)
			continue
		}
		if d := cmp.Diff(want, viewOf(s), cmp.AllowUnexported(fact{})); d != "" {
			t.Errorf("session %s (-manifest +got):\n%s", id, d)
		}
		if s.Adapter != Name || s.PID != 0 || discover.Alive(s.Status) {
			t.Errorf("session %s: adapter %q pid %d status %s", id, s.Adapter, s.PID, s.Status)
		}
		if s.EndedAt == nil || !s.EndedAt.Equal(*s.LastActivity) {
			t.Errorf("session %s: ended_at %v, want its last activity", id, s.EndedAt)
		}
	}
	if len(*warns) > 0 {
		t.Errorf("warnings: %q", *warns)
	}
	// The killed TUI's leftover registry record is named as the evidence.
	if s := got["4d30ac6b-c8ca-4771-a849-ca3cedc7fc98"]; s.Evidence != discover.EvidenceStaleRegistry || s.Kind != "tui" {
		t.Errorf("killed TUI: evidence %q kind %q, want stale-registry tui", s.Evidence, s.Kind)
	}
}

// TestFixtureNoProcessTable: without a process table a finished session is
// still stopped (nothing is mid-turn), and a registry record is unknown.
func TestFixtureNoProcessTable(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, &proc.Fake{NoProcs: true}, nil)
	got := discoverAll(t, New(), env)
	if s := got["5607b7d8-81ac-47ab-ad62-77346d688119"]; s.Status != discover.StatusStopped {
		t.Errorf("one-shot: %s, want stopped", s.Status)
	}
	if s := got["4d30ac6b-c8ca-4771-a849-ca3cedc7fc98"]; s.Status != discover.StatusUnknown {
		t.Errorf("TUI with a registry record and no process table: %s, want unknown", s.Status)
	}
}
