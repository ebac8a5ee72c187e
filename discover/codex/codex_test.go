package codex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

// fact is one row of the fixture README's "Expected facts — Codex rollouts" table.
type fact struct {
	id         string
	dateDir    string
	originator string
	metaCwd    string // session_meta.cwd
	lastCwd    string // last turn_context.cwd ("" when the rollout has none)
	ctxModel   string // last turn_context.model ("" when none)
	turns      int
	prompts    []string
	agentMsgs  int
	tokens     *usage // nil: no token_count
	lastTurn   turnState
	inDB       bool
	dbCwd      string
	dbTitle    string
	dbTokens   int64
	dbTurn     string // latest thread_turns status
}

func tok(in, cached, out, total int64) *usage {
	return &usage{Input: in, Cached: cached, Output: out, Total: total}
}

var facts = []fact{
	{id1023, "2026/11/20", "codex_exec", "/home/dev/billing", "/home/dev", "fake-model", 4,
		[]string{"Say hello slowly", "Follow-up question", "resume via devnull", "resume from other cwd"}, 3,
		tok(126, 0, 21, 147), turnInterrupted, true, "/home/dev", "Say hello slowly", 147, "interrupted"},
	{id861e, "2026/11/20", "codex_exec", "/home/dev/billing", "/home/dev/billing", "fake-model", 1,
		[]string{"Second run to be terminated"}, 0, nil, turnOpen, true, "/home/dev/billing", "Second run to be terminated", 0, "inProgress"},
	{idAA41, "2026/11/20", "codex_exec", "/home/dev/billing", "/home/dev/billing", "fake-model", 2,
		[]string{"Third run to be interrupted", "resume with -C before resume"}, 1,
		tok(42, 0, 7, 49), turnDone, true, "/home/dev/billing", "Third run to be interrupted", 49, "completed"},
	{id568b, "2026/11/20", "codex-tui", "/home/dev/webapp", "/home/dev/webapp", "fake-model", 1,
		[]string{"Say hi from TUI"}, 1, tok(42, 0, 7, 49), turnDone, false, "", "", 0, ""},
	{id5425, "2026/11/20", "codex_exec", "/home/dev/billing", "/home/dev/billing", "fake-model", 1,
		[]string{"prefix test"}, 1, tok(42, 0, 7, 49), turnDone, true, "/home/dev/billing", "prefix test", 49, "completed"},
	{id60b3, "2026/11/20", "codex_exec", "/home/dev/billing", "", "", 1,
		[]string{"prefix test 2"}, 0, nil, turnOpen, true, "/home/dev/billing", "", 0, "inProgress"},
	{idD918, "2026/11/20", "codex-tui", "/home/dev/webapp", "/home/dev/webapp", "fake-model", 1,
		[]string{"Idle check from TUI"}, 1, tok(42, 0, 7, 49), turnDone, false, "", "", 0, ""},
	{id70be, "2026/11/21", "codex_exec", "/home/dev/billing", "", "", 1,
		[]string{"tz test"}, 0, nil, turnInterrupted, true, "/home/dev/billing", "tz test", 0, "interrupted"},
}

