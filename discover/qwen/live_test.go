package qwen

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
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

const (
	tuiID   = "4d30ac6b-c8ca-4771-a849-ca3cedc7fc98" // the fixture's killed TUI
	tuiBoot = "79db9382-bfaf-40bf-95df-0f4585ce04de"
)

// tuiAlive is a process table in which the fixture's TUI (pid 22735) still runs
// with the start ticks its registry record holds, on the recorded boot.
func tuiAlive(ticks uint64, boot string) *proc.Fake {
	return &proc.Fake{Boot: boot, Procs: []proc.Process{{PID: 22735, PPID: 22700, Comm: "node", StartTicks: ticks}}}
}

// TestRegistryLive: a registry record whose pid runs with its start token makes
// the session alive (a TUI at rest after its reply: idle), with its pid.
func TestRegistryLive(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, tuiAlive(339157, tuiBoot), nil)
	s := discoverAll(t, New(), env)[tuiID]
	if s.Status != discover.StatusIdle || s.Evidence != discover.EvidenceRegistry || s.PID != 22735 || s.EndedAt != nil || s.Inferred {
		t.Errorf("live TUI: status %s evidence %s pid %d ended %v inferred %v (%s)", s.Status, s.Evidence, s.PID, s.EndedAt, s.Inferred, s.EvidenceDetail)
	}
}

// TestRegistryStale: the same record with a recycled pid (other start ticks)
// or on another boot is a leftover: the session is not alive.
func TestRegistryStale(t *testing.T) {
	for name, procs := range map[string]*proc.Fake{
		"recycled":   tuiAlive(999, tuiBoot),
		"other boot": tuiAlive(339157, "another-boot"),
		"gone":       {Boot: tuiBoot},
	} {
		t.Run(name, func(t *testing.T) {
			env, _ := testEnv(t, fixtureHome, procs, nil)
			s := discoverAll(t, New(), env)[tuiID]
			if s.Status != discover.StatusStopped || s.Evidence != discover.EvidenceStaleRegistry || s.PID != 0 {
				t.Errorf("status %s evidence %s pid %d (%s), want stopped on stale-registry", s.Status, s.Evidence, s.PID, s.EvidenceDetail)
			}
		})
	}
}

