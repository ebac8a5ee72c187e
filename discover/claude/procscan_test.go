package claude

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

func TestParseArgs(t *testing.T) {
	const id, id2 = "63a9dd20-452d-46cb-844e-bd4800ad2458", "0b0b0b0b-1111-4222-8333-444455556666"
	tests := []struct {
		argv []string
		want args
	}{
		{[]string{"-p", "--resume", id, "--output-format", "stream-json"}, args{Print: true, Names: id}},
		{[]string{"--resume=" + id}, args{Names: id}},
		{[]string{"-r", id}, args{Names: id}},
		{[]string{"--resume"}, args{}}, // the picker
		{[]string{"--resume", "fix the bug"}, args{}},
		{[]string{"--session-id", id2, "-p", "hi"}, args{Print: true, Names: id2}},
		{[]string{"--resume", id, "--fork-session", "-p", "x"}, args{Print: true}},
		{[]string{"--resume", id, "--fork-session", "--session-id", id2, "-p", "x"}, args{Print: true, Names: id2}},
		{[]string{"-p", "--input-format", "stream-json", "--resume", id}, args{Names: id}},
		{[]string{"mcp", "serve"}, args{Subcommand: true}},
		{[]string{"--version"}, args{Subcommand: true}},
		{[]string{"-c", "-p", "continued"}, args{Print: true}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, parseArgs(tt.argv), cmp.AllowUnexported(args{})); diff != "" {
			t.Errorf("parseArgs(%q) (-want +got):\n%s", tt.argv, diff)
		}
	}
}

