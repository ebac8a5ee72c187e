package pi

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

// TestFixtureFacts checks every fact of the fixture README's "Expected facts — Pi
// sessions" table for the four real pi 0.73.1 files.
func TestFixtureFacts(t *testing.T) {
	env, warns := testEnv(t, fixtureHome, nil)
	got := discovertest.DiscoverAll(t, New(), env)
	if len(*warns) != 0 {
		t.Errorf("warnings: %q", *warns)
	}
	type counts struct{ User, Assistant, ToolResult int }
	tests := []struct {
		id, prompt       string
		counts           counts
		in, out, total   int64
		cost             float64
		started          string
		lastActivity     string
		status, detail   string
		leafStop, errMsg string
	}{
		{"01a1faea-41e2-70ee-8a46-eefd8057a11e", "hello pi, say something", counts{4, 4, 0}, 492, 180, 672, 0.000852,
			"2026-11-20T21:43:38.723Z", "2026-11-20T21:44:47.048Z", "stopped", "done", "stop", ""},
		{"01a1faea-589b-73ae-a8a8-6fa4991c7bc7", "TOOL please run something", counts{2, 3, 1}, 369, 135, 504, 0.000639,
			"2026-11-20T21:43:44.539Z", "2026-11-20T21:48:55.021Z", "stopped", "done", "stop", ""},
		{"01a1faea-b485-714f-9f73-af5206c9d06d", "SLOW task please", counts{1, 1, 0}, 123, 45, 168, 0.000213,
			"2026-11-20T21:44:08.069Z", "2026-11-20T21:44:23.271Z", "stopped", "done", "stop", ""},
		{"01a1faf0-7eef-715d-8e3d-80e07b008804", "---yaml-like", counts{1, 3, 0}, 0, 0, 0, 0,
			"2026-11-20T21:50:27.567Z", "2026-11-20T21:50:37.965Z", "failed", "Connection error.", "error", "Connection error."},
	}
	if len(got) != len(tests) {
		t.Errorf("got %d sessions, want %d", len(got), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.id[:8]+tt.id[9:13], func(t *testing.T) {
			s, ok := got[tt.id]
			if !ok {
				t.Fatalf("session %s not found", tt.id)
			}
			if s.Adapter != "pi" || s.Cwd != "/home/dev/api-server" || s.Model != "fakeoai/fake-model" || s.Prompt != tt.prompt {
				t.Errorf("adapter/cwd/model/prompt = %q %q %q %q", s.Adapter, s.Cwd, s.Model, s.Prompt)
			}
			if s.Tokens == nil {
				t.Fatal("no tokens")
			}
			want := discover.Tokens{Input: tt.in, Output: tt.out}
			if diff := cmp.Diff(want, *s.Tokens); diff != "" {
				t.Errorf("tokens (-want +got):\n%s", diff)
			}
			if tot := s.Tokens.Input + s.Tokens.Output + s.Tokens.CacheRead + s.Tokens.CacheWrite; tot != tt.total {
				t.Errorf("totalTokens = %d, want %d", tot, tt.total)
			}
			switch {
			case tt.cost == 0: // zero tokens: no cost at all (discover.Cost)
				if s.CostUSD != nil || s.CostSource != "" {
					t.Errorf("cost = %v %q, want none", *s.CostUSD, s.CostSource)
				}
			case s.CostUSD == nil || math.Abs(*s.CostUSD-tt.cost) > 1e-12 || s.CostSource != "agent":
				t.Errorf("cost = %v %q, want %v agent", s.CostUSD, s.CostSource, tt.cost)
			}
			if s.StartedAt == nil || !s.StartedAt.Equal(ts(tt.started)) {
				t.Errorf("started_at = %v, want %s (header timestamp)", s.StartedAt, tt.started)
			}
			if s.LastActivity == nil || !s.LastActivity.Equal(ts(tt.lastActivity)) {
				t.Errorf("last_activity = %v, want %s", s.LastActivity, tt.lastActivity)
			}
			if s.Status != tt.status || s.Evidence != discover.EvidenceTranscript || s.EvidenceDetail != tt.detail || s.Inferred || s.PID != 0 {
				t.Errorf("status = %s/%s %q inferred=%v pid=%d, want %s/transcript %q", s.Status, s.Evidence, s.EvidenceDetail, s.Inferred, s.PID, tt.status, tt.detail)
			}
			if s.EndedAt == nil || !s.EndedAt.Equal(*s.LastActivity) {
				t.Errorf("ended_at = %v, want last activity", s.EndedAt)
			}
			sum, err := summarize(s.Path)
			if err != nil {
				t.Fatal(err)
			}
			if c := (counts{sum.Users, sum.Assistants, sum.ToolResults}); c != tt.counts {
				t.Errorf("user/assistant/toolResult = %v, want %v", c, tt.counts)
			}
			if sum.Leaf.Role != "assistant" || sum.Leaf.StopReason != tt.leafStop || sum.Leaf.ErrorMessage != tt.errMsg {
				t.Errorf("last message = %+v, want assistant %s %q", sum.Leaf, tt.leafStop, tt.errMsg)
			}
			// peek over the whole branch shows every user and assistant message.
			msgs, err := New().Peek(context.Background(), env, s, 0)
			if err != nil {
				t.Fatal(err)
			}
			var pc counts
			for _, m := range msgs {
				switch m.Kind {
				case "user":
					pc.User++
				case "assistant", "error":
					pc.Assistant++
				}
				for _, tc := range m.Tools {
					if tc.HasResult {
						pc.ToolResult++
					}
				}
			}
			if pc != tt.counts {
				t.Errorf("peek user/assistant/toolResult = %v, want %v", pc, tt.counts)
			}
		})
	}
}