// registryHome is a home with one TUI session, its registry record (pid 500,
// start ticks 42 on boot b) and the given transcript lines.
func registryHome(t *testing.T, lines ...string) string {
	home := t.TempDir()
	if len(lines) > 0 {
		writeChat(t, home, "/w", sid, lines...)
	}
	dir := filepath.Join(home, ".qwen", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rec := `{"schemaVersion":1,"pid":500,"procStart":"b:42","pidNs":1,"sessionId":"` + sid + `","cwd":"/w","name":"w-00","startedAt":1796119190000,"qwenVersion":"0.24.4","kind":"tui"}`
	if err := os.WriteFile(filepath.Join(dir, "500.json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func live500() *proc.Fake {
	return &proc.Fake{Boot: "b", Procs: []proc.Process{{PID: 500, Comm: "node", StartTicks: 42}}}
}

// TestLiveTUIStates: the sub-state of a live TUI from its transcript.
func TestLiveTUIStates(t *testing.T) {
	toolCall := line("05", "assistant", `,"provenance":"assistant_output","model":"m","message":{"role":"model","parts":[{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"rm -rf build"}}}]}`)
	for _, tc := range []struct {
		name    string
		lines   []string
		now     time.Time
		status  string
		blocked string
	}{
		{"no transcript yet", nil, now, discover.StatusIdle, ""},
		{"answered", []string{prompt("00", "go"), reply("01", "ok", 1, 1, 0, 0)}, now, discover.StatusIdle, ""},
		{"prompt in flight", []string{prompt("00", "go")}, tsPtr("2026-12-01T10:00:05Z").UTC(), discover.StatusRunning, ""},
		{"tool call just made", []string{prompt("00", "go"), toolCall}, tsPtr("2026-12-01T10:00:05.5Z").UTC(), discover.StatusRunning, ""},
		// No process started to run it: the approval dialog (the real TUI:
		// e2e TestQwenTUIWaiting).
		{"tool call unanswered", []string{prompt("00", "go"), toolCall}, tsPtr("2026-12-01T10:00:10Z").UTC(), discover.StatusWaiting, ""},
		{"tool call unanswered long", []string{prompt("00", "go"), toolCall}, tsPtr("2026-12-01T10:05:00Z").UTC(), discover.StatusWaiting, ""},
		{"retrying a 429", []string{prompt("00", "go"), apiError("02", 429, "429 Too Many Requests", "")}, now, discover.StatusRunning, ""},
		{"gave up on quota", []string{prompt("00", "go"), apiError("02", 429, "429 You exceeded your current quota. Your quota will reset at 2030-01-01.", "")}, now, discover.StatusIdle, discover.BlockedQuota},
		{"key refused", []string{prompt("00", "go"), apiError("02", 401, "401 Incorrect API key provided", "")}, now, discover.StatusIdle, discover.BlockedAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := testEnv(t, registryHome(t, tc.lines...), live500(), nil)
			at := tc.now
			env.Now = func() time.Time { return at }
			got := discoverAll(t, New(), env)
			s, ok := got[sid]
			if !ok {
				t.Fatalf("session missing: %v", got)
			}
			if s.Status != tc.status || s.BlockedReason != tc.blocked || s.PID != 500 || s.Evidence != discover.EvidenceRegistry {
				t.Errorf("status %s blocked %q pid %d evidence %s (%s); want %s %q", s.Status, s.BlockedReason, s.PID, s.Evidence, s.EvidenceDetail, tc.status, tc.blocked)
			}
		})
	}
}

// A TUI running an approved shell command has a child process started since
// the tool call: running however long the command takes; an older child (an
// MCP server it started with) is not that.
func TestLiveTUIToolProcess(t *testing.T) {
	toolCall := line("05", "assistant", `,"provenance":"assistant_output","model":"m","message":{"role":"model","parts":[{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"sleep 600"}}}]}`)
	call := tsPtr("2026-12-01T10:00:05Z").UTC()
	for _, tc := range []struct {
		name   string
		child  time.Time
		status string
	}{
		{"shell started since", call.Add(300 * time.Millisecond), discover.StatusRunning},
		{"only an older child", call.Add(-10 * time.Second), discover.StatusWaiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := live500()
			tbl.Procs = append(tbl.Procs, proc.Process{PID: 501, PPID: 500, Comm: "bash", StartTicks: 50})
			tbl.Starts = map[int]time.Time{500: call.Add(-time.Minute), 501: tc.child}
			env, _ := testEnv(t, registryHome(t, prompt("00", "go"), toolCall), tbl, nil)
			env.Now = func() time.Time { return call.Add(5 * time.Minute) }
			if s := discoverAll(t, New(), env)[sid]; s.Status != tc.status {
				t.Errorf("status %s (%s), want %s", s.Status, s.EvidenceDetail, tc.status)
			}
		})
	}
}

// headless is a table with one headless qwen in cwd, started at start, with
// the given CLI arguments, as seen running 0.24.4: the bin wrapper (700), its
// node --expose-gc …/cli.js child (701), and that one's relaunch of itself
// (702, QWEN_CODE_NO_RELAUNCH=true), which does the work.
func headless(cwd string, start time.Time, args ...string) (*proc.Fake, func(proc.Process) (time.Time, bool)) {
	f := &proc.Fake{
		Boot:  "b",
		Procs: []proc.Process{{PID: 700, Comm: "node", StartTicks: 1}, {PID: 701, PPID: 700, Comm: "node", StartTicks: 2}, {PID: 702, PPID: 701, Comm: "node", StartTicks: 3}},
		Args: map[int][]string{
			700: append([]string{"node", "/usr/lib/node_modules/.bin/qwen"}, args...),
			701: append([]string{"/usr/bin/node", "--expose-gc", "/usr/lib/node_modules/@qwen-code/qwen-code/cli.js"}, args...),
			702: append([]string{"/usr/bin/node", "--expose-gc", "/usr/lib/node_modules/@qwen-code/qwen-code/cli.js"}, args...),
		},
		Cwds: map[int]string{700: cwd, 701: cwd, 702: cwd},
	}
	return f, func(proc.Process) (time.Time, bool) { return start, true }
}

// TestHeadlessProcess: a headless run has no registry record; its node child
// is tied to the one session of its cwd it started or appended to (inferred),
// or to the session its argv names; a run in another cwd ties to nothing.
func TestHeadlessProcess(t *testing.T) {
	home := t.TempDir()
	writeChat(t, home, "/w", sid, prompt("00", "go"), apiResponse("01", "r1", 10, 1, 0, 0, ""), reply("02", "ok", 10, 1, 0, 0))
	// An older, finished session of the same cwd that no process may take.
	older := strings.Replace(sid, "0b7f", "2b7f", 1)
	old := func(l string) string { return strings.ReplaceAll(strings.ReplaceAll(l, sid, older), "T10:", "T09:") }
	writeChat(t, home, "/w", older, old(prompt("00", "earlier")), old(reply("05", "ok", 1, 1, 0, 0)))
	start := tsPtr("2026-12-01T09:59:59Z").UTC()
	for _, tc := range []struct {
		name     string
		cwd      string
		args     []string
		status   string
		evidence string
		inferred bool
	}{
		{"new session in its cwd", "/w", []string{"go", "--auth-type", "openai"}, discover.StatusRunning, discover.EvidenceProcess, true},
		{"resume by argv", "/elsewhere", []string{"more", "--resume", sid}, discover.StatusRunning, discover.EvidenceArgv, false},
		{"other cwd", "/other", []string{"go"}, discover.StatusStopped, discover.EvidenceTranscript, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			procs, st := headless(tc.cwd, start, tc.args...)
			env, _ := testEnv(t, home, procs, nil)
			got := discoverAll(t, &Adapter{StartTime: st}, env)
			if o := got[older]; o.Status != discover.StatusStopped || o.PID != 0 {
				t.Errorf("older session: status %s pid %d (%s), want stopped", o.Status, o.PID, o.EvidenceDetail)
			}
			s := got[sid]
			if s.Status != tc.status || s.Evidence != tc.evidence || s.Inferred != tc.inferred {
				t.Errorf("status %s evidence %s inferred %v (%s); want %s %s %v", s.Status, s.Evidence, s.Inferred, s.EvidenceDetail, tc.status, tc.evidence, tc.inferred)
			}
			if discover.Alive(s.Status) && s.PID != 702 {
				t.Errorf("pid %d, want the innermost cli.js 702", s.PID)
			}
		})
	}
}

