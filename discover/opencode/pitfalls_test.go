package opencode

// One test per pitfall of docs/agents/opencode.md §9. Launch-side pitfalls (3, 4, 6, 7, 8,
// 12–15) are tested here from the read side: what the listing must show for the
// sessions those runs left behind.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/e2e/synth"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

func secondEnv(t *testing.T, procs proc.Table) *discover.Env {
	return newEnv(t.TempDir(), map[string]string{"XDG_DATA_HOME": testdata(t, "second-data-home")}, procs)
}

// 1. Reading only storage/ finds nothing on ≥ 1.2: the fixtures have no storage/.
func TestPitfall01_SQLiteOnlyStore(t *testing.T) {
	if _, err := os.Stat(testdata(t, "home/.local/share/opencode/storage")); !os.IsNotExist(err) {
		t.Fatalf("fixture unexpectedly has a storage/ tree: %v", err)
	}
	if got, _ := list(t, newEnv(testdata(t, "home"), nil, noProcs())); len(got) != 6 {
		t.Errorf("home: %d sessions, want 6", len(got))
	}
	if got, _ := list(t, secondEnv(t, noProcs())); len(got) != 7 {
		t.Errorf("second data home: %d sessions, want 7", len(got))
	}
}

// 2. Real ids are ses_ + 26 chars, times are epoch ms, and the project id is the
// root commit, not sha1(path).
func TestPitfall02_RealIdsTimesProjects(t *testing.T) {
	idRE := regexp.MustCompile(`^ses_[0-9a-zA-Z]{26}$`)
	got, _ := list(t, newEnv(testdata(t, "home"), nil, noProcs()))
	sum := sha1.Sum([]byte("/home/dev/frontend"))
	for id, s := range got {
		if !idRE.MatchString(id) {
			t.Errorf("id %q", id)
		}
		if s.StartedAt.Year() != 2026 || s.StartedAt.Month() != time.November || s.StartedAt.Day() != 20 {
			t.Errorf("%s started %v, want 2026-11-20 (ms epoch)", id, s.StartedAt)
		}
		if s.Extra["project_id"] != frontendProject || s.Extra["project_id"] == hex.EncodeToString(sum[:]) {
			t.Errorf("%s project id %v", id, s.Extra["project_id"])
		}
	}
}

// 3. agentctl never invents ids: a launch record carrying a real id merges into
// that row instead of adding a session.
func TestPitfall03_LaunchRecordIdMatchesARow(t *testing.T) {
	env := newEnv(testdata(t, "home"), nil, noProcs())
	ss, err := testAdapter().Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	env.Launches = []meta.Launch{{ID: "l-1", Adapter: Name, SessionID: sesDone, Cwd: "/home/dev/frontend", PID: 4242, StartTicks: 1, LaunchedAt: time.UnixMilli(1795211140000)}}
	merged := discover.ApplyLaunches(env, ss, []string{Name}, map[string]bool{Name: true})
	if len(merged) != len(ss) {
		t.Fatalf("%d sessions after the launch record, want %d", len(merged), len(ss))
	}
	for _, s := range merged {
		if s.ID == sesDone && (s.LaunchID != "l-1" || s.Title != "Hello from the fake server.") {
			t.Errorf("merged row %+v", s)
		}
	}
}

// 4. A bare model makes OpenCode store {"id":"","providerID":"fake-model"} and
// fail: shown as what the user typed, failed, not a broken "fake-model/".
func TestPitfall04_BareModel(t *testing.T) {
	got, _ := list(t, secondEnv(t, noProcs()))
	for _, id := range []string{"ses_e0512f1c6ffeAuSJJvbKtxbKjS", "ses_e0512bc98ffeZDmfyuqbY6KQL2"} {
		s := got[id]
		if s.Model != "fake-model" || s.Status != discover.StatusFailed || !strings.Contains(s.EvidenceDetail, "startup error") {
			t.Errorf("%s: model %q status %q detail %q", id, s.Model, s.Status, s.EvidenceDetail)
		}
	}
}

