package gemini

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

const (
	webapp = "/home/dev/webapp"
	idE    = "999d3fa3-181d-4a9e-ba28-f8186303f5b8" // last in webapp by start, answered at 22:26:04
	idB    = "2c5c07cf-074c-4de6-80ef-3dce625272da" // last written in webapp (22:26:58)
)

// geminiTree is Gemini CLI as 0.61 runs: `node …/bin/gemini` and its
// relaunched child `node --max-old-space-size=N …/bin/gemini`, both in cwd.
func geminiTree(parent, child int, cwd string, start time.Time, env []string) *proc.Fake {
	return &proc.Fake{
		Boot: "boot-1",
		Procs: []proc.Process{
			{PID: 1, Comm: "bash"},
			{PID: parent, PPID: 1, Comm: "node", StartTicks: 100},
			{PID: child, PPID: parent, Comm: "node", StartTicks: 101},
		},
		Args: map[int][]string{
			parent: {"node", "/usr/lib/node_modules/@google/gemini-cli/bin/gemini", "--resume", "latest"},
			child:  {"/usr/bin/node", "--max-old-space-size=4096", "/usr/lib/node_modules/@google/gemini-cli/bin/gemini", "--resume", "latest"},
		},
		Cwds:   map[int]string{parent: cwd, child: cwd},
		Starts: map[int]time.Time{parent: start, child: start.Add(300 * time.Millisecond)},
		Envs:   map[int][]string{parent: env, child: env},
	}
}

// A gemini process in the project root that wrote a session since it started
// makes it alive (inferred); the other sessions of the project stay stopped.
func TestLiveProcessInferred(t *testing.T) {
	home, err := filepath.Abs(fixtureHome)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := testEnv(t, home, nil)
	// Started before B2's resume (22:26:58), after everything else was written.
	env.Procs = geminiTree(500, 501, webapp, time.Date(2026, 12, 1, 22, 26, 57, 0, time.UTC), []string{"HOME=" + home})
	got := discoverAll(t, env)
	s := got[idB]
	if s.Status != discover.StatusIdle || s.Evidence != discover.EvidenceProcess || !s.Inferred || s.PID != 501 {
		t.Errorf("B: status %s evidence %s inferred %v pid %d, want idle process inferred 501 (the relaunched child)",
			s.Status, s.Evidence, s.Inferred, s.PID)
	}
	if !strings.Contains(s.EvidenceDetail, "no registry") {
		t.Errorf("detail %q does not say the status is inferred", s.EvidenceDetail)
	}
	for _, id := range []string{idE, "6d0b6f17-1e24-4526-8c25-82661f8c77ea"} {
		if got[id].Status != discover.StatusStopped {
			t.Errorf("%s: status %s, want stopped (written before the process started)", id, got[id].Status)
		}
	}
	// Find agrees with Discover while a process is alive.
	found, err := New().Find(context.Background(), env, discover.Query{Prefix: "2c5c"})
	if err != nil || len(found) != 1 || found[0].Status != s.Status || found[0].PID != s.PID {
		t.Errorf("Find = %+v, %v", found, err)
	}
}

// A process mid-turn (the last prompt has no reply yet) is running.
func TestLiveMidTurnRunning(t *testing.T) {
	home := t.TempDir()
	writeSession(t, home, "proj", root1, "session-2026-12-01T10-00-11111111.jsonl",
		header(id1, "2026-12-01T10:00:00.000Z"),
		setMessages("2026-12-01T10:00:00.001Z", ctxMsg),
		userMsg("u1", "2026-12-01T10:00:01.000Z", "first"),
		lastUpdated("2026-12-01T10:00:01.000Z"),
	)
	env, _ := testEnv(t, home, nil)
	env.Procs = geminiTree(600, 601, root1, time.Date(2026, 12, 1, 9, 59, 59, 0, time.UTC), nil)
	if s := one(t, env, id1); s.Status != discover.StatusRunning || s.PID != 601 {
		t.Errorf("status %s pid %d, want running 601", s.Status, s.PID)
	}
	// Dead, the same file is a turn that never finished: failed.
	env.Procs = &proc.Fake{Boot: "boot-1"}
	if s := one(t, env, id1); s.Status != discover.StatusFailed || s.BlockedReason != "" {
		t.Errorf("status %s blocked %q, want failed, no reason", s.Status, s.BlockedReason)
	}
	// Without a process table an open turn is unknown, not a guess.
	env.Procs = &proc.Fake{NoProcs: true}
	if s := one(t, env, id1); s.Status != discover.StatusUnknown {
		t.Errorf("status %s, want unknown", s.Status)
	}
}