// TestHeadlessAmbiguous: one process that could own two sessions owns none:
// both are unknown, never guessed.
func TestHeadlessAmbiguous(t *testing.T) {
	home := t.TempDir()
	writeChat(t, home, "/w", sid, prompt("00", "go"))
	other := strings.Replace(sid, "0b7f", "1b7f", 1)
	p := writeChat(t, home, "/w", other, strings.ReplaceAll(prompt("01", "too"), sid, other))
	_ = p
	procs, st := headless("/w", tsPtr("2026-12-01T09:59:59Z").UTC(), "go")
	env, _ := testEnv(t, home, procs, nil)
	got := discoverAll(t, &Adapter{StartTime: st}, env)
	for _, id := range []string{sid, other} {
		if s := got[id]; s.Status != discover.StatusUnknown || s.PID != 0 {
			t.Errorf("%s: status %s pid %d, want unknown", id, s.Status, s.PID)
		}
	}
}

// TestFindAgreesWithDiscover: Find returns exactly what Discover lists for the
// ids it names, with and without a qwen process to attribute.
func TestFindAgreesWithDiscover(t *testing.T) {
	procs, st := headless("/home/dev/webapp", tsPtr("2026-12-01T22:29:14Z").UTC(), "x")
	for name, table := range map[string]*proc.Fake{"no qwen process": nil, "a headless qwen": procs, "live TUI": tuiAlive(339157, tuiBoot)} {
		t.Run(name, func(t *testing.T) {
			var pt proc.Table
			if table != nil {
				pt = table
			}
			env, _ := testEnv(t, fixtureHome, pt, nil)
			a := &Adapter{StartTime: st}
			all := discoverAll(t, a, env)
			for _, q := range []discover.Query{{Prefix: "29bc"}, {IDs: []string{tuiID}}, {Prefix: "fff7093d-92a4-4ecc-b807-1ad198a1a91e"}, {Prefix: "nope"}} {
				got, err := a.Find(context.Background(), env, q)
				if err != nil {
					t.Fatal(err)
				}
				var want []discover.Session
				for _, s := range all {
					if q.Match(s.ID) {
						want = append(want, s)
					}
				}
				if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
					t.Errorf("Find(%+v) (-discover +find):\n%s", q, d)
				}
			}
		})
	}
}