// 5. Success does not depend on run time: an 18 s turn (SIGINT ignored) and a
// 0.9 s turn are both done.
func TestPitfall05_NoWallTimeHeuristics(t *testing.T) {
	home, _ := list(t, newEnv(testdata(t, "home"), nil, noProcs()))
	second, _ := list(t, secondEnv(t, noProcs()))
	for _, s := range []discover.Session{home["ses_e05125f0effeoINTO4R28ZI67S"], second["ses_e0515a303ffe5my0YIIwIWl9lm"]} {
		if s.Status != discover.StatusStopped || s.EvidenceDetail != "done (finish=stop)" {
			t.Errorf("%s: %s %q", s.ID, s.Status, s.EvidenceDetail)
		}
	}
}

// 6. OpenCode works in $PWD, not the real cwd: the recorded directory is PWD's,
// and a process is matched by its PWD.
func TestPitfall06_PWDBeatsCwd(t *testing.T) {
	second, _ := list(t, secondEnv(t, noProcs()))
	if d := second["ses_e05132ea8ffex13Y6SC0gNwjrw"].Cwd; d != "/home/dev/tools" {
		t.Errorf("PWD test session directory %q, want /home/dev/tools", d)
	}
	p := ocRun(500, "/home/dev/frontend", 1795211624000)
	p.cwd = "/home/dev/tools" // spawned elsewhere, PWD says frontend
	if got := statuses(t, newEnv(testdata(t, "home"), nil, table(p)), sesListener); got[sesListener] != running {
		t.Errorf("PWD=frontend, cwd=tools: %v", got)
	}
	p = ocRun(500, "/home/dev/tools", 1795211624000)
	p.cwd = "/home/dev/frontend"
	if got := statuses(t, newEnv(testdata(t, "home"), nil, table(p)), sesListener); got[sesListener] != crashed {
		t.Errorf("PWD=tools, cwd=frontend: %v", got)
	}
}

// 7. A resume is `run --session <id>`: that process is tied to that session;
// `run -c` is not tied to any id.
func TestPitfall07_ResumeBySession(t *testing.T) {
	got := statuses(t, newEnv(testdata(t, "home"), nil, table(ocRun(500, "/", 1795212000000, "--session", sesAborted))), sesAborted, sesDone)
	if got[sesAborted] != running || got[sesDone] != stopped {
		t.Errorf("run --session: %v", got)
	}
	got = statuses(t, newEnv(testdata(t, "home"), nil, table(ocRun(500, "/home/dev/frontend", 1795212000000, "-c"))), sesAborted, sesDone)
	if got[sesAborted] != stopped || got[sesDone] != stopped {
		t.Errorf("run -c: %v", got)
	}
}

// 8. SIGINT is ignored (the turn finished: done); SIGTERM leaves the assistant
// open: failed/crashed unless agentctl recorded the stop, then stopped.
func TestPitfall08_SignalOutcomes(t *testing.T) {
	env := newEnv(testdata(t, "home"), nil, noProcs())
	ss, err := testAdapter().Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]discover.Session{}
	for _, s := range ss {
		by[s.ID] = s
	}
	if s := by["ses_e05125f0effeoINTO4R28ZI67S"]; s.Status != discover.StatusStopped {
		t.Errorf("SIGINT run: %s", s.Status)
	}
	if s := by[sesTERM]; s.Status != discover.StatusFailed || !strings.HasPrefix(s.EvidenceDetail, "crashed") {
		t.Errorf("SIGTERM outside agentctl: %s %q", s.Status, s.EvidenceDetail)
	}
	stop := time.UnixMilli(1795211230700)
	env.Launches = []meta.Launch{{ID: "l-2", Adapter: Name, SessionID: sesTERM, PID: 4243, StartTicks: 7, StopRequested: &stop, LaunchedAt: stop}}
	for _, s := range discover.ApplyLaunches(env, ss, []string{Name}, map[string]bool{Name: true}) {
		if s.ID == sesTERM && s.Status != discover.StatusStopped {
			t.Errorf("SIGTERM by agentctl: %s (%s)", s.Status, s.EvidenceDetail)
		}
	}
}