// TestFixtureRollouts checks every README fact against the rollout readers
// (head, tail, peek) for all 8 recorded rollouts.
func TestFixtureRollouts(t *testing.T) {
	home := fixtureHome(t)
	a := testAdapter(nil)
	env := testEnv(home, nil, nil)
	for _, f := range facts {
		t.Run(f.id[:13], func(t *testing.T) {
			p := rolloutPath(t, home, f.id)
			if got := filepath.ToSlash(filepath.Dir(p)); !strings.HasSuffix(got, "sessions/"+f.dateDir) {
				t.Errorf("date folder %s, want …/%s", got, f.dateDir)
			}
			fh, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			fi, _ := fh.Stat()
			h, err := readHead(fh, fi.Size(), &scratch{})
			if err != nil {
				t.Fatal(err)
			}
			if h.ID != f.id || h.Originator != f.originator || h.Cwd != f.metaCwd || h.Prompt != f.prompts[0] {
				t.Errorf("head: id %q originator %q cwd %q prompt %q", h.ID, h.Originator, h.Cwd, h.Prompt)
			}
			tl, err := readTail(fh, fi.Size(), true, &scratch{})
			if err != nil {
				t.Fatal(err)
			}
			if tl.Cwd != f.lastCwd || tl.Model != f.ctxModel {
				t.Errorf("tail turn_context: cwd %q model %q, want %q %q", tl.Cwd, tl.Model, f.lastCwd, f.ctxModel)
			}
			if diff := cmp.Diff(f.tokens, tl.Tokens); diff != "" {
				t.Errorf("tokens (-want +got):\n%s", diff)
			}
			if !tl.TurnKnown || tl.Turn != f.lastTurn {
				t.Errorf("last turn %v (known %v), want %v", tl.Turn, tl.TurnKnown, f.lastTurn)
			}

			msgs, err := a.Peek(context.Background(), env, discover.Session{ID: f.id, Path: p}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(f.prompts, texts(msgs, "user")); diff != "" {
				t.Errorf("prompts (-want +got):\n%s", diff)
			}
			if got := len(texts(msgs, "assistant")); got != f.agentMsgs {
				t.Errorf("%d assistant messages, want %d", got, f.agentMsgs)
			}
			turns := 0
			for _, m := range msgs {
				if m.Kind == "system" && strings.HasPrefix(m.Text, "turn ") {
					turns++
				}
			}
			if f.lastTurn == turnOpen {
				turns++
			}
			if turns != f.turns {
				t.Errorf("%d turns, want %d (%s)", turns, f.turns, kinds(msgs))
			}
		})
	}
}

// TestDiscoverFixture checks the listed sessions against the README, with the
// state DB (DB fields win) and without it (rollout-only mode).
func TestDiscoverFixture(t *testing.T) {
	for _, mode := range []string{"db", "rollout-only"} {
		t.Run(mode, func(t *testing.T) {
			home := fixtureHome(t)
			if mode == "rollout-only" {
				os.Remove(filepath.Join(codexDir(home), "state_5.sqlite"))
				os.Remove(filepath.Join(codexDir(home), "thread_history_1.sqlite"))
			}
			got := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))
			if len(got) != len(facts) {
				t.Fatalf("%d sessions, want %d", len(got), len(facts))
			}
			for _, f := range facts {
				s, ok := got[f.id]
				if !ok {
					t.Errorf("%s missing", f.id)
					continue
				}
				useDB := mode == "db" && f.inDB
				wantCwd := f.lastCwd
				if wantCwd == "" {
					wantCwd = f.metaCwd
				}
				wantTitle := f.prompts[0]
				if useDB {
					wantCwd = f.dbCwd
					if f.dbTitle != "" {
						wantTitle = f.dbTitle
					}
				}
				if s.Cwd != wantCwd || s.Prompt != f.prompts[0] || s.Title != wantTitle {
					t.Errorf("%s: cwd %q prompt %q title %q, want %q %q %q", f.id, s.Cwd, s.Prompt, s.Title, wantCwd, f.prompts[0], wantTitle)
				}
				// No turn_context in 60b3/70be: the model comes from the DB or, rollout
				// only, from thread_settings_applied (docs/agents/codex.md §3 fallback).
				if s.Model != "fake-model" {
					t.Errorf("%s: model %q", f.id, s.Model)
				}
				if s.AgentVersion != "0.169.0" || s.Entrypoint != f.originator || s.Adapter != "codex" {
					t.Errorf("%s: version %q entrypoint %q adapter %q", f.id, s.AgentVersion, s.Entrypoint, s.Adapter)
				}
				wantBranch := "master"
				if f.originator == "codex-tui" {
					wantBranch = "" // not a git repo
				}
				if s.GitBranch != wantBranch {
					t.Errorf("%s: branch %q, want %q", f.id, s.GitBranch, wantBranch)
				}
				var wantTok *discover.Tokens
				if f.tokens != nil {
					wantTok = &discover.Tokens{Input: f.tokens.Input - f.tokens.Cached, Output: f.tokens.Output, CacheRead: f.tokens.Cached}
					if s.Extra["tokens_total"] != f.tokens.Total {
						t.Errorf("%s: tokens_total %v, want %d", f.id, s.Extra["tokens_total"], f.tokens.Total)
					}
				}
				if diff := cmp.Diff(wantTok, s.Tokens); diff != "" {
					t.Errorf("%s tokens (-want +got):\n%s", f.id, diff)
				}
				if useDB && f.dbTokens > 0 && s.Extra["tokens_total"] != f.dbTokens {
					t.Errorf("%s: tokens_total %v, DB says %d", f.id, s.Extra["tokens_total"], f.dbTokens)
				}
				wantStatus, wantReason := discover.StatusStopped, "done"
				switch f.lastTurn {
				case turnInterrupted:
					wantReason = "interrupted"
				case turnOpen: // killed: no live writer, turn never closed
					wantStatus, wantReason = discover.StatusFailed, "crashed"
				}
				if s.Status != wantStatus || s.Extra["reason"] != wantReason || s.Evidence != discover.EvidenceTranscript || s.PID != 0 {
					t.Errorf("%s: %s/%v evidence %s pid %d, want %s/%s", f.id, s.Status, s.Extra["reason"], s.Evidence, s.PID, wantStatus, wantReason)
				}
				if (s.EndedAt == nil) != (f.lastTurn == turnOpen) {
					t.Errorf("%s: ended_at %v with last turn %v", f.id, s.EndedAt, f.lastTurn)
				}
				if s.StartedAt == nil || s.LastActivity == nil || s.LastActivity.Before(*s.StartedAt) {
					t.Errorf("%s: started %v last activity %v", f.id, s.StartedAt, s.LastActivity)
				}
			}
		})
	}
}