func TestFindClaudeProcs(t *testing.T) {
	fake := &proc.Fake{
		Procs: []proc.Process{
			{PID: 10, Comm: "claude", StartTicks: 1},
			{PID: 11, PPID: 10, Comm: "claude", StartTicks: 2}, // child of a candidate
			{PID: 12, Comm: "2.1.197", StartTicks: 3},          // native install: comm is the version
			{PID: 13, Comm: "node", StartTicks: 4},
			{PID: 14, Comm: "claude", StartTicks: 5}, // claude mcp serve
			{PID: 15, Comm: "bash", StartTicks: 6},
			{PID: 16, Comm: "1.2.3", StartTicks: 7}, // a version-named process that is not claude
		},
		Args: map[int][]string{
			10: {"claude"}, 11: {"claude"}, 12: {"/home/u/.local/share/claude/versions/2.1.197", "-p", "x"},
			13: {"node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js", "--resume", idWebapp},
			14: {"claude", "mcp", "serve"}, 15: {"bash"}, 16: {"x"},
		},
		Exes: map[int]string{12: "/home/u/.local/share/claude/versions/2.1.197", 16: "/usr/bin/other"},
		Cwds: map[int]string{10: "/a", 12: "/b", 13: "/c"},
	}
	got := findClaudeProcs(fake, func(p proc.Process) (int64, bool) { return int64(p.StartTicks), true })
	want := []claudeProc{
		{PID: 10, Cwd: "/a", StartMs: 1, HasStart: true},
		{PID: 12, Cwd: "/b", StartMs: 3, HasStart: true, Flags: args{Print: true}},
		{PID: 13, Cwd: "/c", StartMs: 4, HasStart: true, Flags: args{Names: idWebapp}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(args{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestArgvEvidence: a live claude whose argv resumes a session makes it live.
func TestArgvEvidence(t *testing.T) {
	env := newEnv(t, copyHome(t), &proc.Fake{
		Procs: []proc.Process{{PID: 4242, Comm: "claude", StartTicks: 1}},
		Args:  map[int][]string{4242: {"claude", "-p", "--resume", idWebapp}},
		Cwds:  map[int]string{4242: "/home/dev/webapp"},
	})
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	want := map[string]liveness{
		idWebapp: {discover.StatusRunning, discover.EvidenceArgv, "pid 4242 argv names the session", false, 4242},
		idFork:   {discover.StatusStopped, discover.EvidenceTranscript, "", false, 0},
	}
	for id, w := range want {
		if diff := cmp.Diff(w, livenessOf(got[id])); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id[:8], diff)
		}
	}
}

// TestProcessScan: a claude in a cwd with no proof is matched to the sessions of
// that cwd active since it started; inferred, and ambiguous when several are.
func TestProcessScan(t *testing.T) {
	tests := []struct {
		name  string
		start int64 // process start, epoch ms
		want  map[string]liveness
	}{
		{"one candidate", 1795211082000, map[string]liveness{ // 21:44:42: only the fork was active since
			idFork:   {discover.StatusIdle, discover.EvidenceProcess, "pid 5150, cwd /home/dev/webapp", true, 5150},
			idWebapp: {discover.StatusStopped, discover.EvidenceTranscript, "", false, 0},
		}},
		{"ambiguous", 1795211075000, map[string]liveness{ // 21:44:35: both were
			idFork:   {discover.StatusIdle, discover.EvidenceProcess, "pid 5150, cwd /home/dev/webapp (ambiguous: 2 sessions there)", true, 5150},
			idWebapp: {discover.StatusUnknown, discover.EvidenceProcess, "ambiguous: pid 5150 in /home/dev/webapp may host this session or " + idFork, true, 0},
		}},
		{"started after every session", 1795211200000, map[string]liveness{
			idFork:   {discover.StatusStopped, discover.EvidenceTranscript, "", false, 0},
			idWebapp: {discover.StatusStopped, discover.EvidenceTranscript, "", false, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, copyHome(t), &proc.Fake{
				Procs: []proc.Process{{PID: 5150, Comm: "claude", StartTicks: tickAt(tt.start)}},
				Args:  map[int][]string{5150: {"claude"}},
				Cwds:  map[int]string{5150: "/home/dev/webapp"},
			})
			got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
			for id, w := range tt.want {
				if diff := cmp.Diff(w, livenessOf(got[id])); diff != "" {
					t.Errorf("%s (-want +got):\n%s", id[:8], diff)
				}
			}
		})
	}
}

// TestManySessionsOneCwd: with several transcripts in one cwd and one verified
// registry process there, only its session runs; the process never makes another
// session of that cwd live.
func TestManySessionsOneCwd(t *testing.T) {
	home := copyHome(t)
	// 21:44:30: both webapp sessions were active after the process started, but
	// the fork is a -p session, so the TUI cannot have /clear'ed away from it.
	const startedAt = 1795211070000
	writeRegistry(t, home, 5000, `{"pid":5000,"sessionId":"`+idWebapp+`","cwd":"/home/dev/webapp","startedAt":`+fmtInt(startedAt)+`,"procStart":"`+fmtInt(int64(tickAt(startedAt)))+`","version":"2.1.197","kind":"interactive","entrypoint":"cli","status":"busy"}`)
	// The fork was written a moment ago: still not running without a process.
	fork := filepath.Join(home, ".claude/projects/-home-dev-webapp", idFork+".jsonl")
	if err := os.Chtimes(fork, fixtureNow.Add(-time.Second), fixtureNow.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, home, &proc.Fake{
		Procs: []proc.Process{{PID: 5000, Comm: "claude", StartTicks: tickAt(startedAt)}},
		Args:  map[int][]string{5000: {"claude"}},
		Cwds:  map[int]string{5000: "/home/dev/webapp"},
	})
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	running := 0
	for _, s := range got {
		if s.Status == discover.StatusRunning {
			running++
		}
	}
	if running != 1 {
		t.Errorf("%d sessions running, want 1", running)
	}
	want := map[string]liveness{
		idWebapp: {discover.StatusRunning, discover.EvidenceRegistry, "sessions/5000.json procStart=" + fmtInt(int64(tickAt(startedAt))) + " matches", false, 5000},
		idFork:   {discover.StatusStopped, discover.EvidenceTranscript, "", false, 0},
	}
	for id, w := range want {
		if diff := cmp.Diff(w, livenessOf(got[id])); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id[:8], diff)
		}
	}
}

// TestArgvOnlySession: the moment after `claude --session-id X` starts, before
// its registry entry or transcript exists, the live process is the session: a
// TUI idle with no prompt yet, a -p run running, found by id and listed. A
// claude of another config root (its environment) names nothing here.
func TestArgvOnlySession(t *testing.T) {
	const fresh = "0d5c4a52-6f3e-4b7a-9c1d-2e8f7a6b5c4d"
	home := copyHome(t)
	for _, tc := range []struct {
		name string
		argv []string
		env  []string
		want *liveness
	}{
		{"TUI", []string{"claude", "--session-id", fresh}, []string{"HOME=" + home},
			&liveness{discover.StatusIdle, discover.EvidenceArgv, "pid 777 argv names the session; no prompt yet", false, 777}},
		{"-p", []string{"claude", "-p", "--session-id", fresh, "hi"}, []string{"HOME=/elsewhere", "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude")},
			&liveness{discover.StatusRunning, discover.EvidenceArgv, "pid 777 argv names the session", false, 777}},
		{"other root", []string{"claude", "--session-id", fresh}, []string{"HOME=/elsewhere"}, nil},
		{"environment unreadable", []string{"claude", "--session-id", fresh}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &proc.Fake{
				Procs: []proc.Process{{PID: 777, Comm: "claude", StartTicks: tickAt(1795211200000)}},
				Args:  map[int][]string{777: tc.argv},
				Cwds:  map[int]string{777: "/home/dev/new"},
				Envs:  map[int][]string{},
			}
			if tc.env != nil {
				fake.Envs[777] = tc.env
			}
			env := newEnv(t, home, fake)
			found, err := testAdapter().Find(t.Context(), env.Env, discover.Query{IDs: []string{fresh}})
			if err != nil {
				t.Fatal(err)
			}
			_, listed := discovertest.DiscoverAll(t, testAdapter(), env.Env)[fresh]
			if tc.want == nil {
				if len(found) != 0 || listed {
					t.Fatalf("found %d, listed %v: want nothing", len(found), listed)
				}
				return
			}
			if len(found) != 1 || !listed {
				t.Fatalf("found %d, listed %v: want the session", len(found), listed)
			}
			if diff := cmp.Diff(*tc.want, livenessOf(found[0])); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if found[0].Cwd != "/home/dev/new" || found[0].StartedAt == nil || !found[0].StartedAt.Equal(time.UnixMilli(1795211200000)) {
				t.Errorf("cwd %q, started %v", found[0].Cwd, found[0].StartedAt)
			}
		})
	}
}