// 9. A session updated 5 s ago with no process is not running.
func TestPitfall09_FreshnessIsNotEvidence(t *testing.T) {
	env := newEnv(testdata(t, "home"), nil, noProcs())
	env.Now = func() time.Time { return time.UnixMilli(1795211625969 + 5000) } // sesListener's time_updated + 5 s
	got, _ := list(t, env)
	if s := got[sesListener]; s.Status == discover.StatusRunning || discover.Alive(s.Status) {
		t.Errorf("updated 5 s ago, no process: %s", s.Status)
	}
}

// 10. `opencode session list` is project-scoped; agentctl lists every project and
// directory of the store, from anywhere.
func TestPitfall10_AllProjects(t *testing.T) {
	got, _ := list(t, secondEnv(t, noProcs()))
	dirs := map[string]int{}
	for _, s := range got {
		dirs[s.Cwd]++
	}
	if dirs["/home/dev/docs-site"] != 6 || dirs["/home/dev/tools"] != 1 {
		t.Errorf("directories %v", dirs)
	}
	// The home store mixes a git project's sessions with a global project row.
	home, _ := list(t, newEnv(testdata(t, "home"), nil, noProcs()))
	if len(home) != 6 {
		t.Errorf("home: %d", len(home))
	}
}

// 11. The title is not the prompt: a killed session keeps "New session - …",
// which is not shown as a title; the prompt comes from the parts.
func TestPitfall11_TitleIsNotPrompt(t *testing.T) {
	got, _ := list(t, newEnv(testdata(t, "home"), nil, noProcs()))
	s := got[sesTERM]
	if s.Title != "" || s.Extra["default_title"] != "New session - 2026-11-20T21:47:08.768Z" || s.Prompt != `"Signal test TERM"` {
		t.Errorf("title %q default %v prompt %q", s.Title, s.Extra["default_title"], s.Prompt)
	}
	if s := got[sesDone]; s.Title != "Hello from the fake server." || s.Prompt != `"Say hello slowly"` {
		t.Errorf("auto-titled: title %q prompt %q", s.Title, s.Prompt)
	}
}

// 12. Positional prompts gain literal quotes, stdin prompts are stored verbatim:
// the listing shows both exactly as stored.
func TestPitfall12_PromptsVerbatim(t *testing.T) {
	got, _ := list(t, secondEnv(t, noProcs()))
	if p := got["ses_e0515a303ffe5my0YIIwIWl9lm"].Prompt; p != `"Say hello"` {
		t.Errorf("positional: %q", p)
	}
	if p := got["ses_e051118ceffeOuOKh3C0YwstV5"].Prompt; p != "prompt from stdin with spaces\n" {
		t.Errorf("stdin: %q", p)
	}
}

// 13. Prompts go through stdin from a file: the stdin run completed (done), with
// its prompt intact, and peek shows it verbatim.
func TestPitfall13_StdinRunCompleted(t *testing.T) {
	env := secondEnv(t, noProcs())
	got, _ := list(t, env)
	s := got["ses_e051118ceffeOuOKh3C0YwstV5"]
	if s.Status != discover.StatusStopped || s.EvidenceDetail != "done (finish=stop)" {
		t.Errorf("stdin run: %s %q", s.Status, s.EvidenceDetail)
	}
	if ms := peek(t, env, s, 0); len(ms) != 2 || ms[0].Text != "prompt from stdin with spaces\n" {
		t.Errorf("peek: %+v", ms)
	}
}