// Exact times: the DB's ms columns, else session_meta / the last line — never the
// local-time date folder (docs/agents/codex.md pitfall 7: TZ=UTC+14 wrote 2026/11/21/…T11-50-23).
func TestTimesNotFromPaths(t *testing.T) {
	for _, c := range []struct {
		mode                 string
		started, last, ended string
	}{
		{"db", "2026-11-20T21:50:23.936Z", "2026-11-20T21:50:24.036Z", "2026-11-20T21:50:24.035Z"},
		{"rollout-only", "2026-11-20T21:50:23.943Z", "2026-11-20T21:50:24.035Z", "2026-11-20T21:50:24.035Z"},
	} {
		home := fixtureHome(t)
		if c.mode == "rollout-only" {
			os.Remove(filepath.Join(codexDir(home), "state_5.sqlite"))
		}
		s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id70be]
		if s.StartedAt == nil || !s.StartedAt.Equal(ts(c.started)) || !s.LastActivity.Equal(ts(c.last)) || s.EndedAt == nil || !s.EndedAt.Equal(ts(c.ended)) {
			t.Errorf("%s: started %v last %v ended %v, want %s %s %s", c.mode, s.StartedAt, s.LastActivity, s.EndedAt, c.started, c.last, c.ended)
		}
	}
}

// The two TUI threads have no DB rows; they are still listed, from their rollouts.
func TestTUIThreadsWithoutDBRows(t *testing.T) {
	home := fixtureHome(t)
	got := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))
	for _, id := range []string{id568b, idD918} {
		s, ok := got[id]
		if !ok {
			t.Fatalf("TUI thread %s not listed", id)
		}
		if s.Extra["source"] != "vscode" || s.Entrypoint != "codex-tui" || s.Cwd != "/home/dev/webapp" {
			t.Errorf("%s: source %v entrypoint %q cwd %q", id, s.Extra["source"], s.Entrypoint, s.Cwd)
		}
	}
	if p := got[id568b].Prompt; p != "Say hi from TUI" {
		t.Errorf("prompt %q", p)
	}
}

// DB rows with an empty title/first_user_message (the process died early) fall
// back to the rollout.
func TestEmptyDBTitleFallsBackToRollout(t *testing.T) {
	s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(fixtureHome(t), nil, nil))[id60b3]
	if s.Prompt != "prefix test 2" || s.Title != "prefix test 2" {
		t.Errorf("prompt %q title %q", s.Prompt, s.Title)
	}
}

