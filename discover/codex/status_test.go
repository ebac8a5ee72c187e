package codex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// procs is a process table holding the given PIDs as native codex processes.
func procs(pids ...int) *proc.Fake {
	f := &proc.Fake{Boot: "boot-1", Args: map[int][]string{}, Exes: map[int]string{}, Cwds: map[int]string{}}
	for _, pid := range pids {
		f.Procs = append(f.Procs, proc.Process{PID: pid, PPID: 1, Comm: "codex", StartTicks: uint64(pid) * 10})
		f.Args[pid] = []string{"/opt/codex/bin/codex", "exec", "--json", "-"}
		f.Exes[pid] = "/opt/codex/bin/codex"
	}
	return f
}

func TestStatusFromLockHolder(t *testing.T) {
	const native = 4242
	cases := []struct {
		name       string
		id         string
		held       map[string]int
		stale      bool // lock file present but not held
		wantStatus string
		wantPID    int
		wantInDet  string
	}{
		// A killed turn (SIGTERM: no terminal record) with a live holder is running.
		{"live holder, open turn", id861e, map[string]int{id861e + ".lock": native}, false, discover.StatusRunning, native, "held by pid 4242"},
		// docs/agents/codex.md pitfall 13: lock held ≠ busy.
		{"live holder, closed turn", id5425, map[string]int{id5425 + ".lock": native}, false, discover.StatusIdle, native, "no turn in progress"},
		// Held from another PID namespace: alive, no PID to show.
		{"holder pid 0", id861e, map[string]int{id861e + ".lock": 0}, false, discover.StatusRunning, 0, "another PID namespace"},
		// docs/agents/codex.md pitfall 14: a stale, unlocked lock file is evidence of a hard kill.
		{"stale lock, open turn", id861e, nil, true, discover.StatusFailed, 0, "stale thread-writer lock"},
		{"no lock, open turn", id60b3, nil, false, discover.StatusFailed, 0, "no thread-writer lock held"},
		{"no lock, interrupted", id70be, nil, false, discover.StatusStopped, 0, "last turn interrupted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := fixtureHome(t)
			writeLock(t, home, c.id)
			if !c.stale && c.held == nil {
				os.Remove(filepath.Join(codexDir(home), "thread-writer-locks", c.id+".lock"))
			}
			s := discovertest.DiscoverAll(t, testAdapter(c.held), testEnv(home, procs(native), nil))[c.id]
			if s.Status != c.wantStatus || s.PID != c.wantPID || !strings.Contains(s.EvidenceDetail, c.wantInDet) {
				t.Errorf("%s pid %d (%s), want %s pid %d …%s…", s.Status, s.PID, s.EvidenceDetail, c.wantStatus, c.wantPID, c.wantInDet)
			}
			wantEv := discover.EvidenceTranscript
			if c.held != nil {
				wantEv = discover.EvidenceRegistry
			}
			if s.Evidence != wantEv {
				t.Errorf("evidence %s, want %s", s.Evidence, wantEv)
			}
		})
	}
}

// An open turn whose last record asks the user → waiting (while live).
func TestWaitingOnApproval(t *testing.T) {
	home := fixtureHome(t)
	writeLock(t, home, id861e)
	discovertest.AppendFile(t, rolloutPath(t, home, id861e),
		`{"timestamp":"2026-11-20T21:45:03.000Z","ordinal":9,"type":"event_msg","payload":{"type":"exec_approval_request","call_id":"c1","command":["rm","-rf","x"]}}`+"\n")
	s := discovertest.DiscoverAll(t, testAdapter(map[string]int{id861e + ".lock": 77}), testEnv(home, procs(77), nil))[id861e]
	if s.Status != discover.StatusWaiting || !strings.Contains(s.EvidenceDetail, "exec_approval_request") {
		t.Errorf("%s (%s), want waiting", s.Status, s.EvidenceDetail)
	}
	// Not live: the request does not matter, the turn never finished.
	os.Remove(filepath.Join(codexDir(home), "thread-writer-locks", id861e+".lock"))
	s = discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, procs(77), nil))[id861e]
	if s.Status != discover.StatusFailed {
		t.Errorf("not live: %s, want failed", s.Status)
	}
}