// The capture of a run SIGTERMed before its first reply names a session that has
// no file: the adapter does not invent it (the core shows it from the launch record).
func TestNoFileSessionNotListed(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	if _, ok := discovertest.DiscoverAll(t, New(), env)["01a1faeb-1731-77e6-a2fa-666acad097a4"]; ok {
		t.Error("session without a file was listed by the adapter")
	}
}

func TestMissingDirIsEmpty(t *testing.T) {
	env, warns := testEnv(t, filepath.Join(t.TempDir(), "nohome"), map[string]string{
		"PI_CODING_AGENT_SESSION_DIR": "/nonexistent/flat",
		"PI_SESSIONS_DIR":             "/nonexistent/rust",
	})
	ss, err := New().Discover(context.Background(), env)
	if err != nil || len(ss) != 0 || len(*warns) != 0 {
		t.Errorf("Discover = %v, %v, warnings %q; want empty, nil, none", ss, err, *warns)
	}
}

func TestAgentDirOverride(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	discovertest.CopyTree(t, fixtureHome+"/.pi/agent", filepath.Join(home, "custom-agent"))
	// The default location holds a different session, which must not be read.
	simple(t, filepath.Join(home, ".pi/agent/sessions/--x--"), "01a1fb00-0000-7000-8000-000000000001", "2026-11-20T21:00:00.000Z", "/x", "default dir")

	env, _ := testEnv(t, home, map[string]string{"PI_CODING_AGENT_DIR": "~/custom-agent"})
	got := discovertest.DiscoverAll(t, New(), env)
	if len(got) != 4 {
		t.Errorf("got %d sessions, want the 4 of PI_CODING_AGENT_DIR", len(got))
	}
	if _, ok := got["01a1fb00-0000-7000-8000-000000000001"]; ok {
		t.Error("default ~/.pi/agent was read despite PI_CODING_AGENT_DIR")
	}
	if s := got["01a1faea-41e2-70ee-8a46-eefd8057a11e"]; s.Path != filepath.Join(home, "custom-agent/sessions/--home-dev-api-server--/2026-11-20T21-43-38-723Z_01a1faea-41e2-70ee-8a46-eefd8057a11e.jsonl") {
		t.Errorf("path = %s", s.Path)
	}
}

