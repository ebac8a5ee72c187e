package copilot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/proc"
)

// fact is what testdata/manifest.json says of one session, copied by hand.
type fact struct {
	Cwd, Model, Prompt string
	Prompts            int
	Tokens             discover.Tokens
	Status, Blocked    string
	Started, Last      string
}

// manifest is testdata/manifest.json (record-shared/copilot), written out by
// hand from its values, not from this adapter's output.
var manifest = map[string]fact{
	idE: {"/home/dev/webapp", "gpt-4.1", "explain the build layout", 1,
		discover.Tokens{Input: 1108, Output: 22, CacheRead: 3}, "stopped", "",
		"2026-12-01T22:30:18.532Z", "2026-12-01T22:31:05.603Z"},
	idA: {"/home/dev/webapp", "gpt-4.1", "list the TODO comments in main.go", 1,
		discover.Tokens{Input: 1400, Output: 70, CacheRead: 300}, "stopped", "",
		"2026-12-01T22:31:32.936Z", "2026-12-01T22:31:34.100Z"},
	idB: {"/home/dev/webapp", "claude-sonnet-4.5", "summarise the README for a new contributor", 2,
		discover.Tokens{Input: 8700, Output: 160, CacheRead: 1701, CacheWrite: 35}, "stopped", "",
		"2026-12-01T22:31:38.219Z", "2026-12-01T22:31:48.092Z"},
	idC: {"/home/dev/billing", "gpt-4.1", "fix the invoice rounding bug", 1,
		discover.Tokens{}, "failed", "quota",
		"2026-12-01T22:31:53.637Z", "2026-12-01T22:32:01.567Z"},
	idD: {"/home/dev/billing", "claude-sonnet-4.5", "deploy the staging stack", 1,
		discover.Tokens{}, "failed", "auth",
		"2026-12-01T22:32:06.552Z", "2026-12-01T22:32:10.781Z"},
}

func TestDiscoverFixtureMatchesManifest(t *testing.T) {
	env, warns := testEnv(t, fixtureHome, nil, nil) // nothing alive
	got := discoverAll(t, env)
	if len(got) != len(manifest) {
		t.Errorf("listed %d sessions, manifest has %d", len(got), len(manifest))
	}
	for id, want := range manifest {
		s, ok := got[id]
		if !ok {
			t.Errorf("session %s not listed", id)
			continue
		}
		g := fact{Cwd: s.Cwd, Model: s.Model, Prompt: s.Prompt, Status: s.Status, Blocked: s.BlockedReason}
		if s.Tokens != nil {
			g.Tokens = *s.Tokens
		} else {
			t.Errorf("%s: no tokens", id)
		}
		if s.StartedAt != nil {
			g.Started = s.StartedAt.Format("2006-01-02T15:04:05.000Z")
		}
		if s.LastActivity != nil {
			g.Last = s.LastActivity.Format("2006-01-02T15:04:05.000Z")
		}
		sum := parseFile(t, filepath.Join(fixtureHome, ".copilot/session-state", id, "events.jsonl"))
		g.Prompts = sum.Prompts
		if d := cmp.Diff(want, g); d != "" {
			t.Errorf("session %s (-manifest +got):\n%s", id, d)
		}
		if s.Adapter != Name || s.PID != 0 || s.EndedAt == nil {
			t.Errorf("%s: adapter %q pid %d ended %v", id, s.Adapter, s.PID, s.EndedAt)
		}
	}
	if e := got[idE]; !strings.Contains(e.EvidenceDetail, "inuse.24788.lock: pid 24788 is gone") {
		t.Errorf("E's detail does not name its stale lock: %q", e.EvidenceDetail)
	}
	if len(*warns) > 0 {
		t.Errorf("warnings: %q", *warns)
	}
}