// thread_history is used only while its projection covers the whole rollout;
// once the rollout grew, its tail decides.
func TestStaleProjectionUsesRollout(t *testing.T) {
	home := fixtureHome(t)
	writeLock(t, home, id5425)
	held := map[string]int{id5425 + ".lock": 9}
	s := discovertest.DiscoverAll(t, testAdapter(held), testEnv(home, procs(9), nil))[id5425]
	if s.Status != discover.StatusIdle || !strings.Contains(s.EvidenceDetail, "no turn in progress") {
		t.Fatalf("before: %s (%s)", s.Status, s.EvidenceDetail)
	}
	discovertest.AppendFile(t, rolloutPath(t, home, id5425),
		`{"timestamp":"2026-11-20T22:00:00.000Z","ordinal":14,"type":"event_msg","payload":{"type":"task_started","turn_id":"t-new","started_at":1795212000}}`+"\n")
	s = discovertest.DiscoverAll(t, testAdapter(held), testEnv(home, procs(9), nil))[id5425]
	if s.Status != discover.StatusRunning || !s.LastActivity.Equal(ts("2026-11-20T22:00:00Z")) {
		t.Errorf("after resume: %s last activity %v, want running at 22:00", s.Status, s.LastActivity)
	}
}

// Without a way to check locks, an open turn is unknown, never running or failed.
func TestLocksUnavailable(t *testing.T) {
	home := fixtureHome(t)
	writeLock(t, home, id861e)
	a := &Adapter{Holders: func(context.Context, []string) (map[string]int, error) { return nil, ErrLocksUnavailable }}
	got := discovertest.DiscoverAll(t, a, testEnv(home, nil, nil))
	if s := got[id861e]; s.Status != discover.StatusUnknown || s.Evidence != discover.EvidenceNone {
		t.Errorf("open turn: %s/%s, want unknown/none", s.Status, s.Evidence)
	}
	if s := got[id5425]; s.Status != discover.StatusStopped {
		t.Errorf("closed turn: %s, want stopped", s.Status)
	}
}

// The TUI's app-server daemon holds the lock of a thread it keeps loaded.
func TestDaemonHostedThread(t *testing.T) {
	home := fixtureHome(t)
	writeLock(t, home, idD918)
	os.MkdirAll(filepath.Join(codexDir(home), "app-server-daemon"), 0o755)
	os.WriteFile(filepath.Join(codexDir(home), "app-server-daemon", "daemon.pid"),
		[]byte(`{"pid":5150,"processStartTime":1,"processIdentity":{"bootId":"b","startTicks":2}}`), 0o600)
	s := discovertest.DiscoverAll(t, testAdapter(map[string]int{idD918 + ".lock": 5150}), testEnv(home, procs(5150), nil))[idD918]
	if s.Status != discover.StatusIdle || s.Extra["hosted_by"] != "app-server daemon" || s.PID != 5150 ||
		!strings.Contains(s.EvidenceDetail, "held by pid 5150 (the TUI's app-server daemon, which keeps the thread after the TUI quits)") {
		t.Errorf("%s hosted_by %v pid %d (%s)", s.Status, s.Extra["hosted_by"], s.PID, s.EvidenceDetail)
	}
}

// docs/agents/codex.md pitfall 11: through the npm shim there are two processes; the native
// child holds the lock and is the PID reported.
func TestLivenessThroughNpmShim(t *testing.T) {
	home := fixtureHome(t)
	writeLock(t, home, id861e)
	pt := &proc.Fake{Boot: "b", Procs: []proc.Process{
		{PID: 300, PPID: 1, Comm: "node", StartTicks: 1},
		{PID: 301, PPID: 300, Comm: "codex", StartTicks: 2},
	}, Args: map[int][]string{
		300: {"node", "/usr/lib/node_modules/.bin/codex", "exec", "--json", "-"},
		301: {"/usr/lib/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", "exec", "--json", "-"},
	}}
	s := discovertest.DiscoverAll(t, testAdapter(map[string]int{id861e + ".lock": 301}), testEnv(home, pt, nil))[id861e]
	if s.Status != discover.StatusRunning || s.PID != 301 {
		t.Errorf("%s pid %d, want running pid 301", s.Status, s.PID)
	}
}