func TestSettingsSessionDir(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	discovertest.WriteLines(t, filepath.Join(home, ".pi/agent/settings.json"), `{"sessionDir": "~/pi-sessions"}`)
	simple(t, filepath.Join(home, "pi-sessions"), "01a1fb00-0000-7000-8000-000000000002", "2026-11-20T21:00:00.000Z", "/srv/app", "from settings")
	env, _ := testEnv(t, home, nil)
	if s, ok := discovertest.DiscoverAll(t, New(), env)["01a1fb00-0000-7000-8000-000000000002"]; !ok || s.Cwd != "/srv/app" {
		t.Errorf("settings sessionDir session = %+v, %v", s, ok)
	}
}

func TestLaunchRecordSessionDir(t *testing.T) {
	root := t.TempDir()
	simple(t, filepath.Join(root, "proj", ".sessions"), "01a1fb00-0000-7000-8000-000000000003", "2026-11-20T21:00:00.000Z", "/proj", "custom dir")
	env, _ := testEnv(t, filepath.Join(root, "home"), nil)
	env.Launches = append(env.Launches, launchRec("l-1", "pi", "", filepath.Join(root, "proj"), []string{"pi", "--mode", "json", "--session-dir", ".sessions", "-p"}))
	if _, ok := discovertest.DiscoverAll(t, New(), env)["01a1fb00-0000-7000-8000-000000000003"]; !ok {
		t.Error("session in a launch record's --session-dir not found")
	}
}

// TestCostEstimate: pi recorded tokens but no cost (no price in models.json):
// estimate from agentctl's price table, labelled as such.
func TestCostEstimate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sessions/--p--/x_01a1fb00-0000-7000-8000-000000000004.jsonl")
	discovertest.WriteLines(t, p,
		hdr("01a1fb00-0000-7000-8000-000000000004", "2026-11-20T21:00:00.000Z", "/p"),
		userMsg("a1", "", "2026-11-20T21:00:00.100Z", "hi"),
		asstMsg("a2", "a1", "2026-11-20T21:00:01.000Z", "yo", "stop", 1000, 500, costObj(0)),
	)
	env, _ := testEnv(t, dir, map[string]string{"PI_CODING_AGENT_DIR": dir})
	s := discovertest.DiscoverAll(t, New(), env)["01a1fb00-0000-7000-8000-000000000004"]
	if s.CostUSD != nil {
		t.Errorf("without a price table cost = %v, want omitted", *s.CostUSD)
	}
	env.Config = configWithPrice("fake-model", 3, 15)
	s = discovertest.DiscoverAll(t, New(), env)["01a1fb00-0000-7000-8000-000000000004"]
	if s.CostUSD == nil || math.Abs(*s.CostUSD-(1000*3+500*15)/1e6) > 1e-12 || s.CostSource != "estimate" {
		t.Errorf("cost = %v %q, want 0.0105 estimate", s.CostUSD, s.CostSource)
	}
}

// docs/agents/pi.md §2: tolerate usage.cost as a bare number.
func TestCostBareNumber(t *testing.T) {
	dir := t.TempDir()
	discovertest.WriteLines(t, filepath.Join(dir, "sessions/--p--/x_01a1fb00-0000-7000-8000-000000000005.jsonl"),
		hdr("01a1fb00-0000-7000-8000-000000000005", "2026-11-20T21:00:00.000Z", "/p"),
		userMsg("a1", "", "2026-11-20T21:00:00.100Z", "hi"),
		asstMsg("a2", "a1", "2026-11-20T21:00:01.000Z", "yo", "stop", 10, 5, 0.25),
		asstMsg("a3", "a2", "2026-11-20T21:00:02.000Z", "yo", "stop", 10, 5, costObj(0.5)),
	)
	env, _ := testEnv(t, dir, map[string]string{"PI_CODING_AGENT_DIR": dir})
	s := discovertest.DiscoverAll(t, New(), env)["01a1fb00-0000-7000-8000-000000000005"]
	if s.CostUSD == nil || *s.CostUSD != 0.75 {
		t.Errorf("cost = %v, want 0.75", s.CostUSD)
	}
}