// threads.rollout_path points at /home/dev/.codex (the home moved): the rollout is
// found by the UUID in its file name. A row whose rollout is gone is still listed.
func TestMovedHomeAndMissingRollout(t *testing.T) {
	home := fixtureHome(t)
	os.Remove(rolloutPath(t, home, id5425))
	got := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))
	if s := got[id1023]; !strings.HasPrefix(s.Path, home) {
		t.Errorf("1023 path %q not under the test home", s.Path)
	}
	s, ok := got[id5425]
	if !ok {
		t.Fatal("thread with a DB row but no rollout not listed")
	}
	if s.Path != "" || s.Prompt != "prefix test" || s.Status != discover.StatusStopped || s.Extra["reason"] != "done" {
		t.Errorf("path %q prompt %q status %s reason %v (%s)", s.Path, s.Prompt, s.Status, s.Extra["reason"], s.EvidenceDetail)
	}
}

func TestCodexHomeEnv(t *testing.T) {
	home := fixtureHome(t)
	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(codexDir(home), other); err != nil {
		t.Fatal(err)
	}
	if got := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil)); len(got) != 0 {
		t.Errorf("without CODEX_HOME: %d sessions, want 0", len(got))
	}
	got := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, map[string]string{"CODEX_HOME": other}))
	if len(got) != 8 {
		t.Errorf("with CODEX_HOME: %d sessions, want 8", len(got))
	}
}

// The databases may live elsewhere: $CODEX_SQLITE_HOME, or sqlite_home in config.toml.
func TestSQLiteHome(t *testing.T) {
	home := fixtureHome(t)
	dbDir := t.TempDir()
	for _, n := range []string{"state_5.sqlite", "thread_history_1.sqlite"} {
		if err := os.Rename(filepath.Join(codexDir(home), n), filepath.Join(dbDir, n)); err != nil {
			t.Fatal(err)
		}
	}
	// Most DB fields equal the rollout's here; the turn's provenance tells them apart.
	env := testEnv(home, nil, map[string]string{"CODEX_SQLITE_HOME": dbDir})
	if d := discovertest.DiscoverAll(t, testAdapter(nil), env)[id5425].EvidenceDetail; !strings.Contains(d, "thread_turns") {
		t.Errorf("CODEX_SQLITE_HOME not used: %s", d)
	}
	cfg := filepath.Join(codexDir(home), "config.toml")
	b, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, []byte("sqlite_home = \""+dbDir+"\" # moved\n"+string(b)), 0o600); err != nil {
		t.Fatal(err)
	}
	if d := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id5425].EvidenceDetail; !strings.Contains(d, "thread_turns") {
		t.Errorf("config sqlite_home not used: %s", d)
	}
}

func TestConfigSQLiteHome(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, want string }{
		{"model = \"x\"\nsqlite_home = \"/var/db\"\n", "/var/db"},
		{"sqlite_home = '/lit/path' # comment\n", "/lit/path"},
		{"[projects.x]\nsqlite_home = \"/not/top/level\"\n", ""},
		{"model = \"x\"\n", ""},
	} {
		p := filepath.Join(dir, "config.toml")
		os.WriteFile(p, []byte(c.body), 0o600)
		if got := configSQLiteHome(p); got != c.want {
			t.Errorf("%q: got %q, want %q", c.body, got, c.want)
		}
	}
}

func TestUUIDTime(t *testing.T) {
	if got := uuidTime("01a1faeb-1023-71b2-9931-d11b29406e2b"); !got.Equal(ts("2026-11-20T21:44:31.523Z")) {
		t.Errorf("got %v", got)
	}
	if got := uuidTime("5973b6c0-94b8-487b-a530-2aeb6098ae0e"); !got.IsZero() {
		t.Errorf("v4 uuid has no time, got %v", got)
	}
}

// A rollout whose name has no UUID is identified by its session_meta, and still
// joins its DB row.
func TestRolloutNameWithoutUUID(t *testing.T) {
	home := fixtureHome(t)
	p := rolloutPath(t, home, id5425)
	if err := os.Rename(p, filepath.Join(filepath.Dir(p), "rollout-renamed-by-hand.jsonl")); err != nil {
		t.Fatal(err)
	}
	got := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))
	s := got[id5425]
	if len(got) != 8 || !strings.HasSuffix(s.Path, "rollout-renamed-by-hand.jsonl") || s.Extra["tokens_total"] != int64(49) || s.Extra["last_turn"] != "completed" {
		t.Errorf("%d sessions; path %q tokens %v turn %v", len(got), s.Path, s.Extra["tokens_total"], s.Extra["last_turn"])
	}
}