// docs/agents/codex.md pitfall 15: an unrelated codex process in the same cwd makes no old
// thread live — neither with locks nor in the open-fd fallback.
func TestUnrelatedCodexProcessIsNotEvidence(t *testing.T) {
	home := fixtureHome(t)
	pt := procs(500)
	pt.Cwds[500] = "/home/dev/billing"
	// Lock dir present, nothing held.
	writeLock(t, home, "01a1ffff-0000-7000-8000-000000000000")
	for _, s := range discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, pt, nil)) {
		if discover.Alive(s.Status) {
			t.Errorf("lock mode: %s is %s", s.ID, s.Status)
		}
	}
	// No lock dir: open-fd fallback; pid 500 has other files open.
	os.RemoveAll(filepath.Join(codexDir(home), "thread-writer-locks"))
	a := &Adapter{OpenFiles: func(pid int) ([]string, error) { return []string{"/dev/null", "/home/dev/billing/main.go"}, nil }}
	for _, s := range discovertest.DiscoverAll(t, a, testEnv(home, pt, nil)) {
		if discover.Alive(s.Status) {
			t.Errorf("fd mode: %s is %s", s.ID, s.Status)
		}
	}
}

// Older Codex has no lock directory: the writer is the codex process that has
// the rollout open.
func TestOpenFdFallback(t *testing.T) {
	home := fixtureHome(t)
	target := rolloutPath(t, home, id861e)
	pt := procs(600, 601)
	pt.Procs = append(pt.Procs, proc.Process{PID: 602, Comm: "vim"})
	a := &Adapter{OpenFiles: func(pid int) ([]string, error) {
		switch pid {
		case 601:
			return []string{"/dev/null", target}, nil
		case 602:
			t.Errorf("fds of a non-codex process were read")
		}
		return nil, errors.New("permission denied")
	}}
	got := discovertest.DiscoverAll(t, a, testEnv(home, pt, nil))
	if s := got[id861e]; s.Status != discover.StatusRunning || s.PID != 601 || !strings.Contains(s.EvidenceDetail, "open rollout fd") {
		t.Errorf("%s pid %d (%s)", s.Status, s.PID, s.EvidenceDetail)
	}
	// Without a process table, fds cannot be read: unknown for open turns.
	got = discovertest.DiscoverAll(t, a, testEnv(home, &proc.Fake{NoProcs: true}, nil))
	if s := got[id861e]; s.Status != discover.StatusUnknown {
		t.Errorf("no proc table: %s, want unknown", s.Status)
	}
}

// docs/agents/codex.md pitfall 18: the launch log's `item.completed` of type error is a
// warning; `turn.failed` is a failure.
func TestLaunchLog(t *testing.T) {
	home := fixtureHome(t)
	logDir := t.TempDir()
	warnLog := filepath.Join(logDir, "ok.jsonl")
	discovertest.CopyTree(t, "testdata/captures", logDir)
	os.Rename(filepath.Join(logDir, "exec-json.stdout.jsonl"), warnLog)
	failLog := filepath.Join(logDir, "fail.jsonl")
	os.WriteFile(failLog, []byte(`{"type":"thread.started","thread_id":"`+id861e+`"}
{"type":"turn.started"}
supervisor: agent exited 1
{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}
`), 0o600)
	env := testEnv(home, nil, nil)
	env.Launches = []meta.Launch{
		{ID: "l-1", Adapter: Name, SessionID: id5425, Log: warnLog, LaunchedAt: ts("2026-11-20T21:50:16Z")},
		{ID: "l-2", Adapter: Name, SessionID: id861e, Log: failLog, LaunchedAt: ts("2026-11-20T21:45:01Z")},
	}
	got := discovertest.DiscoverAll(t, testAdapter(nil), env)
	if s := got[id5425]; s.Status != discover.StatusStopped {
		t.Errorf("warning item: %s (%s), want stopped", s.Status, s.EvidenceDetail)
	}
	if s := got[id861e]; s.Status != discover.StatusFailed || s.Extra["reason"] != "error" || !strings.Contains(s.EvidenceDetail, "stream disconnected") {
		t.Errorf("turn.failed: %s/%v (%s)", s.Status, s.Extra["reason"], s.EvidenceDetail)
	}
}

