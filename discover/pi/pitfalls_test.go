package pi

// One test per pitfall of docs/agents/pi.md §10 that concerns the read side. 13–16 (argv
// prompt hazards, stdin pipe, resume by path, wrapper kill) are launch/stop
// behaviour and are tested with the launcher, not here.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

// 1. Invisible first turn: a live launch whose file does not exist yet. The
// adapter does not fail or invent anything; the core lists it from the launch
// record as running, and peek renders the launch log.
func TestPitfall01InvisibleFirstTurn(t *testing.T) {
	const id = "01a1faeb-1731-77e6-a2fa-666acad097a4" // captures/mode-json-sigterm-before-first-reply.jsonl
	env, f := liveEnv(t, fixtureHome)
	piProc(f, 5150, "2026-11-20T21:44:33.200Z", liveCwd)
	l := launchRec("l-1", "pi", id, liveCwd, []string{"pi", "--mode", "json", "-p"})
	l.PID, l.StartTicks, l.BootID = 5150, uint64(msOf("2026-11-20T21:44:33.200Z")), "boot-1"
	l.Log = "testdata/captures/mode-json-sigterm-before-first-reply.jsonl"
	env.Launches = append(env.Launches, l)

	a := &Adapter{StartTime: msStart}
	res := discover.All(context.Background(), env, []discover.Adapter{a}, 5*time.Second)
	s, err := discover.Resolve(res.Sessions, "01a1faeb")
	if err != nil {
		t.Fatalf("resolve: %v (warnings %q)", err, res.Warnings)
	}
	if s.Status != discover.StatusRunning || s.Evidence != discover.EvidenceLaunchRecord || s.PID != 5150 {
		t.Errorf("status = %s/%s pid %d, want running/launch-record 5150", s.Status, s.Evidence, s.PID)
	}
	msgs, err := a.Peek(context.Background(), env, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Kind != "user" || msgs[0].Text != "SLOW term test" {
		t.Errorf("peek from the launch log = %+v", msgs)
	}
}

// 2. Process title: comm "pi", cmdline "pi\0\0…", exe node is found (a matcher for
// `ps` lines starting with "pi -" would miss it).
func TestPitfall02ProcessTitle(t *testing.T) {
	env, f := liveEnv(t, liveHome(t))
	piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
	cands := candidates(env, msStart, nil)
	if len(cands) != 1 || cands[0].PID != 4242 || cands[0].Cwd != liveCwd || !cands[0].Start.Equal(ts("2026-11-20T21:55:00Z")) {
		t.Errorf("candidates = %+v", cands)
	}
}

// 3. Birth time / mtime as start: the file was first written 15 s after the header.
func TestPitfall03StartedAtFromHeader(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	discovertest.CopyTree(t, fixtureHome, home)
	p := filepath.Join(home, ".pi/agent/sessions/--home-dev-api-server--/2026-11-20T21-44-08-069Z_01a1faea-b485-714f-9f73-af5206c9d06d.jsonl")
	late := ts("2026-11-20T21:44:23.069Z")
	if err := os.Chtimes(p, late, late); err != nil {
		t.Fatal(err)
	}
	env, _ := testEnv(t, home, nil)
	s := discovertest.DiscoverAll(t, New(), env)["01a1faea-b485-714f-9f73-af5206c9d06d"]
	if s.StartedAt == nil || !s.StartedAt.Equal(ts("2026-11-20T21:44:08.069Z")) {
		t.Errorf("started_at = %v, want the header's 21:44:08.069", s.StartedAt)
	}
}

// 4. Header model fields: real pi headers have none; the model comes from
// model_change, replaced by a later assistant message's provider/model.
func TestPitfall04ModelFromRecords(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	for id, s := range discovertest.DiscoverAll(t, New(), env) {
		if s.Model != "fakeoai/fake-model" {
			t.Errorf("%s model = %q", id, s.Model)
		}
	}
	dir := t.TempDir()
	discovertest.WriteLines(t, filepath.Join(dir, "sessions/--p--/x_01a1fb00-0000-7000-8000-000000000040.jsonl"),
		hdr("01a1fb00-0000-7000-8000-000000000040", "2026-11-20T21:00:00.000Z", "/p"),
		modelChange("m1", "", "2026-11-20T21:00:00.010Z", "openai", "gpt-x"),
		userMsg("u1", "m1", "2026-11-20T21:00:00.020Z", "hi"),
		asstMsg("a1", "u1", "2026-11-20T21:00:01.000Z", "yo", "stop", 1, 1, costObj(0)), // fakeoai/fake-model
	)
	env, _ = testEnv(t, dir, map[string]string{"PI_CODING_AGENT_DIR": dir})
	s := discovertest.DiscoverAll(t, New(), env)["01a1fb00-0000-7000-8000-000000000040"]
	if s.Model != "fakeoai/fake-model" || !cmp.Equal(s.Models, []string{"openai/gpt-x", "fakeoai/fake-model"}) {
		t.Errorf("model = %q, models %q; want the assistant's fakeoai/fake-model", s.Model, s.Models)
	}
}

// 5. User content as a string and as blocks both give the prompt.
func TestPitfall05StringOrBlocks(t *testing.T) {
	dir := t.TempDir()
	for id, content := range map[string]any{
		"01a1fb00-0000-7000-8000-000000000051": "plain string prompt",
		"01a1fb00-0000-7000-8000-000000000052": []map[string]any{{"type": "text", "text": "plain string"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}, {"type": "text", "text": "prompt"}},
	} {
		discovertest.WriteLines(t, filepath.Join(dir, "sessions/--p--/x_"+id+".jsonl"),
			hdr(id, "2026-11-20T21:00:00.000Z", "/p"),
			userMsg("u1", "", "2026-11-20T21:00:00.020Z", content),
			asstMsg("a1", "u1", "2026-11-20T21:00:01.000Z", "yo", "stop", 1, 1, costObj(0)),
		)
	}
	env, _ := testEnv(t, dir, map[string]string{"PI_CODING_AGENT_DIR": dir})
	got := discovertest.DiscoverAll(t, New(), env)
	if p := got["01a1fb00-0000-7000-8000-000000000051"].Prompt; p != "plain string prompt" {
		t.Errorf("string content prompt = %q", p)
	}
	if p := got["01a1fb00-0000-7000-8000-000000000052"].Prompt; p != "plain string\nprompt" {
		t.Errorf("block content prompt = %q", p)
	}
	msgs, _ := New().Peek(context.Background(), env, got["01a1fb00-0000-7000-8000-000000000052"], 0)
	if len(msgs) == 0 || msgs[0].Text != "plain string\n[image]\nprompt" {
		t.Errorf("peek user = %+v", msgs)
	}
}

// 6. Double listing: one tree, one pi file and one pi-rust file → two sessions,
// each under its adapter, no id twice, even when roots overlap.
func TestPitfall06OneListingTwoFlavours(t *testing.T) {
	dir := t.TempDir()
	slug := filepath.Join(dir, "agent/sessions/--home-dev-x--")
	simple(t, slug, "01a1fb00-0000-7000-8000-000000000061", "2026-11-20T21:00:00.000Z", "/home/dev/x", "pi one")
	rustID := "3f2b8c1e-9d4a-4b7e-8c21-5a6f7e8d9c0b" // UUIDv4
	discovertest.WriteLines(t, filepath.Join(slug, "2026-11-20T21-01-00.000Z_3f2b8c1e.jsonl"),
		mustJSON(map[string]any{"type": "session", "version": 3, "id": rustID, "timestamp": "2026-11-20T21:01:00.000Z", "cwd": "/home/dev/x", "provider": "anthropic", "modelId": "claude-x"}),
		userMsg("u1", "", "2026-11-20T21:01:00.100Z", "rust one"),
		asstMsg("a1", "u1", "2026-11-20T21:01:02.000Z", "ok", "stop", 5, 6, costObj(0.01)),
	)
	env, _ := testEnv(t, dir, map[string]string{
		"PI_CODING_AGENT_DIR": filepath.Join(dir, "agent"),
		"PI_SESSIONS_DIR":     filepath.Join(dir, "agent/sessions/"), // same root again (pi-rust)
	})
	got := discovertest.DiscoverAll(t, New(), env)
	if len(got) != 2 {
		t.Fatalf("got %d sessions, want 2", len(got))
	}
	if a := got["01a1fb00-0000-7000-8000-000000000061"].Adapter; a != "pi" {
		t.Errorf("pi file adapter = %q", a)
	}
	if s := got[rustID]; s.Adapter != "pi-rust" || s.Prompt != "rust one" || s.Model != "fakeoai/fake-model" {
		t.Errorf("pi-rust file = %q %q %q", s.Adapter, s.Prompt, s.Model)
	}

	// A launch record's flavour wins over the classification.
	env.Launches = append(env.Launches, launchRec("l-2", "pi-rust", "01a1fb00-0000-7000-8000-000000000061", "/home/dev/x", nil))
	if a := discovertest.DiscoverAll(t, New(), env)["01a1fb00-0000-7000-8000-000000000061"].Adapter; a != "pi-rust" {
		t.Errorf("with a pi-rust launch record adapter = %q", a)
	}
}

func TestFlavourClassification(t *testing.T) {
	full := header{ID: "01a1faea-41e2-70ee-8a46-eefd8057a11e"}
	withModel := header{ID: "3f2b8c1e-9d4a-4b7e-8c21-5a6f7e8d9c0b", ModelID: "m"}
	for _, tt := range []struct {
		name string
		h    header
		want string
	}{
		{"2026-11-20T21-43-38-723Z_01a1faea-41e2-70ee-8a46-eefd8057a11e.jsonl", full, "pi"},
		{"2026-11-20T21-43-38.723Z_01a1faea.jsonl", full, "pi-rust"},
		{"renamed.jsonl", full, "pi"},
		{"renamed.jsonl", withModel, "pi-rust"},
		{"x_deadbeef.jsonl", full, "pi"}, // 8 chars but not a prefix of the id
	} {
		if got := flavour("/s/"+tt.name, tt.h); got != tt.want {
			t.Errorf("flavour(%s) = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// 7. Flat custom dir: PI_CODING_AGENT_SESSION_DIR with files directly in it.
func TestPitfall07FlatCustomDir(t *testing.T) {
	root := t.TempDir()
	flat := filepath.Join(root, "s")
	simple(t, flat, "01a1fb00-0000-7000-8000-000000000071", "2026-11-20T21:00:00.000Z", "/work/one", "flat one")
	simple(t, flat, "01a1fb00-0000-7000-8000-000000000072", "2026-11-20T21:00:05.000Z", "/work/two", "flat two")
	discovertest.WriteLines(t, filepath.Join(flat, "session-index.sqlite"), "not a session")
	env, warns := testEnv(t, filepath.Join(root, "home"), map[string]string{"PI_CODING_AGENT_SESSION_DIR": flat})
	got := discovertest.DiscoverAll(t, New(), env)
	if got["01a1fb00-0000-7000-8000-000000000071"].Cwd != "/work/one" || got["01a1fb00-0000-7000-8000-000000000072"].Cwd != "/work/two" || len(got) != 2 {
		t.Errorf("flat dir sessions = %+v", got)
	}
	if len(*warns) != 0 {
		t.Errorf("warnings %q", *warns)
	}
}

// 8. Lossy slug: /home/dev/a-b and /home/dev/a/b share --home-dev-a-b--; each
// session reports its own header cwd.
func TestPitfall08LossySlug(t *testing.T) {
	dir := t.TempDir()
	slug := filepath.Join(dir, "sessions/--home-dev-a-b--")
	simple(t, slug, "01a1fb00-0000-7000-8000-000000000081", "2026-11-20T21:00:00.000Z", "/home/dev/a-b", "dash")
	simple(t, slug, "01a1fb00-0000-7000-8000-000000000082", "2026-11-20T21:00:01.000Z", "/home/dev/a/b", "slash")
	env, _ := testEnv(t, dir, map[string]string{"PI_CODING_AGENT_DIR": dir})
	got := discovertest.DiscoverAll(t, New(), env)
	if c := got["01a1fb00-0000-7000-8000-000000000081"].Cwd; c != "/home/dev/a-b" {
		t.Errorf("cwd = %q", c)
	}
	if c := got["01a1fb00-0000-7000-8000-000000000082"].Cwd; c != "/home/dev/a/b" {
		t.Errorf("cwd = %q", c)
	}
}

// 9. Partial last line: prior entries count, no error, leaf = last complete entry.
func TestPitfall09PartialLastLine(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	discovertest.CopyTree(t, fixtureHome, home)
	p := filepath.Join(home, ".pi/agent/sessions/--home-dev-api-server--/2026-11-20T21-43-44-539Z_01a1faea-589b-73ae-a8a8-6fa4991c7bc7.jsonl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the last line (the slow resumed reply) in half.
	last := len(b) - 1
	for last > 0 && b[last-1] != '\n' {
		last--
	}
	if err := os.WriteFile(p, b[:last+200], 0o644); err != nil {
		t.Fatal(err)
	}
	env, warns := testEnv(t, home, nil)
	s := discovertest.DiscoverAll(t, New(), env)["01a1faea-589b-73ae-a8a8-6fa4991c7bc7"]
	if s.Tokens == nil || s.Tokens.Input != 246 || s.Tokens.Output != 90 {
		t.Errorf("tokens = %+v, want the two complete assistant rows 246/90", s.Tokens)
	}
	// The leaf is the resumed user message: open, nobody writing → interrupted.
	if s.Status != discover.StatusFailed || s.EvidenceDetail != "interrupted" || !s.LastActivity.Equal(ts("2026-11-20T21:48:39.818Z")) {
		t.Errorf("status = %s %q last %v", s.Status, s.EvidenceDetail, s.LastActivity)
	}
	if len(*warns) != 0 {
		t.Errorf("warnings %q", *warns)
	}
	msgs, err := New().Peek(context.Background(), env, s, 1)
	if err != nil || len(msgs) != 1 || msgs[0].Kind != "user" || msgs[0].Text != "SLOW resumed turn" {
		t.Errorf("peek -n 1 = %+v, %v", msgs, err)
	}
}

// 10. mtime is not liveness: a file written 5 s ago with no process is not running.
func TestPitfall10MtimeIsNotLiveness(t *testing.T) {
	home := liveHome(t)
	real := time.Now()
	p := filepath.Join(home, ".pi/agent/sessions/--home-dev-api-server--/2026-11-20T21-55-00-300Z_"+liveID+".jsonl")
	if err := os.Chtimes(p, real.Add(-5*time.Second), real.Add(-5*time.Second)); err != nil {
		t.Fatal(err)
	}
	env, _ := liveEnv(t, home)
	env.Now = func() time.Time { return real }
	for id, s := range discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env) {
		if s.Status == discover.StatusRunning || s.Status == discover.StatusIdle {
			t.Errorf("%s is %s without a process", id, s.Status)
		}
	}
}

// 11. Cwd-only attribution: see TestLiveProcessByCwdAndStart (one live pi in a cwd
// with four older sessions: only the file matching docs/agents/pi.md §4.1 is running).
func TestPitfall11CwdOnly(t *testing.T) { TestLiveProcessByCwdAndStart(t) }

// 12. json mode exits 0 on a provider error: the file says failed, with pi's
// errorMessage, after 3 error rows.
func TestPitfall12ErrorRows(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	s := discovertest.DiscoverAll(t, New(), env)["01a1faf0-7eef-715d-8e3d-80e07b008804"]
	if s.Status != discover.StatusFailed || s.EvidenceDetail != "Connection error." {
		t.Errorf("status = %s %q, want failed \"Connection error.\"", s.Status, s.EvidenceDetail)
	}
	msgs, err := New().Peek(context.Background(), env, s, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Kind != "error" || m.Text != "Connection error." || !m.IsError {
			t.Errorf("item = %+v, want error \"Connection error.\"", m)
		}
	}
	if len(msgs) != 3 {
		t.Errorf("%d items, want 3", len(msgs))
	}
}

// 17. Branches: two children of one entry. Peek follows the leaf's ancestry only;
// tokens sum both branches (both were billed).
func TestPitfall17Branches(t *testing.T) {
	dir := t.TempDir()
	id := "01a1fb00-0000-7000-8000-000000000171"
	discovertest.WriteLines(t, filepath.Join(dir, "sessions/--p--/x_"+id+".jsonl"),
		hdr(id, "2026-11-20T21:00:00.000Z", "/p"),
		userMsg("u1", "", "2026-11-20T21:00:00.100Z", textBlocks("root question")),
		asstMsg("a1", "u1", "2026-11-20T21:00:01.000Z", "root answer", "stop", 100, 10, costObj(0.1)),
		userMsg("u2a", "a1", "2026-11-20T21:00:02.000Z", textBlocks("abandoned follow-up")),
		asstMsg("a2a", "u2a", "2026-11-20T21:00:03.000Z", "abandoned answer", "stop", 200, 20, costObj(0.2)),
		userMsg("u2b", "a1", "2026-11-20T21:00:04.000Z", textBlocks("kept follow-up")),
		asstMsg("a2b", "u2b", "2026-11-20T21:00:05.000Z", "kept answer", "stop", 300, 30, costObj(0.3)),
	)
	env, _ := testEnv(t, dir, map[string]string{"PI_CODING_AGENT_DIR": dir})
	s := discovertest.DiscoverAll(t, New(), env)[id]
	if s.Tokens == nil || *s.Tokens != (discover.Tokens{Input: 600, Output: 60}) || s.CostUSD == nil || *s.CostUSD < 0.6-1e-9 || *s.CostUSD > 0.6+1e-9 {
		t.Errorf("tokens %+v cost %v, want 600/60 and 0.6 over both branches", s.Tokens, s.CostUSD)
	}
	msgs, err := New().Peek(context.Background(), env, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	if diff := cmp.Diff([]string{"root question", "root answer", "kept follow-up", "kept answer"}, texts); diff != "" {
		t.Errorf("active branch (-want +got):\n%s", diff)
	}
}

// 18. Ambiguous prefix: three fixture sessions share 01a1faea → the resolver says
// ambiguous (exit 4), never the first match.
func TestPitfall18AmbiguousPrefix(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	ss, err := New().Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	_, err = discover.Resolve(ss, "01a1faea")
	var am *discover.AmbiguousError
	if !errors.As(err, &am) || len(am.Candidates) != 3 {
		t.Errorf("resolve 01a1faea = %v, want ambiguous among 3", err)
	}
	if s, err := discover.Resolve(ss, "01a1faf0"); err != nil || s.ID != "01a1faf0-7eef-715d-8e3d-80e07b008804" {
		t.Errorf("resolve 01a1faf0 = %s, %v", s.ID, err)
	}
}
