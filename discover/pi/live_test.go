package pi

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

const (
	liveID   = "01a1faf5-0000-7000-8000-00000000a11e"
	liveCwd  = "/home/dev/api-server"
	liveHead = "2026-11-20T21:55:00.300Z"
)

// liveHome is the fixture store plus one session whose turn is open (a tool call
// without its result yet), header at 21:55:00.300.
func liveHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	discovertest.CopyTree(t, fixtureHome, home)
	discovertest.WriteLines(t, filepath.Join(home, ".pi/agent/sessions/--home-dev-api-server--/2026-11-20T21-55-00-300Z_"+liveID+".jsonl"),
		hdr(liveID, liveHead, liveCwd),
		modelChange("b0000001", "", "2026-11-20T21:55:00.310Z", "fakeoai", "fake-model"),
		userMsg("b0000002", "b0000001", "2026-11-20T21:55:00.330Z", textBlocks("TOOL long job")),
		`{"type":"message","id":"b0000003","parentId":"b0000002","timestamp":"2026-11-20T21:55:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"sleep 600"}}],"provider":"fakeoai","model":"fake-model","usage":{"input":123,"output":45,"cacheRead":0,"cacheWrite":0,"totalTokens":168,"cost":{"total":0.000213}},"stopReason":"toolUse","timestamp":1795212900400}}`,
	)
	return home
}

// piProc is a pi 0.73.1 process as /proc shows it: comm "pi", cmdline "pi" plus
// NULs (so argv ["pi"]), exe node. StartTicks are Unix ms here (see msStart).
func piProc(f *proc.Fake, pid int, start string, cwd string) {
	f.Procs = append(f.Procs, proc.Process{PID: pid, PPID: 1, PGID: pid, SID: pid, Comm: "pi", StartTicks: uint64(msOf(start))})
	if f.Args == nil {
		f.Args, f.Cwds, f.Exes, f.Envs = map[int][]string{}, map[int]string{}, map[int]string{}, map[int][]string{}
	}
	f.Args[pid] = []string{"pi"}
	f.Cwds[pid] = cwd
	f.Exes[pid] = "/usr/bin/node"
}

func liveEnv(t *testing.T, home string) (*discover.Env, *proc.Fake) {
	env, _ := testEnv(t, home, nil)
	f := &proc.Fake{Boot: "boot-1"}
	env.Procs = f
	return env, f
}

// TestLiveProcessByCwdAndStart: one pi in the cwd, started 0.3 s before the header
// → that session is running on inferred process evidence; the fixture's older
// sessions in the same cwd are not (pitfall 11: never by cwd alone).
func TestLiveProcessByCwdAndStart(t *testing.T) {
	home := liveHome(t)
	env, f := liveEnv(t, home)
	piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
	got := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)

	s := got[liveID]
	if s.Status != discover.StatusRunning || s.Evidence != discover.EvidenceProcess || !s.Inferred || s.PID != 4242 {
		t.Errorf("live session = %s/%s inferred=%v pid=%d (%s), want running/process inferred pid 4242", s.Status, s.Evidence, s.Inferred, s.PID, s.EvidenceDetail)
	}
	if !strings.Contains(s.EvidenceDetail, "pi process 4242") || s.EndedAt != nil {
		t.Errorf("detail %q, ended %v", s.EvidenceDetail, s.EndedAt)
	}
	for id, want := range map[string]string{
		"01a1faea-41e2-70ee-8a46-eefd8057a11e": "stopped",
		"01a1faea-589b-73ae-a8a8-6fa4991c7bc7": "stopped",
		"01a1faea-b485-714f-9f73-af5206c9d06d": "stopped",
		"01a1faf0-7eef-715d-8e3d-80e07b008804": "failed",
	} {
		if s := got[id]; s.Status != want || s.Evidence != discover.EvidenceTranscript || s.PID != 0 {
			t.Errorf("%s = %s/%s pid %d, want %s/transcript", id[:13], s.Status, s.Evidence, s.PID, want)
		}
	}
}