// Processes that are not sessions here: another home, another cwd, a
// subcommand, node running something else, agentctl's own launch.
func TestLiveNotOurs(t *testing.T) {
	start := time.Date(2026, 12, 1, 22, 26, 57, 0, time.UTC)
	cases := map[string]func(f *proc.Fake){
		"other home": func(f *proc.Fake) {
			f.Envs = map[int][]string{500: {"HOME=/elsewhere"}, 501: {"HOME=/elsewhere"}}
		},
		"other GEMINI_CLI_HOME": func(f *proc.Fake) {
			f.Envs = map[int][]string{500: {"HOME=/home/dev", EnvHome + "=/x"}, 501: {"HOME=/home/dev", EnvHome + "=/x"}}
		},
		"other cwd": func(f *proc.Fake) {
			f.Cwds = map[int]string{500: "/home/dev/billing2", 501: "/home/dev/billing2"}
		},
		"subcommand": func(f *proc.Fake) {
			f.Args[500] = []string{"node", "/usr/bin/gemini", "mcp", "list"}
			f.Args[501] = []string{"node", "/usr/bin/gemini", "--list-sessions"}
		},
		"another node program": func(f *proc.Fake) {
			f.Args[500] = []string{"node", "/srv/app/server.js", "gemini"}
			f.Args[501] = []string{"node", "/srv/app/server.js", "gemini"}
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			env, _ := testEnv(t, fixtureHome, nil)
			f := geminiTree(500, 501, webapp, start, nil)
			mod(f)
			env.Procs = f
			if s := discoverAll(t, env)[idB]; s.Status != discover.StatusStopped {
				t.Errorf("status %s (%s), want stopped", s.Status, s.EvidenceDetail)
			}
		})
	}
	t.Run("agentctl launch", func(t *testing.T) {
		env, _ := testEnv(t, fixtureHome, nil)
		env.Procs = geminiTree(500, 501, webapp, start, []string{"HOME=" + fixtureHome})
		env.Launches = []meta.Launch{{Adapter: Name, SessionID: idB, PID: 500, StartTicks: 100, BootID: "boot-1"}}
		// The core reports the launched session from its record; the adapter
		// neither claims its process for another session nor infers it.
		for id, s := range discoverAll(t, env) {
			if s.Evidence == discover.EvidenceProcess {
				t.Errorf("%s: inferred from process %d despite the launch record", id, s.PID)
			}
		}
	})
}

// Two gemini processes in one project that could both own the newest session:
// unknown, never a guess.
func TestLiveAmbiguous(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	start := time.Date(2026, 12, 1, 22, 26, 57, 0, time.UTC)
	f := geminiTree(500, 501, webapp, start, nil)
	f.Procs = append(f.Procs, proc.Process{PID: 700, PPID: 1, Comm: "node", StartTicks: 200})
	f.Args[700] = []string{"node", "/usr/local/bin/gemini"}
	f.Cwds[700] = webapp
	f.Starts[700] = start
	env.Procs = f
	s := discoverAll(t, env)[idB]
	if s.Status != discover.StatusUnknown || s.PID != 0 || !strings.Contains(s.EvidenceDetail, "501, 700") {
		t.Errorf("status %s pid %d detail %q, want unknown naming both", s.Status, s.PID, s.EvidenceDetail)
	}
}