// A v1 file (no version, entries without id/parentId) is accepted and read as a
// linear conversation.
func TestVersion1File(t *testing.T) {
	dir := t.TempDir()
	discovertest.WriteLines(t, filepath.Join(dir, "sessions/--p--/x_01a1fb00-0000-7000-8000-000000000006.jsonl"),
		`{"type":"session","id":"01a1fb00-0000-7000-8000-000000000006","timestamp":"2026-11-20T21:00:00.000Z","cwd":"/old"}`,
		`{"type":"message","timestamp":"2026-11-20T21:00:00.100Z","message":{"role":"user","content":"old prompt","timestamp":1795208400100}}`,
		`{"type":"message","timestamp":"2026-11-20T21:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"old reply"}],"provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"cost":{"total":0}},"stopReason":"stop","timestamp":1795208400200}}`,
	)
	env, _ := testEnv(t, dir, map[string]string{"PI_CODING_AGENT_DIR": dir})
	s := discovertest.DiscoverAll(t, New(), env)["01a1fb00-0000-7000-8000-000000000006"]
	if s.Prompt != "old prompt" || s.Model != "p/m" || s.Status != "stopped" {
		t.Errorf("v1 session = %+v", s)
	}
	msgs, err := New().Peek(context.Background(), env, s, 0)
	if err != nil || len(msgs) != 2 || msgs[0].Text != "old prompt" || msgs[1].Text != "old reply" {
		t.Errorf("peek = %+v, %v", msgs, err)
	}
}

