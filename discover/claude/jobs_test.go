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

func writeJob(t *testing.T, home, id, state string, updated time.Time) {
	t.Helper()
	p := filepath.Join(home, ".claude", "jobs", id[:8], "state.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	body := `{"state":"` + state + `","detail":"stopped","tempo":"idle","sessionId":"` + id + `","daemonShort":"` + id[:8] +
		`","cwd":"/home/dev/cli-tool","createdAt":"2026-11-20T21:40:00.000Z","updatedAt":"` + updated.UTC().Format("2006-01-02T15:04:05.000Z") + `","backend":"daemon"}`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestJobRecordEndsBackgroundSession: a background session's transcript ends
// mid-turn and was written a second ago (Claude writes it while `claude stop`
// ends the process). Without the job record that is unknown; with a record
// saying stopped or done it is stopped on job-record evidence; a record still
// saying working changes nothing, and a record of another session is ignored.
func TestJobRecordEndsBackgroundSession(t *testing.T) {
	fresh := fixtureNow.Add(-time.Second)
	for _, tc := range []struct {
		name, state, sessionID string
		updated                time.Time
		want                   liveness
		kind                   string
	}{
		{"stopped", jobStopped, idTUI329, fresh, liveness{discover.StatusStopped, discover.EvidenceJobRecord,
			"jobs/d957d5fe/state.json: state stopped at 2026-11-20T21:59:59.000Z", false, 0}, KindBackground},
		{"done", jobDone, idTUI329, fresh, liveness{discover.StatusStopped, discover.EvidenceJobRecord,
			"jobs/d957d5fe/state.json: state done at 2026-11-20T21:59:59.000Z", false, 0}, KindBackground},
		{"working", jobWorking, idTUI329, fresh, liveness{discover.StatusUnknown, discover.EvidenceTranscript,
			"transcript ends mid-turn and was written 1s ago, but no live claude process was found", false, 0}, KindBackground},
		{"stopped long before the transcript", jobStopped, idTUI329, fresh.Add(-time.Hour), liveness{discover.StatusUnknown, discover.EvidenceTranscript,
			"transcript ends mid-turn and was written 1s ago, but no live claude process was found", false, 0}, KindBackground},
		{"another session's record", jobStopped, "d957d5fe-0000-4000-8000-000000000000", fresh, liveness{discover.StatusUnknown, discover.EvidenceTranscript,
			"transcript ends mid-turn and was written 1s ago, but no live claude process was found", false, 0}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := copyHome(t)
			tr := filepath.Join(home, ".claude/projects/-home-dev-cli-tool", idTUI329+".jsonl")
			if err := os.Chtimes(tr, fresh, fresh); err != nil {
				t.Fatal(err)
			}
			writeJob(t, home, tc.sessionID, tc.state, tc.updated)
			registryMoved(t, home, fresh) // the process removed its entry as it exited
			got := discovertest.DiscoverAll(t, testAdapter(), newEnv(t, home, &proc.Fake{}).Env)
			s := got[idTUI329]
			if diff := cmp.Diff(tc.want, livenessOf(s)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			wantJob := ""
			if tc.kind != "" {
				wantJob = "d957d5fe"
			}
			if s.Kind != tc.kind || s.JobID != wantJob {
				t.Errorf("kind %q job_id %q, want %q %q", s.Kind, s.JobID, tc.kind, wantJob)
			}
		})
	}
}

// TestBackgroundRegistryAndSpares: a live "bg" registry entry makes its
// session background with the entry's jobId; Claude's daemon, pty host and an
// unclaimed spare in the same cwd are never taken for a session (the spare
// would otherwise match the cwd of a session active after it started).
func TestBackgroundRegistryAndSpares(t *testing.T) {
	home := copyHome(t)
	const bgID = "0b0b0b0b-1111-4222-8333-444455556666"
	writeRegistry(t, home, 31337, `{"pid":31337,"sessionId":"`+bgID+`","cwd":"/home/dev/cli-tool","startedAt":1795211130000,"procStart":"32460","version":"2.1.329","kind":"bg","entrypoint":"cli","jobId":"0b0b0b0b","status":"waiting","waitingFor":"permission prompt"}`)
	fresh := fixtureNow.Add(-time.Second)
	for _, id := range []string{idTUI329, "ff38fc66-0e6f-49a9-bddf-965cd7d30d7f"} {
		if err := os.Chtimes(filepath.Join(home, ".claude/projects/-home-dev-cli-tool", id+".jsonl"), fresh, fresh); err != nil {
			t.Fatal(err)
		}
	}
	procs := &proc.Fake{
		Procs: []proc.Process{
			{PID: 31337, Comm: "claude", StartTicks: 32460},
			{PID: 500, Comm: "claude.exe", StartTicks: 100},
			{PID: 501, PPID: 500, Comm: "claude", StartTicks: 101},
			{PID: 502, PPID: 501, Comm: "claude", StartTicks: 102},
			{PID: 503, PPID: 500, Comm: "claude.exe", StartTicks: 103},
		},
		Args: map[int][]string{
			31337: {"claude", "bg-spare", "--bg-spare", "/tmp/cc-daemon-0/x/spare/a.claim.sock"},
			500:   {"/opt/claude/bin/claude.exe", "daemon", "run", "--origin", "transient"},
			501:   {"claude bg-pty-host", "--bg-pty-host", "/tmp/cc-daemon-0/x/spare/b.pty.sock", "200", "50", "--", "/opt/claude/bin/claude.exe", "--bg-spare", "/tmp/cc-daemon-0/x/spare/b.claim.sock"},
			502:   {"claude bg-spare", "--bg-spare", "/tmp/cc-daemon-0/x/spare/b.claim.sock"},
			// A pty host whose session was spawned without a spare: its argv
			// names the session (and carries the prompt) as real argv.
			503: {"claude bg-pty-host", "--bg-pty-host", "/tmp/cc-daemon-0/x/pty/d957d5fe.sock", "200", "50", "--", "/opt/claude/bin/claude.exe", "--session-id", idTUI329, "--", "hello"},
		},
		Cwds: map[int]string{31337: "/home/dev/cli-tool", 500: "/home/dev/cli-tool", 501: "/home/dev/cli-tool", 502: "/home/dev/cli-tool", 503: "/home/dev/cli-tool"},
	}
	got := discovertest.DiscoverAll(t, testAdapter(), newEnv(t, home, procs).Env)
	s := got[bgID]
	if s.Status != discover.StatusWaiting || s.Evidence != discover.EvidenceRegistry || s.PID != 31337 || s.Kind != KindBackground || s.JobID != "0b0b0b0b" {
		t.Errorf("bg session: %s (%s) pid %d kind %q job %q; want waiting on registry, pid 31337, background 0b0b0b0b", s.Status, s.Evidence, s.PID, s.Kind, s.JobID)
	}
	for id, s := range got {
		if (s.PID >= 500 && s.PID <= 503) || s.Evidence == discover.EvidenceProcess || s.Evidence == discover.EvidenceArgv {
			t.Errorf("%s: %s on %s evidence, pid %d: Claude's daemon machinery taken for a session", id, s.Status, s.Evidence, s.PID)
		}
	}
}

// TestBlockedJobIsWaiting: Claude's job record says blocked (a permission
// prompt is open) while the registry still says busy: waiting, as Claude's own
// `claude agents` says.
func TestBlockedJobIsWaiting(t *testing.T) {
	home := copyHome(t)
	const bgID = "0b0b0b0b-1111-4222-8333-444455556666"
	writeRegistry(t, home, 31337, `{"pid":31337,"sessionId":"`+bgID+`","cwd":"/home/dev/cli-tool","startedAt":1795211130000,"procStart":"32460","version":"2.1.329","kind":"bg","entrypoint":"cli","jobId":"0b0b0b0b","status":"busy"}`)
	procs := &proc.Fake{Procs: []proc.Process{{PID: 31337, Comm: "claude", StartTicks: 32460}}}
	s := discovertest.DiscoverAll(t, testAdapter(), newEnv(t, home, procs).Env)[bgID]
	if s.Status != discover.StatusRunning {
		t.Fatalf("before the prompt: %s, want running", s.Status)
	}
	writeJob(t, home, bgID, jobBlocked, fixtureNow)
	s = discovertest.DiscoverAll(t, testAdapter(), newEnv(t, home, procs).Env)[bgID]
	if s.Status != discover.StatusWaiting || s.Evidence != discover.EvidenceRegistry || s.PID != 31337 {
		t.Errorf("job blocked: %s on %s (%s), pid %d; want waiting on registry, pid 31337", s.Status, s.Evidence, s.EvidenceDetail, s.PID)
	}
}

// TestDaemonStatus: the daemon is alive only as the PID with the recorded
// start ticks; gone or reused, stop must not wait for it.
func TestDaemonStatus(t *testing.T) {
	root := t.TempDir()
	if ok, _ := DaemonStatus(root, &proc.Fake{}); ok {
		t.Errorf("no daemon.status.json: alive")
	}
	if err := os.WriteFile(filepath.Join(root, "daemon.status.json"), []byte(`{"supervisorPid":700,"supervisorProcStart":"5000","workers":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		procs *proc.Fake
		want  bool
	}{
		{&proc.Fake{Procs: []proc.Process{{PID: 700, StartTicks: 5000}}}, true},
		{&proc.Fake{Procs: []proc.Process{{PID: 700, StartTicks: 5001}}}, false},
		{&proc.Fake{}, false},
	} {
		if ok, why := DaemonStatus(root, tc.procs); ok != tc.want {
			t.Errorf("procs %v: alive %v (%s), want %v", tc.procs.Procs, ok, why, tc.want)
		}
	}
}

// TestJobEndedWhileProcessExits: `claude stop` records the job stopped about
// 0.5 s before the process exits; a registry entry or argv still showing that
// process is the job on its way out: stopped, as Claude says. A record that
// ended before the process started (a later resume) changes nothing.
func TestJobEndedWhileProcessExits(t *testing.T) {
	const bgID = "0b0b0b0b-1111-4222-8333-444455556666"
	started := int64(1795211130000)
	for _, tc := range []struct {
		name    string
		updated time.Time
		want    string
	}{
		{"stopped after the process started", time.UnixMilli(started + 5000), discover.StatusStopped},
		{"stopped before the process started", time.UnixMilli(started - 5000), discover.StatusWaiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := copyHome(t)
			writeRegistry(t, home, 31337, `{"pid":31337,"sessionId":"`+bgID+`","cwd":"/home/dev/cli-tool","startedAt":1795211130000,"procStart":"32460","version":"2.1.329","kind":"bg","entrypoint":"cli","jobId":"0b0b0b0b","status":"waiting"}`)
			writeJob(t, home, bgID, jobStopped, tc.updated)
			procs := &proc.Fake{Procs: []proc.Process{{PID: 31337, Comm: "claude", StartTicks: 32460}}}
			s := discovertest.DiscoverAll(t, testAdapter(), newEnv(t, home, procs).Env)[bgID]
			if s.Status != tc.want {
				t.Errorf("%s (%s: %s), want %s", s.Status, s.Evidence, s.EvidenceDetail, tc.want)
			}
		})
	}
}