// Gemini records a tool call only once it completes: a reply that is still an
// empty gemini message is a tool running or awaiting approval, not an answer.
// Alive, it is waiting (inferred) once the call is approvalGrace old and no
// process of the CLI's has started since to run it (the real TUI at its
// "Allow execution" dialog: e2e TestGeminiTUIWaiting); a shell command
// started since, or a call just asked for, is running.
func TestToolCallInFlight(t *testing.T) {
	home := t.TempDir()
	writeSession(t, home, "proj", root1, "session-2026-12-01T10-00-11111111.jsonl",
		header(id1, "2026-12-01T10:00:00.000Z"),
		userMsg("u1", "2026-12-01T10:00:01.000Z", "run it"),
		geminiMsg("g1", "2026-12-01T10:00:02.000Z", "", tok1, "m"),
		lastUpdated("2026-12-01T10:00:02.000Z"),
	)
	asked := time.Date(2026, 12, 1, 10, 0, 2, 0, time.UTC)
	env, _ := testEnv(t, home, nil)
	tree := geminiTree(600, 601, root1, time.Date(2026, 12, 1, 9, 59, 59, 0, time.UTC), nil)
	// An MCP server the CLI started with is older than the call: no tool run.
	tree.Procs = append(tree.Procs, proc.Process{PID: 700, PPID: 601, Comm: "python3", StartTicks: 102})
	tree.Starts[700] = asked.Add(-3 * time.Second)
	env.Procs = tree
	if s := one(t, env, id1); s.Status != discover.StatusWaiting || !s.Inferred || !strings.Contains(s.EvidenceDetail, "approval") {
		t.Errorf("alive, no tool process: %s inferred=%v (%s), want waiting, inferred", s.Status, s.Inferred, s.EvidenceDetail)
	}
	// The file does not change while the dialog is up: the next listings read
	// it from the parse index, which must keep when the call was asked for.
	env.StateDir = t.TempDir()
	for _, run := range []string{"cold index", "warm index"} {
		if s := one(t, env, id1); s.Status != discover.StatusWaiting {
			t.Errorf("%s, alive, no tool process: %s (%s), want waiting", run, s.Status, s.EvidenceDetail)
		}
	}
	env.StateDir = ""
	env.Now = func() time.Time { return asked.Add(500 * time.Millisecond) }
	if s := one(t, env, id1); s.Status != discover.StatusRunning {
		t.Errorf("alive, asked half a second ago: status %s, want running", s.Status)
	}
	env.Now = func() time.Time { return now }
	tree.Procs = append(tree.Procs, proc.Process{PID: 701, PPID: 601, Comm: "bash", StartTicks: 103})
	tree.Starts[701] = asked.Add(500 * time.Millisecond)
	if s := one(t, env, id1); s.Status != discover.StatusRunning {
		t.Errorf("alive, a shell started since the call: status %s, want running", s.Status)
	}
	env.Procs = &proc.Fake{Boot: "boot-1"}
	if s := one(t, env, id1); s.Status != discover.StatusFailed {
		t.Errorf("dead: status %s, want failed (killed mid-tool)", s.Status)
	}
}

// An alive-only listing with no gemini process reads only the sessions
// agentctl's launch records name (the only ones that can be alive).
func TestOnlyAlive(t *testing.T) {
	env, _ := testEnv(t, fixtureHome, nil)
	env.OnlyAlive = true
	if got := discoverAll(t, env); len(got) != 0 {
		t.Errorf("nothing alive, no launches: got %d sessions", len(got))
	}
	env.Launches = []meta.Launch{{Adapter: Name, SessionID: idE, PID: 9999, StartTicks: 1, BootID: "boot-1"}}
	if got := discoverAll(t, env); len(got) != 1 || got[idE].ID != idE {
		t.Errorf("with a launch record: got %d sessions, want only %s", len(got), idE)
	}
	env.Launches = nil
	home, _ := filepath.Abs(fixtureHome)
	env.Home = home
	env.Procs = geminiTree(500, 501, webapp, time.Date(2026, 12, 1, 22, 26, 57, 0, time.UTC), []string{"HOME=" + home})
	if got := discoverAll(t, env); got[idB].Status != discover.StatusIdle {
		t.Errorf("with a gemini process: %s is %s, want idle", idB, got[idB].Status)
	}
}