// docs/agents/codex.md pitfall 22 (core overlay, checked end to end with this adapter): a
// 25-hour-old launch record whose PID is alive keeps the thread running.
func TestOldLaunchRecordStillLive(t *testing.T) {
	home := fixtureHome(t)
	pt := procs(700)
	env := testEnv(home, pt, nil)
	env.Launches = []meta.Launch{{ID: "l-old", Adapter: Name, SessionID: id861e, PID: 700, StartTicks: 7000,
		BootID: "boot-1", LaunchedAt: fixedNow.Add(-25 * time.Hour)}}
	res := discover.All(context.Background(), env, []discover.Adapter{testAdapter(nil)}, 5*time.Second)
	for _, s := range res.Sessions {
		if s.ID == id861e {
			if s.Status != discover.StatusRunning || s.Evidence != discover.EvidenceLaunchRecord || s.PID != 700 {
				t.Errorf("%s/%s pid %d", s.Status, s.Evidence, s.PID)
			}
			return
		}
	}
	t.Fatal("thread missing")
}

func TestParseProcLocks(t *testing.T) {
	in := `1: FLOCK  ADVISORY  WRITE 14774 fe:00:10085062 0 EOF
1: -> FLOCK  ADVISORY  WRITE 14775 fe:00:10085062 0 EOF
2: POSIX  ADVISORY  READ 15000 08:01:123 0 EOF
3: OFDLCK ADVISORY  WRITE -1 103:02:777 0 EOF
4: FLOCK  ADVISORY  WRITE 0 fe:00:42 0 EOF
garbage line
`
	got := parseProcLocks(strings.NewReader(in))
	want := map[fileKey]int{
		{0xfe, 0, 10085062}: 14774, // the waiter (->) is not the holder
		{8, 1, 123}:         15000,
		{0x103, 2, 777}:     0, // OFD locks have no PID
		{0xfe, 0, 42}:       0, // held from another PID namespace
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%v: %d, want %d", k, got[k], v)
		}
	}
}

func TestParseLsof(t *testing.T) {
	out := []byte("p123\nf5\nn/h/.codex/thread-writer-locks/a.lock\np456\nn/other\n")
	got := parseLsof(out, map[string]bool{"/h/.codex/thread-writer-locks/a.lock": true, "/h/b.lock": true})
	if len(got) != 1 || got["/h/.codex/thread-writer-locks/a.lock"] != 123 {
		t.Errorf("got %v", got)
	}
}