// A file whose first line is not a header is skipped with a warning; an empty file
// (pi is creating it) silently.
func TestNotAHeader(t *testing.T) {
	dir := t.TempDir()
	discovertest.WriteLines(t, filepath.Join(dir, "sessions/--p--/junk.jsonl"), `{"type":"message","id":"x"}`)
	if err := os.WriteFile(filepath.Join(dir, "sessions/--p--/empty.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env, warns := testEnv(t, dir, map[string]string{"PI_CODING_AGENT_DIR": dir})
	if got := discovertest.DiscoverAll(t, New(), env); len(got) != 0 {
		t.Errorf("got %d sessions", len(got))
	}
	if len(*warns) != 1 {
		t.Errorf("warnings = %q, want one about junk.jsonl", *warns)
	}
}

func TestDiscoverCancelled(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New().Discover(ctx, env); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// title is the latest session_info name; parent_session comes from the header.
func TestTitleAndParent(t *testing.T) {
	dir := t.TempDir()
	id := "01a1fb00-0000-7000-8000-0000000000f1"
	discovertest.WriteLines(t, filepath.Join(dir, "sessions/--p--/x_"+id+".jsonl"),
		`{"type":"session","version":3,"id":"`+id+`","timestamp":"2026-11-20T21:00:00.000Z","cwd":"/p","parentSession":"/s/--p--/y_01a1fb00-0000-7000-8000-0000000000f0.jsonl"}`,
		`{"type":"session_info","id":"i1","parentId":null,"timestamp":"2026-11-20T21:00:00.050Z","name":"first name"}`,
		userMsg("u1", "i1", "2026-11-20T21:00:00.100Z", "hi"),
		asstMsg("a1", "u1", "2026-11-20T21:00:01.000Z", "yo", "stop", 1, 1, costObj(0)),
		`{"type":"session_info","id":"i2","parentId":"a1","timestamp":"2026-11-20T21:05:00.000Z","name":"renamed"}`,
	)
	env, _ := testEnv(t, dir, map[string]string{"PI_CODING_AGENT_DIR": dir})
	s := discovertest.DiscoverAll(t, New(), env)[id]
	if s.Title != "renamed" || s.Extra["parent_session"] != "/s/--p--/y_01a1fb00-0000-7000-8000-0000000000f0.jsonl" {
		t.Errorf("title %q extra %v", s.Title, s.Extra)
	}
	// A rename is not conversation: last activity stays the assistant's reply.
	if !s.LastActivity.Equal(ts("2026-11-20T21:00:01Z")) || s.Status != "stopped" {
		t.Errorf("last activity %v status %s", s.LastActivity, s.Status)
	}
}

// Real Pi 0.73.1 `-p` runs against a stub answering 401 and 429: the assistant
// message has stopReason "error" and errorMessage "401 stub error 401
// (scripted)" / "429 …". With no process: failed, blocked on auth / quota.
func TestBlockedOnQuotaAndAuth(t *testing.T) {
	home := t.TempDir()
	discovertest.CopyTree(t, "testdata/blocked", home)
	env, _ := testEnv(t, home, nil)
	ss := discovertest.DiscoverAll(t, &Adapter{}, env)
	for id, want := range map[string]string{
		"01a21156-1876-70a6-9371-bedc015f4052": discover.BlockedAuth,
		"01a21156-4ef6-72bb-b464-0cef2844e2e6": discover.BlockedQuota,
	} {
		s := ss[id]
		if s.Status != discover.StatusFailed || s.BlockedReason != want {
			t.Errorf("%s: %s blocked_reason %q (%s); want failed, %s", id, s.Status, s.BlockedReason, s.EvidenceDetail, want)
		}
	}

	// pi -p stays up for a while after it gives up (e2e accuracy benchmark):
	// idle, and still blocked.
	const quota = "01a21156-4ef6-72bb-b464-0cef2844e2e6"
	env, f := liveEnv(t, home)
	piProc(f, 4242, "2026-11-25T06:13:18.500Z", "/home/dev/api")
	s := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)[quota]
	if s.Status != discover.StatusIdle || s.BlockedReason != discover.BlockedQuota || s.PID != 4242 {
		t.Errorf("live after the error: %s blocked_reason %q pid %d (%s); want idle, quota, pid 4242", s.Status, s.BlockedReason, s.PID, s.EvidenceDetail)
	}
}

// Pi writes one assistant error per failed attempt and retries retryable ones
// (its own pattern) up to retry.maxRetries (default 3): the recorded quota file
// ends with 4 such errors, i.e. it gave up. Cut after its second error it is
// the file as it stood while pi retried: live, that is running, saying so;
// with retry.maxRetries 1 in the agent's settings, pi has given up there. A 401
// is not retryable for pi: given up at once.
func TestLivePiRetrying(t *testing.T) {
	const quota, auth = "01a21156-4ef6-72bb-b464-0cef2844e2e6", "01a21156-1876-70a6-9371-bedc015f4052"
	home := t.TempDir()
	discovertest.CopyTree(t, "testdata/blocked", home)
	files, _ := filepath.Glob(filepath.Join(home, ".pi/agent/sessions/*/*"+quota+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("quota fixture: %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(files[0], []byte(strings.Join(lines[:6], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	env, f := liveEnv(t, home)
	piProc(f, 4242, "2026-11-25T06:13:18.500Z", "/home/dev/api")
	s := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)[quota]
	if s.Status != discover.StatusRunning || s.BlockedReason != "" || !strings.Contains(s.EvidenceDetail, "pi retries the provider: 2 of 4 attempts failed") {
		t.Errorf("retrying: %s blocked_reason %q (%s); want running, not blocked, saying pi retries", s.Status, s.BlockedReason, s.EvidenceDetail)
	}
	if err := os.WriteFile(filepath.Join(home, ".pi/agent/settings.json"), []byte(`{"retry":{"maxRetries":1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)[quota]; s.Status != discover.StatusIdle || s.BlockedReason != discover.BlockedQuota {
		t.Errorf("maxRetries 1, 2 failed attempts: %s blocked_reason %q (%s); want idle, quota", s.Status, s.BlockedReason, s.EvidenceDetail)
	}

	if err := os.Remove(files[0]); err != nil { // one pi, one session in the cwd
		t.Fatal(err)
	}
	env, f = liveEnv(t, home)
	piProc(f, 4343, "2026-11-25T06:13:04.500Z", "/home/dev/api")
	if s := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)[auth]; s.Status != discover.StatusIdle || s.BlockedReason != discover.BlockedAuth {
		t.Errorf("401 (not retried by pi): %s blocked_reason %q (%s); want idle, auth", s.Status, s.BlockedReason, s.EvidenceDetail)
	}
}