// 14. The session id is learnt from the row (found by its title tag) long before
// any model output: a row with only an empty user message is listed, and a
// --title tag survives auto-titling.
func TestPitfall14_RowBeforeOutput(t *testing.T) {
	home, _ := list(t, newEnv(testdata(t, "home"), nil, noProcs()))
	if s, ok := home[sesEarly]; !ok || s.Title != "tag-early-check" || s.Prompt != "" {
		t.Errorf("early row: %+v", s)
	}
	second, _ := list(t, secondEnv(t, noProcs()))
	if s := second["ses_e051132e4ffeMqPr473ml2oBrt"]; s.Title != "agentctl:tag-42" {
		t.Errorf("tag title %q", s.Title)
	}
}

// 15. A failed launch still leaves a session row: listed, with its id, failed.
func TestPitfall15_FailedLaunchRow(t *testing.T) {
	got, _ := list(t, secondEnv(t, noProcs()))
	for _, id := range []string{"ses_e0512f1c6ffeAuSJJvbKtxbKjS", "ses_e0512d8f7ffeyxXLCfMtaFA9mM", "ses_e0512bc98ffeZDmfyuqbY6KQL2"} {
		if s, ok := got[id]; !ok || s.Status != discover.StatusFailed || s.Tokens == nil || !s.Tokens.Zero() {
			t.Errorf("%s: %+v", id, s)
		}
	}
}

// 16. Sub-agent sessions carry their parent (the CLI nests and hides them).
func TestPitfall16_SubAgentChildren(t *testing.T) {
	home, path := dataCopy(t, testdata(t, "home/.local/share/opencode"))
	w := writer(t, path)
	mustExec(t, w, "UPDATE session SET parent_id = ?, title = 'Child session - 2026-11-20T21:53:44.874Z' WHERE id = ?", sesDone, sesListener)
	w.Close()
	got, _ := list(t, newEnv(home, nil, noProcs()))
	s := got[sesListener]
	if s.Extra["parent_id"] != sesDone || s.Title != "" {
		t.Errorf("child: parent %v title %q", s.Extra["parent_id"], s.Title)
	}
	if _, ok := got[sesDone].Extra["parent_id"]; ok {
		t.Errorf("parent has a parent_id")
	}
}

// 17. Half-imported legacy data: an id in both stores is listed once with the
// database's values; a legacy-only session is listed from its JSON files; files
// of other shapes are skipped.
func TestPitfall17_LegacyTreeDeduped(t *testing.T) {
	home, _ := dataCopy(t, testdata(t, "home/.local/share/opencode"))
	discovertest.CopyTree(t, testdata(t, "legacy/storage"), filepath.Join(home, ".local", "share", "opencode", "storage"))
	env := newEnv(home, nil, noProcs())
	got, warns := list(t, env)
	if len(warns) > 0 {
		t.Errorf("warnings %q", warns)
	}
	if len(got) != 7 {
		t.Errorf("%d sessions, want the 6 of the db + 1 legacy-only (the 0.x file skipped)", len(got))
	}
	if s := got[sesDone]; s.Title != "Hello from the fake server." || s.Cwd != "/home/dev/frontend" || s.AgentVersion != "1.18.33" || s.Extra["store"] != nil {
		t.Errorf("duplicate took legacy values: %+v", s)
	}
	s := got[legacyOnly]
	if s.Title != "Legacy session title" || s.Cwd != "/home/dev/old-project" || s.AgentVersion != "1.1.12" ||
		s.Model != "anthropic/claude-sonnet-4-5" || s.Prompt != "legacy prompt: list the files" ||
		s.Status != discover.StatusStopped || s.EvidenceDetail != "done (finish=stop)" || s.Extra["project"] != "/" ||
		!s.StartedAt.Equal(time.UnixMilli(1790000000000)) || !s.EndedAt.Equal(time.UnixMilli(1790000009000)) {
		t.Errorf("legacy-only session: %+v", s)
	}
	// Totals are the sum over its message files: assistant B (1000 in, 200 out,
	// 300 cache read, $0.0123) + assistant D (1500 in, 100 out, $0.02); user
	// messages and the torn file Z add nothing.
	if diff := cmp.Diff(&discover.Tokens{Input: 2500, Output: 300, CacheRead: 300}, s.Tokens); diff != "" {
		t.Errorf("legacy tokens (-want +got):\n%s", diff)
	}
	if s.CostUSD == nil || math.Abs(*s.CostUSD-0.0323) > 1e-12 || s.CostSource != "agent" {
		t.Errorf("legacy cost %v %q, want 0.0323 agent", s.CostUSD, s.CostSource)
	}
	ms := peek(t, env, s, 0)
	var kinds []string
	for _, m := range ms {
		kinds = append(kinds, m.Kind+":"+m.Text)
	}
	want := "user:legacy prompt: list the files|assistant:Listing them.|user:thanks|assistant:You're welcome."
	if strings.Join(kinds, "|") != want || len(ms[1].Tools) != 1 || ms[1].Tools[0].Summary != "ls" || ms[1].Tools[0].Result != "README.md" {
		t.Errorf("legacy peek %q tools %+v", kinds, ms[1].Tools)
	}
	if ms := peek(t, env, s, 1); len(ms) != 1 || ms[0].Text != "You're welcome." {
		t.Errorf("legacy peek -n 1 (last file does not parse): %+v", ms)
	}
}