// A real Codex 0.169 TUI rollout copied while it asked "Would you like to run
// the following command?" (approval policy on-request): no approval request is
// persisted, the file ends with the escalated exec_command function_call (and a
// token_usage_record). Live, that is waiting, naming the call; answered (an
// output after it) it is running; under approval policy never, Codex does not
// ask, so running.
func TestWaitingOnEscalatedCall(t *testing.T) {
	const id = "01a21145-ca45-7ab2-8911-6c8a678509c2"
	home := t.TempDir()
	discovertest.CopyTree(t, "testdata/approval", home)
	writeLock(t, home, id)
	a := testAdapter(map[string]int{id + ".lock": 77})
	s := discovertest.DiscoverAll(t, a, testEnv(home, procs(77), nil))[id]
	if s.Status != discover.StatusWaiting || !s.Inferred ||
		!strings.Contains(s.EvidenceDetail, `approval of exec_command "touch codex-made-this" (function_call call_165ded7a000001 asks sandbox_permissions require_escalated`) {
		t.Errorf("at the approval prompt: %s inferred=%v (%s), want waiting naming the escalated call", s.Status, s.Inferred, s.EvidenceDetail)
	}

	// Approved: Codex writes nothing until the command's output, but the writer
	// runs it as its child (ps recorded e2e: the app-server daemon holding the
	// lock, `/bin/bash -c <cmd>` under it). Another child is no such evidence.
	pt := procs(77)
	pt.Procs = append(pt.Procs, proc.Process{PID: 78, PPID: 77, Comm: "bash", StartTicks: 780})
	pt.Args[78] = []string{"/bin/bash", "-c", "git status"}
	if s := discovertest.DiscoverAll(t, a, testEnv(home, pt, nil))[id]; s.Status != discover.StatusWaiting {
		t.Errorf("an unrelated child of the writer: %s (%s), want waiting", s.Status, s.EvidenceDetail)
	}
	pt.Procs = append(pt.Procs, proc.Process{PID: 79, PPID: 78, Comm: "bash", StartTicks: 790})
	pt.Args[79] = []string{"/bin/bash", "-c", "touch codex-made-this"}
	if s := discovertest.DiscoverAll(t, a, testEnv(home, pt, nil))[id]; s.Status != discover.StatusRunning ||
		!strings.Contains(s.EvidenceDetail, `approved call runs: pid 79 (child of pid 77) runs "touch codex-made-this"`) {
		t.Errorf("the approved command runs: %s (%s), want running naming pid 79", s.Status, s.EvidenceDetail)
	} else if !explainSays(a.Explain(context.Background(), testEnv(home, pt, nil), s), "approval", "approved: approved call runs: pid 79") {
		t.Errorf("--explain does not name the approved run: %+v", a.Explain(context.Background(), testEnv(home, pt, nil), s))
	}
	if s := discovertest.DiscoverAll(t, a, testEnv(home, procs(77), nil))[id]; !explainSays(a.Explain(context.Background(), testEnv(home, procs(77), nil), s), "approval", "still asking (waiting)") {
		t.Errorf("--explain at the prompt: %+v", a.Explain(context.Background(), testEnv(home, procs(77), nil), s))
	}

	path := rolloutPath(t, home, id)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	never := strings.ReplaceAll(string(orig), `"approval_policy":"on-request"`, `"approval_policy":"never"`)
	if err := os.WriteFile(path, []byte(never), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := discovertest.DiscoverAll(t, a, testEnv(home, procs(77), nil))[id]; s.Status != discover.StatusRunning {
		t.Errorf("approval policy never: %s (%s), want running", s.Status, s.EvidenceDetail)
	}

	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	discovertest.AppendFile(t, path, `{"timestamp":"2026-11-25T05:55:20.000Z","ordinal":11,"type":"response_item","payload":{"type":"function_call_output","call_id":"call_165ded7a000001","output":"ok"}}`+"\n")
	if s := discovertest.DiscoverAll(t, a, testEnv(home, procs(77), nil))[id]; s.Status != discover.StatusRunning {
		t.Errorf("approved, the command ran: %s (%s), want running", s.Status, s.EvidenceDetail)
	}
}

// Real Codex 0.169 `exec` rollouts against a stub answering 401 and 429: the
// turn closes with task_complete carrying error.message. Not live: failed with
// blocked_reason auth / quota; live (a TUI after the error): idle, still blocked.
func TestBlockedOnQuotaAndAuth(t *testing.T) {
	const auth, quota = "01a2114c-91ac-7330-b000-e59a6f8d439c", "01a2114c-d742-7d42-b3b9-b3e8e70dc5b1"
	home := t.TempDir()
	discovertest.CopyTree(t, "testdata/blocked", home)
	ss := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))
	for id, want := range map[string]string{auth: discover.BlockedAuth, quota: discover.BlockedQuota} {
		s := ss[id]
		if s.Status != discover.StatusFailed || s.BlockedReason != want || !strings.Contains(s.EvidenceDetail, "error: ") {
			t.Errorf("%s: %s blocked_reason %q (%s); want failed, %s", id, s.Status, s.BlockedReason, s.EvidenceDetail, want)
		}
	}
	writeLock(t, home, quota)
	s := discovertest.DiscoverAll(t, testAdapter(map[string]int{quota + ".lock": 77}), testEnv(home, procs(77), nil))[quota]
	if s.Status != discover.StatusIdle || s.BlockedReason != discover.BlockedQuota || !strings.Contains(s.EvidenceDetail, "429 Too Many Requests") {
		t.Errorf("live after the error: %s blocked_reason %q (%s); want idle, quota", s.Status, s.BlockedReason, s.EvidenceDetail)
	}
}