func parseFile(t *testing.T, path string) *summary {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := parseEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A live copilot process holding E's lock makes E alive; the same pid started
// after the lock was written, or now another program, leaves it stale.
func TestLockLiveness(t *testing.T) {
	home := t.TempDir()
	discovertest.CopyTree(t, fixtureHome, home)
	lockPath := filepath.Join(home, ".copilot/session-state", idE, "inuse.24788.lock")
	lockTime := ts("2026-12-01T22:30:18.600Z")
	if err := os.Chtimes(lockPath, lockTime, lockTime); err != nil {
		t.Fatal(err)
	}
	started := ts("2026-12-01T22:30:18Z")
	for _, tc := range []struct {
		name         string
		procs        proc.Table
		working      bool
		status, want string
		pid          int
	}{
		{"live holder", &proc.Fake{Procs: []proc.Process{{PID: 24788, Comm: "copilot"}}, Starts: mapStart(24788, started)}, false, "idle", "inuse.24788.lock held by copilot pid 24788", 24788},
		// A headless run (the prompt piped in) takes no prompt but its own: at
		// work until it exits, also before its prompt is on disk.
		{"live headless holder", &proc.Fake{Procs: []proc.Process{{PID: 24788, Comm: "copilot"}}, Args: map[int][]string{24788: {"copilot", "--allow-all-tools", "--output-format", "json"}}, Starts: mapStart(24788, started)}, false, "running", "a headless run", 24788},
		{"live headless holder under its loader", &proc.Fake{Procs: []proc.Process{{PID: 24700, Comm: "node"}, {PID: 24788, PPID: 24700, Comm: "copilot"}}, Args: map[int][]string{24700: {"node", "copilot", "-p", "fix it"}, 24788: {"copilot"}}, Starts: mapStart(24788, started)}, false, "running", "a headless run", 24788},
		{"live holder mid-turn (TUI working)", &proc.Fake{Procs: []proc.Process{{PID: 24788, Comm: "copilot"}}, Starts: mapStart(24788, started)}, true, "running", "a turn is in flight", 24788},
		// The native binary names its main thread: comm reads "MainThread" (seen
		// with 1.0.102); its executable is what says copilot.
		{"live holder named MainThread", &proc.Fake{Procs: []proc.Process{{PID: 24788, Comm: "MainThread"}}, Exes: map[int]string{24788: "/opt/node_modules/@github/copilot-linux-x64/copilot"}, Starts: mapStart(24788, started)}, false, "idle", "held by copilot pid 24788", 24788},
		{"MainThread of another program", &proc.Fake{Procs: []proc.Process{{PID: 24788, Comm: "MainThread"}}, Exes: map[int]string{24788: "/usr/bin/node"}, Args: map[int][]string{24788: {"node", "server.js"}}, Starts: mapStart(24788, started)}, false, "stopped", `is now "MainThread"`, 0},
		{"recycled pid", &proc.Fake{Procs: []proc.Process{{PID: 24788, Comm: "copilot"}}, Starts: mapStart(24788, lockTime.Add(10*time.Second))}, false, "stopped", "recycled", 0},
		{"pid is another program", &proc.Fake{Procs: []proc.Process{{PID: 24788, Comm: "bash"}}, Starts: mapStart(24788, started)}, false, "stopped", `is now "bash"`, 0},
		{"pid gone", &proc.Fake{}, false, "stopped", "pid 24788 is gone", 0},
		{"no process table", &proc.Fake{NoProcs: true}, false, "unknown", "no process table", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := `{"` + idE + `":{"schemaVersion":1,"working":` + map[bool]string{true: "true", false: "false"}[tc.working] + `}}`
			if err := os.WriteFile(filepath.Join(home, ".copilot/open-sessions-state.json"), []byte(state), 0o644); err != nil {
				t.Fatal(err)
			}
			env, _ := testEnv(t, home, tc.procs, nil)
			s := discoverAll(t, env)[idE]
			if s.Status != tc.status || !strings.Contains(s.EvidenceDetail, tc.want) || s.PID != tc.pid {
				t.Errorf("status %s pid %d detail %q; want %s pid %d detail containing %q", s.Status, s.PID, s.EvidenceDetail, tc.status, tc.pid, tc.want)
			}
			if tc.status == "idle" || tc.status == "running" {
				if s.Evidence != discover.EvidenceRegistry {
					t.Errorf("evidence %s", s.Evidence)
				}
			}
			// The other sessions have no lock: never alive, whatever runs.
			for id, o := range discoverAll(t, env) {
				if id != idE && o.Status != manifest[id].Status {
					t.Errorf("%s: %s", id, o.Status)
				}
			}
		})
	}
}

func mapStart(pid int, t time.Time) map[int]time.Time { return map[int]time.Time{pid: t} }

func TestOnlyAliveSkipsLocklessSessions(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil, nil)
	env.OnlyAlive = true
	opened := 0
	var mu sync.Mutex
	defer agentfs.SetHook(func(string) { mu.Lock(); opened++; mu.Unlock() })()
	ss, err := New().Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 0 || opened > 1 { // E's lock is read to check it
		t.Errorf("alive-only listing gave %d sessions and opened %d files", len(ss), opened)
	}
}

func TestFindTouchesOnlyThatSession(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil, nil)
	all := discoverAll(t, env)
	var mu sync.Mutex
	var paths []string
	restore := agentfs.SetHook(func(p string) { mu.Lock(); paths = append(paths, p); mu.Unlock() })
	ss, err := New().Find(context.Background(), env, discover.Query{Prefix: idB[:8]})
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("Find gave %d sessions", len(ss))
	}
	if d := cmp.Diff(all[idB], ss[0]); d != "" {
		t.Errorf("Find differs from Discover (-discover +find):\n%s", d)
	}
	for _, p := range paths {
		if !strings.Contains(p, idB) {
			t.Errorf("Find opened %s", p)
		}
	}
}

