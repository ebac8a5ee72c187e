package launch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

func sorted(s []string) []string { sort.Strings(s); return s }

func journal(t *testing.T, st *meta.Store) []string {
	t.Helper()
	var out []string
	if err := st.ReadEvents(func(ev meta.Event, _ []byte) bool { out = append(out, ev.Type); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

// The happy path: the session id is confirmed by the agent's own init line
// before Start returns; the verified PID is in the record and the lock; the
// prompt reached stdin from a (deleted) file, never argv; the end is recorded
// once, the lock released, the journal written.
func TestLaunchConfirmsRecordsAndFinalises(t *testing.T) {
	l := testLauncher(t)
	cwd := workdir(t)
	out := t.TempDir()
	prompt := "-p looks like a flag\nline two\n" + strings.Repeat("x", 200<<10) // > 128 KiB: argv could not carry it
	res, err := l.Start(context.Background(), spec(cwd, prompt,
		"FAKE_SLEEP=1", "FAKE_PROMPT_OUT="+out+"/prompt", "FAKE_STDIN_OUT="+out+"/stdin", "FAKE_ARGV_OUT="+out+"/argv", "FAKE_EXIT=0"))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Record
	if r.SessionID == "" || r.ConfirmedAt == nil || r.Init == nil || r.Init.Version != "0.0.0-fake" {
		t.Fatalf("record not confirmed: %+v", r)
	}
	if _, ok := l.verify(r.PID, r.StartTicks, r.BootID); !ok || r.PGID != r.PID {
		t.Fatalf("agent pid %d (start %d) not verified alive right after launch", r.PID, r.StartTicks)
	}
	if r.SupervisorPID == 0 || r.SupervisorPID == os.Getpid() {
		t.Errorf("supervisor pid = %d", r.SupervisorPID)
	}
	ls, _ := locks.List(l.Store)
	if len(ls) != 1 || ls[0].Directory != cwd || ls[0].PID != r.PID || ls[0].PIDStart != r.StartTicks || ls[0].SessionID != r.SessionID {
		t.Errorf("auto lock = %+v; want it owned by the agent", ls)
	}
	fin, err := l.WaitLaunch(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if fin.ExitCode == nil || *fin.ExitCode != 0 || fin.EndedAt == nil || fin.FinalisedAt == nil || fin.Failure != "" {
		t.Errorf("finalised record: exit %v ended %v finalised %v failure %q", fin.ExitCode, fin.EndedAt, fin.FinalisedAt, fin.Failure)
	}
	if got := readFile(t, out+"/prompt"); got != strings.TrimRight(prompt, "\n") {
		t.Errorf("prompt arrived with %d bytes, want %d", len(got), len(prompt))
	}
	if stdin := readFile(t, out+"/stdin"); !strings.Contains(stdin, filepath.Join(l.Store.Dir, "prompts")) || strings.Contains(stdin, "pipe:") {
		t.Errorf("the agent's stdin was %q; want the private prompt file", stdin)
	}
	argv := readFile(t, out+"/argv")
	if strings.Contains(argv, "line two") || !strings.Contains(argv, "--session-id\n"+r.SessionID) {
		t.Errorf("argv:\n%s", argv)
	}
	if m, _ := filepath.Glob(filepath.Join(l.Store.Dir, "prompts", "*")); len(m) != 0 {
		t.Errorf("prompt files left behind: %v", m)
	}
	if ls, _ := locks.List(l.Store); len(ls) != 0 {
		t.Errorf("locks after the end: %+v", ls)
	}
	if diff := cmp.Diff([]string{"lock.acquired", "session.launched", "lock.released", "session.stopped"}, journal(t, l.Store)); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
	if info, err := os.Stat(r.Log); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("launch log: %v %v", info, err)
	}
}

// Startup failures: the agent exits before confirming. Start reports the class
// with a one-line message, the agent is gone, the lock released, hooks silent.
func TestLaunchStartupFailures(t *testing.T) {
	cases := map[string]string{
		"bad-flag":   "error: unknown option '--bogus'",
		"auth":       "Invalid API key · Please run /login",
		"nested":     "Error: Claude Code cannot be launched inside another Claude Code session.",
		"root-guard": "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons",
		"crashed":    "",
	}
	for class, stderr := range cases {
		t.Run(class, func(t *testing.T) {
			l := testLauncher(t)
			cwd := workdir(t)
			marker := filepath.Join(t.TempDir(), "hook")
			env := []string{"FAKE_STDERR=" + stderr}
			if stderr == "" {
				env = []string{"FAKE_STDERR= ", "FAKE_EXIT=7"}
			}
			sp := spec(cwd, "hi", env...)
			sp.OnComplete = "touch " + marker
			_, err := l.Start(context.Background(), sp)
			var se *StartError
			if !errors.As(err, &se) || se.Class != class {
				t.Fatalf("err = %v, want StartError class %s", err, class)
			}
			if strings.Contains(se.Message, "\n") {
				t.Errorf("message is not one line: %q", se.Message)
			}
			if ls, _ := locks.List(l.Store); len(ls) != 0 {
				t.Errorf("lock left behind: %+v", ls)
			}
			recs, _ := l.Store.ReadLaunches()
			if len(recs) != 1 || recs[0].FinalisedAt == nil || !strings.HasPrefix(recs[0].Failure, class) {
				t.Errorf("record: %+v", recs)
			}
			if _, ok := l.verify(recs[0].PID, recs[0].StartTicks, ""); ok {
				t.Error("agent still alive")
			}
			time.Sleep(100 * time.Millisecond)
			if _, err := os.Stat(marker); err == nil {
				t.Error("on-complete ran for a launch that never started")
			}
		})
	}
}

// No confirmation within the window: the launch failed and the agent is stopped
// (never an invented id).
func TestLaunchConfirmationTimeout(t *testing.T) {
	l := testLauncher(t)
	l.ConfirmTimeout = 700 * time.Millisecond
	_, err := l.Start(context.Background(), spec(workdir(t), "hi", "FAKE_NO_INIT=1"))
	var se *StartError
	if !errors.As(err, &se) || se.Class != "timeout" {
		t.Fatalf("err = %v", err)
	}
	recs, _ := l.Store.ReadLaunches()
	if _, ok := l.verify(recs[0].PID, recs[0].StartTicks, ""); ok {
		t.Error("the unconfirmed agent was not stopped")
	}
}

func TestLaunchLockConflict(t *testing.T) {
	l := testLauncher(t)
	cwd := workdir(t)
	res, err := l.Start(context.Background(), spec(cwd, "one", "FAKE_SLEEP=3"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Start(context.Background(), spec(cwd, "two"))
	var ce *locks.ConflictError
	if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "directory locked by tester (claude-code launch "+res.Record.ID+") since ") || !strings.HasSuffix(err.Error(), "; use --force") {
		t.Fatalf("err = %v", err)
	}
	recs, _ := l.Store.ReadLaunches()
	if len(recs) != 1 {
		t.Errorf("a refused launch wrote a record: %d records", len(recs))
	}
	sp := spec(cwd, "three")
	sp.Force = true
	res2, err := l.Start(context.Background(), sp)
	if err != nil {
		t.Fatalf("--force: %v", err)
	}
	_ = res2
}

func TestResumeRecordsNewID(t *testing.T) {
	l := testLauncher(t)
	sp := spec(workdir(t), "again", "FAKE_RESUMED_AS=new-id")
	sp.Kind, sp.SessionID = KindResume, "old-id"
	res, err := l.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.SessionID != "old-id" || res.Record.ResumedAs != "new-id" || res.Record.Kind != KindResume {
		t.Errorf("record = %+v", res.Record)
	}
	if !strings.Contains(strings.Join(res.Record.Argv, " "), "--resume old-id") {
		t.Errorf("argv %v", res.Record.Argv)
	}
}

// The supervisor is SIGKILLed mid-run: the session keeps running (its status
// rests on the agent's process, not on us). When the agent ends, the first
// command to notice finalises it — once, however many try at the same time —
// with exit_code null, and on-complete and the webhook fire exactly once.
func TestSupervisorKilledThenLazyFinalise(t *testing.T) {
	rcv := newReceiver(t, "sekrit")
	l := testLauncher(t)
	cwd := workdir(t)
	hookOut := filepath.Join(t.TempDir(), "hook.txt")
	finish := filepath.Join(t.TempDir(), "finish") // the agent works until it exists
	sp := spec(cwd, "work", "FAKE_WAIT_FOR="+finish)
	sp.OnComplete = `echo "$AGENTCTL_SESSION_ID exit=[$AGENTCTL_EXIT_CODE] $AGENTCTL_ADAPTER" >> ` + hookOut
	sp.WebhookURL, sp.WebhookSecret = rcv.srv.URL, "sekrit"
	sp.Meta = map[string]string{"callback_session_key": "cb"}
	res, err := l.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Record
	if err := syscall.Kill(r.SupervisorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "the supervisor to die", func() bool {
		return !l.Store.IsAlive(r.SupervisorPID, r.SupervisorStart, "")
	})
	if _, ok := l.verify(r.PID, r.StartTicks, r.BootID); !ok {
		t.Fatal("killing the supervisor killed the agent")
	}
	if done, _ := l.FinaliseDead(context.Background()); len(done) != 0 {
		t.Fatalf("finalised a launch whose agent is alive: %v", done)
	}
	if ls, _ := locks.List(l.Store); len(ls) != 1 {
		t.Errorf("the auto-lock must stay while the agent lives: %+v", ls)
	}
	os.WriteFile(finish, nil, 0o644)
	eventually(t, 10*time.Second, "the agent to end", func() bool {
		_, ok := l.verify(r.PID, r.StartTicks, r.BootID)
		return !ok
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, err := l.FinaliseDead(context.Background())
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += len(done)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 1 {
		t.Errorf("finalised %d times, want exactly once", total)
	}
	if got := lines(readFile(t, hookOut)); len(got) != 1 || got[0] != r.SessionID+" exit=[] claude-code" {
		t.Errorf("on-complete runs: %q", got)
	}
	if rcv.count() != 1 {
		t.Fatalf("webhook deliveries = %d, want 1", rcv.count())
	}
	if b := rcv.bodies[0]; b["session_id"] != r.SessionID || b["exit_status"] != nil || b["meta"].(map[string]any)["callback_session_key"] != "cb" {
		t.Errorf("webhook body = %v", b)
	}
	recs, _ := l.Store.ReadLaunches()
	fin := recs[0]
	if fin.ExitCode != nil || fin.EndedAt == nil || fin.FinalisedAt == nil || fin.NotifiedAt == nil || fin.OnCompleteResult != "ok" {
		t.Errorf("record after lazy finalisation: exit %v ended %v finalised %v notified %v hook %q", fin.ExitCode, fin.EndedAt, fin.FinalisedAt, fin.NotifiedAt, fin.OnCompleteResult)
	}
	if fin.Failure != "" {
		t.Errorf("the log has a success result; failure = %q", fin.Failure)
	}
	if ls, _ := locks.List(l.Store); len(ls) != 0 {
		t.Errorf("locks after finalisation: %+v", ls)
	}
	stopped := 0
	for _, ty := range journal(t, l.Store) {
		if ty == meta.EventStopped || ty == meta.EventFailed {
			stopped++
		}
	}
	if stopped != 1 {
		t.Errorf("%d end events in the journal, want 1", stopped)
	}
	// Later commands change nothing.
	if done, _ := l.FinaliseDead(context.Background()); len(done) != 0 || rcv.count() != 1 {
		t.Errorf("a second pass finalised %v / delivered %d", done, rcv.count())
	}
}

// The supervisor finalises with the real exit code and runs on-complete with it.
func TestSupervisorRecordsExitCodeAndRunsHook(t *testing.T) {
	rcv := newReceiver(t, "")
	l := testLauncher(t)
	hookOut := filepath.Join(t.TempDir(), "hook.txt")
	sp := spec(workdir(t), "work", "FAKE_EXIT=3")
	sp.OnComplete = `echo "exit=$AGENTCTL_EXIT_CODE cwd=$PWD" > ` + hookOut
	sp.WebhookURL = rcv.srv.URL
	res, err := l.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	fin, err := l.WaitLaunch(context.Background(), res.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	if fin.ExitCode == nil || *fin.ExitCode != 3 {
		t.Fatalf("exit code %v, want 3", fin.ExitCode)
	}
	if got := strings.TrimSpace(readFile(t, hookOut)); got != "exit=3 cwd="+sp.Cwd {
		t.Errorf("hook saw %q", got)
	}
	if rcv.count() != 1 || rcv.bodies[0]["exit_status"] != float64(3) {
		t.Errorf("webhook: %d deliveries %v", rcv.count(), rcv.bodies)
	}
	// The agent exits at once, so the lock may already be gone (owner dead) when
	// the launch is journaled: compare without order.
	if diff := cmp.Diff([]string{"lock.acquired", "lock.released", "session.failed", "session.launched"}, sorted(journal(t, l.Store))); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
}