// TestGiveUpLeavesOutUnreadRollouts: past the point where the budget gives up
// (a cold index on a cold disk), the rollouts not read yet are left out and
// named in a warning, instead of the adapter reading on into its deadline and
// answering nothing; the rollouts the index still covers are listed as ever,
// and a listing with time lists every one again.
func TestGiveUpLeavesOutUnreadRollouts(t *testing.T) {
	home := fixtureHome(t)
	env := testEnv(home, nil, nil)
	env.StateDir = t.TempDir()
	all := discovertest.DiscoverAll(t, testAdapter(nil), env)
	if len(all) < 2 {
		t.Fatalf("%d threads: the test needs two or more", len(all))
	}
	var changed discover.Session
	for _, s := range all {
		if s.Path != "" && (changed.ID == "" || s.ID < changed.ID) {
			changed = s
		}
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(changed.Path, later, later); err != nil {
		t.Fatal(err)
	}

	ss, warns := discoverGivenUp(t, nil, env)
	if len(ss) != len(all)-1 {
		t.Errorf("%d threads listed, want every one of %d but %s", len(ss), len(all), changed.ID)
	}
	for _, s := range ss {
		if s.ID == changed.ID {
			t.Errorf("%s listed although its rollout was not read", s.ID)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "1 rollouts were not read in time and are missing") || !strings.Contains(warns[0], filepath.Base(changed.Path)) {
		t.Errorf("warnings %q, want one naming %s as missing", warns, filepath.Base(changed.Path))
	}
	if again := discovertest.DiscoverAll(t, testAdapter(nil), env); len(again) != len(all) {
		t.Errorf("with time again: %d threads listed, want %d", len(again), len(all))
	}
}

// TestGiveUpKeepsLiveThreads: when the budget gives up, the rollouts left out
// are old threads only. A thread whose lock a live writer holds is read all the
// same, and listed as a listing with time lists it but for its token figures;
// an old one changed since it was indexed is left out and named.
func TestGiveUpKeepsLiveThreads(t *testing.T) {
	const native = 4242
	home := fixtureHome(t)
	writeLock(t, home, id861e)
	held := map[string]int{id861e + ".lock": native}
	env := testEnv(home, procs(native), nil)
	env.StateDir = t.TempDir()
	all := discovertest.DiscoverAll(t, testAdapter(held), env) // indexes every rollout
	if all[id861e].Status != discover.StatusRunning {
		t.Fatalf("fixture: %s is %q, want running", id861e, all[id861e].Status)
	}
	old := all[id60b3]
	if old.Path == "" || old.PID != 0 {
		t.Fatalf("fixture: %s has no rollout or is alive", id60b3)
	}
	long := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // both changed: neither index entry holds
	for _, p := range []string{all[id861e].Path, old.Path} {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}

	ss, warns := discoverGivenUp(t, held, env)
	got := map[string]discover.Session{}
	for _, s := range ss {
		got[s.ID] = s
	}
	if _, listed := got[id60b3]; listed {
		t.Errorf("%s listed although the budget had given up before reading it", id60b3)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "1 rollouts were not read in time") || !strings.Contains(warns[0], filepath.Base(old.Path)) {
		t.Errorf("warnings %q, want one naming %s (and nothing else) as left out", warns, filepath.Base(old.Path))
	}
	want := discovertest.DiscoverAll(t, testAdapter(held), env)[id861e]
	if diff := cmp.Diff(want, got[id861e], cmpopts.IgnoreFields(discover.Session{}, "Tokens", "CostUSD", "CostSource", "Slots", "Extra")); diff != "" {
		t.Errorf("live thread %s (-with time +given up):\n%s", id861e, diff)
	}
}

// discoverGivenUp lists env with the adapter's budget given up from the start
// (lock holders held), returning the threads and the warnings.
func discoverGivenUp(t *testing.T, held map[string]int, env *discover.Env) ([]discover.Session, []string) {
	t.Helper()
	a := testAdapter(held)
	past := time.Now().Add(-time.Second)
	a.Budget = func(context.Context) discover.Budget { return discover.Budget{StopAt: past, GiveUpAt: past} }
	var warns []string
	ss, err := a.Discover(context.Background(), env.WithWarn(func(s string) { warns = append(warns, s) }))
	if err != nil {
		t.Fatal(err)
	}
	return ss, warns
}