func TestCopilotHomeOverride(t *testing.T) {
	env, _ := testEnv(t, t.TempDir(), nil, map[string]string{EnvHome: filepath.Join(fixtureHome, ".copilot")})
	if got := discoverAll(t, env); len(got) != 5 {
		t.Errorf("COPILOT_HOME: %d sessions", len(got))
	}
}

// A TUI closed before its first prompt leaves a directory without events.jsonl.
func TestDirWithoutEventsSkipped(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".copilot/session-state/11111111-2222-4333-8444-555555555555")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "workspace.yaml"), []byte("id: x\ncwd: /w\nsomething_new: [1, 2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env, _ := testEnv(t, home, nil, nil)
	if got := discoverAll(t, env); len(got) != 0 {
		t.Errorf("listed %v", got)
	}
}

// A live holder whose latest permission request is unanswered is waiting; the
// completion, or a new process, clears it.
func TestPermissionWaiting(t *testing.T) {
	req := `{"type":"permission.requested","data":{"requestId":"r1","permissionRequest":{"kind":"shell"}},"id":"p1","timestamp":"2026-12-01T10:00:02.000Z"}`
	done := `{"type":"permission.completed","data":{"requestId":"r1","result":{"kind":"approved"}},"id":"p2","timestamp":"2026-12-01T10:00:03.000Z"}`
	for _, tc := range []struct {
		name   string
		lines  []string
		status string
	}{
		{"asked", []string{evStartLine, evUserLine, evTurnStart, req}, "waiting"},
		{"answered", []string{evStartLine, evUserLine, evTurnStart, req, done}, "running"},
		{"asked by a process that exited", []string{evStartLine, evUserLine, evTurnStart, req, evShutdown1, evResumeLine}, "idle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := homeWith(t, testID, tc.lines...)
			dir := filepath.Join(home, ".copilot/session-state", testID)
			if err := os.WriteFile(filepath.Join(dir, "inuse.77.lock"), []byte("77"), 0o644); err != nil {
				t.Fatal(err)
			}
			procs := &proc.Fake{Procs: []proc.Process{{PID: 77, Comm: "copilot"}}, Starts: mapStart(77, time.Now().Add(-time.Minute))}
			env, _ := testEnv(t, home, procs, nil)
			s := discoverAll(t, env)[testID]
			if s.Status != tc.status || s.PID != 77 {
				t.Errorf("status %s pid %d (%s); want %s", s.Status, s.PID, s.EvidenceDetail, tc.status)
			}
		})
	}
}

// The parse index is a pure cache: the same listing with it, from it, and
// without it; a file that grew is parsed again.
func TestParseIndex(t *testing.T) {
	home := t.TempDir()
	discovertest.CopyTree(t, fixtureHome, home)
	env, _ := testEnv(t, home, nil, nil)
	env.NoCache = true
	want := discoverAll(t, env)

	env.NoCache, env.StateDir = false, t.TempDir()
	if d := cmp.Diff(want, discoverAll(t, env)); d != "" {
		t.Errorf("first run with the index (-without +with):\n%s", d)
	}
	var mu sync.Mutex
	var opened []string
	restore := agentfs.SetHook(func(p string) { mu.Lock(); opened = append(opened, p); mu.Unlock() })
	got := discoverAll(t, env)
	restore()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("run from the index (-without +with):\n%s", d)
	}
	for _, p := range opened {
		if strings.HasSuffix(p, "events.jsonl") {
			t.Errorf("an unchanged event log was parsed again: %s", p)
		}
	}
	// Find reads the index too (point load), and agrees.
	found, err := New().Find(context.Background(), env, discover.Query{IDs: []string{idC}})
	if err != nil || len(found) != 1 || !cmp.Equal(found[0], want[idC]) {
		t.Errorf("Find from the index: %v %v", found, err)
	}

	// A resume appends a prompt the stub answers: the session is parsed again.
	f, err := os.OpenFile(filepath.Join(home, ".copilot/session-state", idA, "events.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(evResumeLine + "\n" + evUserLine + "\n" + evUsage2 + "\n" + evAnswerLine + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	a := discoverAll(t, env)[idA]
	if a.Tokens == nil || a.Tokens.Input != 1400+2900 {
		t.Errorf("after an append: tokens %v, want input %d", a.Tokens, 1400+2900)
	}
}