// TestTwoCandidatesUnknown: two pi processes in the same cwd, both started within
// 10 s before the header → the file could be either's: unknown, not a guess.
func TestTwoCandidatesUnknown(t *testing.T) {
	home := liveHome(t)
	env, f := liveEnv(t, home)
	piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
	piProc(f, 4343, "2026-11-20T21:55:00.100Z", liveCwd)
	got := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)
	s := got[liveID]
	if s.Status != discover.StatusUnknown || s.Evidence != discover.EvidenceProcess || !s.Inferred || s.PID != 0 {
		t.Errorf("session = %s/%s inferred=%v pid=%d, want unknown/process inferred, no pid", s.Status, s.Evidence, s.Inferred, s.PID)
	}
	if s.EvidenceDetail != "2 pi processes could own this session (pids 4242, 4343)" {
		t.Errorf("detail = %q", s.EvidenceDetail)
	}
	if o := got["01a1faea-589b-73ae-a8a8-6fa4991c7bc7"]; o.Status != discover.StatusStopped {
		t.Errorf("old session = %s", o.Status)
	}
}

// One process whose start matches two files (a new one and a resumed one): both
// unknown.
func TestOneCandidateTwoFilesUnknown(t *testing.T) {
	home := liveHome(t)
	// Another new session in the same cwd, header 2 s after the process start.
	simple(t, filepath.Join(home, ".pi/agent/sessions/--home-dev-api-server--"), "01a1faf5-0000-7000-8000-00000000b0b0", "2026-11-20T21:55:02.000Z", liveCwd, "second")
	env, f := liveEnv(t, home)
	piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
	got := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)
	for _, id := range []string{liveID, "01a1faf5-0000-7000-8000-00000000b0b0"} {
		if s := got[id]; s.Status != discover.StatusUnknown || s.EvidenceDetail != "pi process 4242 could own 2 sessions in /home/dev/api-server" {
			t.Errorf("%s = %s %q", id, s.Status, s.EvidenceDetail)
		}
	}
}

// A resumed session: header older than the process, an entry written after it
// started. The last turn is finished, so the live session is idle.
func TestResumedSessionIdle(t *testing.T) {
	env, f := liveEnv(t, fixtureHome)
	// 589b's "SLOW resumed turn" user message is at 21:48:39.818.
	piProc(f, 777, "2026-11-20T21:48:39.500Z", liveCwd)
	got := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)
	s := got["01a1faea-589b-73ae-a8a8-6fa4991c7bc7"]
	if s.Status != discover.StatusIdle || s.Evidence != discover.EvidenceProcess || !s.Inferred || s.PID != 777 {
		t.Errorf("resumed = %s/%s inferred=%v pid=%d %q, want idle/process pid 777", s.Status, s.Evidence, s.Inferred, s.PID, s.EvidenceDetail)
	}
	if !strings.HasSuffix(s.EvidenceDetail, "last turn: done") || !strings.Contains(s.EvidenceDetail, "resumed") {
		t.Errorf("detail = %q", s.EvidenceDetail)
	}
	for id, sess := range got {
		if id != s.ID && discover.Alive(sess.Status) {
			t.Errorf("%s is %s", id, sess.Status)
		}
	}
}

// A process whose environment says it writes to another store cannot own files
// of this one, whatever its cwd and start time.
func TestCandidateEnvironOtherStore(t *testing.T) {
	home := liveHome(t)
	env, f := liveEnv(t, home)
	piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
	f.Envs[4242] = []string{"HOME=/somewhere/else", "PATH=/usr/bin"}
	if s := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)[liveID]; s.Status != discover.StatusFailed || s.EvidenceDetail != "interrupted" {
		t.Errorf("other HOME: %s %q, want failed interrupted", s.Status, s.EvidenceDetail)
	}
	f.Envs[4242] = []string{"HOME=/somewhere/else", "PI_CODING_AGENT_DIR=" + filepath.Join(home, ".pi/agent")}
	if s := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)[liveID]; s.Status != discover.StatusRunning {
		t.Errorf("PI_CODING_AGENT_DIR pointing here: %s, want running", s.Status)
	}
	f.Envs[4242] = []string{"HOME=" + home, "PI_CODING_AGENT_SESSION_DIR=/tmp/flat"}
	if s := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)[liveID]; s.Status == discover.StatusRunning {
		t.Errorf("PI_CODING_AGENT_SESSION_DIR elsewhere: %s, want not running", s.Status)
	}
}