// 19. Session ids sort descending (newest first): order comes from time_updated,
// never from ids.
func TestPitfall19_OrderByUpdateTime(t *testing.T) {
	ss, err := testAdapter().Discover(context.Background(), secondEnv(t, noProcs()))
	if err != nil {
		t.Fatal(err)
	}
	discover.SortSessions(ss)
	var got []string
	for _, s := range ss {
		got = append(got, s.ID[4:12])
	}
	// failed sessions are not alive either: all sort by last activity
	want := "e051118c e051132e e0515a30 e0512bc9 e0512d8f e0512f1c e05132ea"
	if strings.Join(got, " ") != want {
		t.Errorf("order %v\nwant  %s", got, want)
	}
}

// 20. Status of 200 sessions is fast and needs no subprocess (only the shared
// process snapshot): an lsof or opencode on PATH that records being run is
// never run. The bound is the agent notes' 300 ms (scaled under the race
// detector); how fast it is goes by BenchmarkLargeStore.
func TestPitfall20_ListingIsFast(t *testing.T) {
	bin, ran := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	for _, name := range []string{"lsof", "opencode", "ps", "fuser"} {
		script := "#!/bin/sh\necho " + name + " >> " + ran + "\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	home := t.TempDir()
	path := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteOpenCodeDB(path, 200, 20); err != nil {
		t.Fatal(err)
	}
	env := newEnv(home, nil, table(ocRun(500, "/home/dev/frontend", 1795211000000)))
	best := time.Hour
	for i := 0; i < 3; i++ {
		start := time.Now()
		got, _ := list(t, env)
		if d := time.Since(start); d < best {
			best = d
		}
		if len(got) != 200 {
			t.Fatalf("%d sessions", len(got))
		}
	}
	if limit := 300 * time.Millisecond * raceSlowdown; best > limit {
		t.Errorf("200 sessions took %v, want < %v", best, limit)
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Errorf("the listing ran subprocesses: %q", b)
	}
}

// 21. Tests never read the developer's environment: the adapter reads variables
// only through Env, so a process-wide XDG_DATA_HOME is ignored.
func TestPitfall21_OnlyEnvVariables(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", testdata(t, "second-data-home"))
	t.Setenv("OPENCODE_DB", testdata(t, "second-data-home/opencode/opencode.db"))
	ss, err := testAdapter().Discover(context.Background(), newEnv(t.TempDir(), nil, noProcs()))
	if err != nil || len(ss) != 0 {
		t.Errorf("read the process environment: %d sessions, err %v", len(ss), err)
	}
	env := &discover.Env{Home: t.TempDir(), Procs: noProcs()} // Getenv nil
	if ss, err := testAdapter().Discover(context.Background(), env); err != nil || len(ss) != 0 {
		t.Errorf("nil Getenv: %d sessions, err %v", len(ss), err)
	}
}