// explainSays reports whether a signal from source says want.
func explainSays(sigs []discover.Signal, source, want string) bool {
	for _, g := range sigs {
		if g.Source == source && strings.Contains(g.Says, want) {
			return true
		}
	}
	return false
}

// A real Codex 0.169 TUI thread recorded at the accuracy benchmark's blocked
// moment (e2e TestStatusAccuracyCodexTUI, AGENTCTL_ACCURACY_KEEP): a completed
// turn, then a turn whose held reply became 429 and which Codex gave up. The
// daemon's thread_history projection is current (it has consumed the whole
// rollout), so the turn comes from thread_turns, status "failed" with
// error_json in the app-server's camelCase; the rollout's task_complete says
// the same in snake_case. Held by the app-server daemon (after /quit too):
// idle, blocked on quota, hosted by the daemon; the daemon stopped: failed,
// blocked on quota.
func TestTUIQuotaTurnFromThreadHistory(t *testing.T) {
	const id = "01a212cd-b315-7d42-a970-d09d8dd9a300"
	home := t.TempDir()
	discovertest.CopyTree(t, "testdata/tui-quota", home)
	writeLock(t, home, id)
	os.MkdirAll(filepath.Join(codexDir(home), "app-server-daemon"), 0o755)
	os.WriteFile(filepath.Join(codexDir(home), "app-server-daemon", "daemon.pid"),
		[]byte(`{"pid":5150,"processStartTime":1,"processIdentity":{"bootId":"b","startTicks":2}}`), 0o600)
	held := testAdapter(map[string]int{id + ".lock": 5150})
	s := discovertest.DiscoverAll(t, held, testEnv(home, procs(5150), nil))[id]
	if s.Status != discover.StatusIdle || s.BlockedReason != discover.BlockedQuota || s.Extra["hosted_by"] != "app-server daemon" ||
		!strings.Contains(s.EvidenceDetail, `"message":"exceeded retry limit, last status: 429 Too Many Requests","codexErrorInfo"`) {
		t.Errorf("held by the daemon: %s blocked_reason %q hosted_by %v (%s); want idle, quota, hosted by the daemon naming the error",
			s.Status, s.BlockedReason, s.Extra["hosted_by"], s.EvidenceDetail)
	}
	s = discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id]
	if s.Status != discover.StatusFailed || s.BlockedReason != discover.BlockedQuota {
		t.Errorf("the daemon stopped: %s blocked_reason %q (%s); want failed, quota", s.Status, s.BlockedReason, s.EvidenceDetail)
	}

	// Without the projection the rollout tail gives the same verdict.
	if err := os.Remove(filepath.Join(codexDir(home), "thread_history_1.sqlite")); err != nil {
		t.Fatal(err)
	}
	s = discovertest.DiscoverAll(t, held, testEnv(home, procs(5150), nil))[id]
	if s.Status != discover.StatusIdle || s.BlockedReason != discover.BlockedQuota || !strings.Contains(s.EvidenceDetail, "429 Too Many Requests") {
		t.Errorf("from the rollout, held by the daemon: %s blocked_reason %q (%s); want idle, quota", s.Status, s.BlockedReason, s.EvidenceDetail)
	}

	// A completed turn after it (the benchmark's next prompt) ends the block.
	discovertest.AppendFile(t, rolloutPath(t, home, id),
		`{"timestamp":"2026-11-25T13:03:55.000Z","ordinal":25,"type":"event_msg","payload":{"type":"task_started","turn_id":"t-next","started_at":1795611835}}`+"\n"+
			`{"timestamp":"2026-11-25T13:03:58.000Z","ordinal":26,"type":"event_msg","payload":{"type":"task_complete","turn_id":"t-next","last_agent_message":"ok"}}`+"\n")
	s = discovertest.DiscoverAll(t, held, testEnv(home, procs(5150), nil))[id]
	if s.Status != discover.StatusIdle || s.BlockedReason != "" {
		t.Errorf("after a completed turn: %s blocked_reason %q (%s); want idle, not blocked", s.Status, s.BlockedReason, s.EvidenceDetail)
	}
}