// Not every process in the cwd is pi; and pi's short-lived startup shape (node
// running pi-coding-agent's cli.js) counts.
func TestCandidateShapes(t *testing.T) {
	for _, tt := range []struct {
		name string
		comm string
		argv []string
		exe  string
		want string
	}{
		{"title pi on node", "pi", []string{"pi"}, "/usr/bin/node", discover.StatusRunning},
		{"exe unreadable", "pi", []string{"pi"}, "", discover.StatusRunning},
		{"startup argv", "node", []string{"node", "/usr/lib/node_modules/@mariozechner/pi-coding-agent/dist/cli.js", "--mode", "json", "-p"}, "/usr/bin/node", discover.StatusRunning},
		// pi 1.6 (renamed package): the bin is dist/bundle/cli.js.
		{"startup argv 1.6", "node", []string{"node", "/usr/lib/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js", "--mode", "json", "-p"}, "/usr/bin/node", discover.StatusRunning},
		{"pi-rust binary", "pi-rust", []string{"/opt/pi-rust", "--mode", "json", "--print"}, "/opt/pi-rust", discover.StatusRunning},
		{"shell in the cwd", "bash", []string{"bash"}, "/usr/bin/bash", discover.StatusFailed},
		{"other node program", "node", []string{"node", "server.js"}, "/usr/bin/node", discover.StatusFailed},
		{"a pi named python", "pi", []string{"pi"}, "/usr/bin/python3", discover.StatusFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := liveHome(t)
			env, f := liveEnv(t, home)
			piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
			f.Procs[0].Comm = tt.comm
			f.Args[4242] = tt.argv
			if tt.exe == "" {
				delete(f.Exes, 4242)
			} else {
				f.Exes[4242] = tt.exe
			}
			if s := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)[liveID]; s.Status != tt.want {
				t.Errorf("status = %s (%s), want %s", s.Status, s.EvidenceDetail, tt.want)
			}
		})
	}
}

// Without a process table an open turn may be running: unknown, never a guess.
func TestNoProcessTable(t *testing.T) {
	env, _ := liveEnv(t, liveHome(t))
	env.Procs = &proc.Fake{NoProcs: true}
	got := discovertest.DiscoverAll(t, &Adapter{StartTime: msStart}, env)
	if s := got[liveID]; s.Status != discover.StatusUnknown || s.Evidence != discover.EvidenceNone {
		t.Errorf("open leaf = %s/%s, want unknown/none", s.Status, s.Evidence)
	}
	if s := got["01a1faea-b485-714f-9f73-af5206c9d06d"]; s.Status != discover.StatusStopped || s.EvidenceDetail != "done (no process table)" {
		t.Errorf("finished = %s %q", s.Status, s.EvidenceDetail)
	}
}

// A session agentctl launched and whose launch PID is alive is the core's to
// report (launch-record); its process is not a foreign candidate, so it neither
// becomes "process" evidence nor makes other files ambiguous.
func TestLiveLaunchRecordIsCoreEvidence(t *testing.T) {
	home := liveHome(t)
	env, f := liveEnv(t, home)
	piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
	l := launchRec("l-9", "pi", liveID, liveCwd, nil)
	l.PID, l.StartTicks, l.BootID = 4242, uint64(msOf("2026-11-20T21:55:00.000Z")), "boot-1"
	env.Launches = append(env.Launches, l)
	a := &Adapter{StartTime: msStart}
	if s := discovertest.DiscoverAll(t, a, env)[liveID]; s.Evidence == discover.EvidenceProcess {
		t.Errorf("adapter claimed process evidence for a launched session: %+v", s)
	}
	res := discover.All(context.Background(), env, []discover.Adapter{a}, 5*time.Second)
	for _, s := range res.Sessions {
		if s.ID == liveID && (s.Status != discover.StatusRunning || s.Evidence != discover.EvidenceLaunchRecord || s.PID != 4242) {
			t.Errorf("after the core: %s/%s pid %d", s.Status, s.Evidence, s.PID)
		}
	}
}