// TestQwenHomeOverride: $QWEN_HOME replaces ~/.qwen, and $QWEN_RUNTIME_DIR
// relocates projects/ (the registry stays in the global dir).
func TestQwenHomeOverride(t *testing.T) {
	abs, _ := filepath.Abs(filepath.Join(fixtureHome, ".qwen"))
	env, _ := testEnv(t, t.TempDir(), nil, map[string]string{EnvHome: abs})
	if got := discoverAll(t, New(), env); len(got) != 5 {
		t.Errorf("QWEN_HOME: %d sessions, want 5", len(got))
	}
	rt := t.TempDir()
	discovertest.CopyTree(t, filepath.Join(abs, "projects"), filepath.Join(rt, "projects"))
	home := t.TempDir()
	env, _ = testEnv(t, home, nil, map[string]string{EnvRuntimeDir: rt})
	if got := discoverAll(t, New(), env); len(got) != 5 {
		t.Errorf("QWEN_RUNTIME_DIR: %d sessions, want 5", len(got))
	}
}

// TestMisnamedCopySkipped: a transcript saved under another session's name is
// not listed (with a warning), so Find by name and Discover agree.
func TestMisnamedCopySkipped(t *testing.T) {
	home := t.TempDir()
	writeChat(t, home, "/w", sid, prompt("00", "go"))
	other := strings.Replace(sid, "0b7f", "3b7f", 1)
	writeChat(t, home, "/w", other, prompt("00", "go")) // records say sid
	env, warns := testEnv(t, home, nil, nil)
	got := discoverAll(t, New(), env)
	if _, ok := got[other]; ok || len(got) != 1 {
		t.Errorf("sessions %v, want only %s", got, sid)
	}
	if len(*warns) != 1 || !strings.Contains((*warns)[0], other) {
		t.Errorf("warnings %q", *warns)
	}
	found, err := New().Find(context.Background(), env, discover.Query{Prefix: "3b7f"})
	if err != nil || len(found) != 0 {
		t.Errorf("Find: %v %v, want nothing", found, err)
	}
}

// TestExplain: --explain names the killed TUI's leftover registry record as
// what its status rests on, and says no process names it.
func TestExplain(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil, nil)
	a := New()
	s := discoverAll(t, a, env)[tuiID]
	var _ discover.Explainer = a
	sigs := a.Explain(context.Background(), env, s)
	if len(sigs) != 3 || sigs[0].Source != "registry" || !sigs[0].Found || !sigs[0].Decides || sigs[0].Evidence != discover.EvidenceStaleRegistry ||
		!strings.Contains(sigs[0].Says, "22735.json") || sigs[1].Found || sigs[2].Found {
		t.Errorf("signals: %+v", sigs)
	}
}

// TestOnlyAlive: with nothing of Qwen's running, an alive-only listing reads
// only the sessions agentctl launched; with a qwen process it lists as usual.
func TestOnlyAlive(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil, nil)
	env.OnlyAlive = true
	if got := discoverAll(t, New(), env); len(got) != 0 {
		t.Errorf("nothing alive: %d sessions, want 0", len(got))
	}
	env.Launches = []meta.Launch{{Adapter: Name, SessionID: tuiID}}
	if got := discoverAll(t, New(), env); len(got) != 1 || got[tuiID].ID != tuiID {
		t.Errorf("a launched session: %v, want only %s", got, tuiID)
	}
	env, _ = testEnv(t, fixtureHome, tuiAlive(339157, tuiBoot), nil)
	env.OnlyAlive = true
	if s := discoverAll(t, New(), env)[tuiID]; s.Status != discover.StatusIdle {
		t.Errorf("live TUI: %s, want idle", s.Status)
	}
}
