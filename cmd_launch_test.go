package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/gittest"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// cli runs the real agentctl (the copy of this test binary that TestMain puts on
// $PATH as `agentctl`) as separate processes, against one test's state dir, with
// the fake Claude as the agent.
type cliRunner struct {
	t     *testing.T
	bin   string
	state string
	home  string
	env   []string
}

func newCLI(t *testing.T) *cliRunner {
	t.Helper()
	bin, err := exec.LookPath("agentctl")
	if err != nil {
		t.Fatalf("agentctl not on PATH (TestMain sets it up): %v", err)
	}
	fake, err := filepath.Abs("launch/testdata/fake-claude")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := &cliRunner{t: t, bin: bin, state: filepath.Join(dir, "state"), home: filepath.Join(dir, "home")}
	os.MkdirAll(c.home, 0o755)
	c.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.home, "AGENTCTL_HOME=" + c.state, "AGENTCTL_CLAUDE_BIN=" + fake,
		"NO_COLOR=1", "TZ=UTC", "USER=tester"}
	t.Cleanup(c.settle)
	return c
}

func (c *cliRunner) store() *meta.Store { return meta.NewStore(c.state) }

// run executes agentctl and returns stdout, stderr and the exit code.
func (c *cliRunner) run(args ...string) (string, string, int) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return o.String(), e.String(), 0
	case errors.As(err, &ee):
		return o.String(), e.String(), ee.ExitCode()
	}
	c.t.Fatalf("agentctl %v: %v", args, err)
	return "", "", -1
}

func (c *cliRunner) ok(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("agentctl %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	return out
}

type launched struct {
	ID       string `json:"id"`
	Adapter  string `json:"adapter"`
	Cwd      string `json:"cwd"`
	PID      int    `json:"pid"`
	Log      string `json:"log"`
	LaunchID string `json:"launch_id"`
	Error    string `json:"error"`
}

func (c *cliRunner) launch(cwd string, args ...string) launched {
	c.t.Helper()
	var out []launched
	if err := json.Unmarshal([]byte(c.ok(append([]string{"launch", "--json", "--cwd", cwd, "-p", "hello"}, args...)...)), &out); err != nil || len(out) != 1 {
		c.t.Fatalf("launch --json: %v %v", out, err)
	}
	return out[0]
}

type session struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Evidence string `json:"evidence"`
	PID      int    `json:"pid"`
	ExitCode *int   `json:"exit_code"`
	LaunchID string `json:"launch_id"`
	Meta     map[string]string
}

func (c *cliRunner) list(args ...string) []session {
	c.t.Helper()
	var ss []session
	if err := json.Unmarshal([]byte(c.ok(append([]string{"list", "--json", "--adapter", "claude-code"}, args...)...)), &ss); err != nil {
		c.t.Fatal(err)
	}
	return ss
}

func (c *cliRunner) status(id string) session {
	c.t.Helper()
	var s session
	if err := json.Unmarshal([]byte(c.ok("status", "--json", id)), &s); err != nil {
		c.t.Fatal(err)
	}
	return s
}

// settle stops what a test left running and waits for supervisors to finish, so
// the temp dirs can go.
func (c *cliRunner) settle() {
	st := c.store()
	recs, _ := st.ReadLaunches()
	for _, r := range recs {
		if st.AgentAlive(&r) {
			syscall.Kill(-r.PGID, syscall.SIGKILL)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, r := range recs {
		for (st.AgentAlive(&r) || st.IsAlive(r.SupervisorPID, r.SupervisorStart, "")) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	// A detached finaliser may still be writing.
	for time.Now().Before(deadline) && c.finalising() {
		time.Sleep(20 * time.Millisecond)
	}
}

// finalising reports whether some detached finaliser is still at work.
func (c *cliRunner) finalising() bool {
	recs, _ := c.store().ReadLaunches()
	for _, r := range recs {
		if r.Ending != nil && c.store().IsAlive(r.Ending.PID, r.Ending.Start, "") {
			return true
		}
	}
	return false
}

// ended reports whether a launch is finalised with nothing left to do: its
// on-complete hook ran and its webhook went out.
func (c *cliRunner) ended(launchID string) bool {
	recs, _ := c.store().ReadLaunches()
	for _, r := range recs {
		if r.ID == launchID {
			return r.FinalisedAt != nil && (r.Ending == nil || r.Ending.DoneAt != nil)
		}
	}
	return false
}

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	d := filepath.Join(append([]string{t.TempDir()}, parts...)...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(d)
	return real
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// 50 launches into one directory at the same moment: the flock-guarded lock file
// lets exactly one through; the others exit 5 naming the holder.
func TestParallelLaunchesIntoOneDir(t *testing.T) {
	c := newCLI(t)
	dir := mkdir(t, "proj")
	const n = 50
	type res struct {
		out, err string
		code     int
	}
	results := make(chan res, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// Long enough that no launch, however late a loaded machine starts
			// it, finds the winner already gone.
			o, e, code := c.run("launch", "--cwd", dir, "-p", "race", "--env", "FAKE_SLEEP=30")
			results <- res{o, e, code}
		}()
	}
	close(start)
	wg.Wait()
	close(results)
	var wins []string
	refused := 0
	for r := range results {
		switch r.code {
		case 0:
			wins = append(wins, r.out)
		case 5:
			refused++
			if !strings.Contains(r.err, "directory locked by ") || !strings.Contains(r.err, " (claude-code launch l-") || strings.Count(r.err, "\n") != 1 {
				t.Errorf("refusal message: %q", r.err)
			}
		default:
			t.Errorf("exit %d: %s", r.code, r.err)
		}
	}
	if len(wins) != 1 || refused != n-1 {
		t.Fatalf("%d launches succeeded and %d were refused; want 1 and %d", len(wins), refused, n-1)
	}
	recs, err := c.store().ReadLaunches()
	if err != nil || len(recs) != 1 {
		t.Errorf("launch records: %d (%v); refused launches must write none", len(recs), err)
	}
	ls, _ := locks.List(c.store())
	if len(ls) != 1 || ls[0].Directory != dir {
		t.Errorf("locks: %+v", ls)
	}
}

// 200 short launches in a row: afterwards nothing is alive, no lock is left, and
// every record is finalised with its exit code.
func TestManyShortLaunches(t *testing.T) {
	if testing.Short() {
		t.Skip("200 launches")
	}
	c := newCLI(t)
	base := mkdir(t, "many")
	var ids []string
	for i := 0; i < 200; i++ {
		dir := filepath.Join(base, fmt.Sprint(i))
		os.MkdirAll(dir, 0o755)
		out, errOut, code := c.run("launch", "--cwd", dir, "-p", "quick")
		if code != 0 {
			t.Fatalf("launch %d: exit %d: %s", i, code, errOut)
		}
		f := strings.Fields(out)
		if len(f) < 2 || f[0] != "launched" {
			t.Fatalf("launch output %q", out)
		}
		ids = append(ids, f[1])
	}
	out, errOut, code := c.run(append([]string{"wait", "--timeout", "60s"}, ids...)...)
	if code != 0 {
		t.Fatalf("wait: exit %d\n%s", code, errOut)
	}
	if got := strings.Count(out, " stopped (exit 0)\n"); got != 200 {
		t.Errorf("wait printed %d 'stopped (exit 0)' lines, want 200", got)
	}
	if alive := c.list(); len(alive) != 0 {
		t.Errorf("%d sessions still alive: %+v", len(alive), alive[0])
	}
	if out := c.ok("locks"); out != "No active locks.\n" {
		t.Errorf("locks:\n%s", out)
	}
	recs, err := c.store().ReadLaunches()
	if err != nil || len(recs) != 200 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for _, r := range recs {
		if r.FinalisedAt == nil || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Fatalf("record %s: finalised %v exit %v", r.ID, r.FinalisedAt, r.ExitCode)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(c.state, "prompts", "*")); len(m) != 0 {
		t.Errorf("%d prompt files left", len(m))
	}
}

// launch → running (launch-record) → wait times out (124) → stop confirms the
// exit → status stopped with the exit code → resume appends under the same id →
// wait returns the outcome.
func TestStopWaitResume(t *testing.T) {
	c := newCLI(t)
	dir := mkdir(t, "proj")
	l := c.launch(dir, "--env", "FAKE_SLEEP=30")
	s := c.status(l.ID)
	if s.Status != "running" || s.Evidence != "launch-record" || s.PID != l.PID {
		t.Fatalf("fresh launch: %+v", s)
	}
	if _, errOut, code := c.run("wait", "--timeout", "300ms", l.ID); code != 124 || !strings.Contains(errOut, "timed out after 300ms") {
		t.Fatalf("wait --timeout: exit %d %q", code, errOut)
	}
	if _, errOut, code := c.run("resume", l.ID, "more"); code != 5 || !strings.Contains(errOut, "is still running") {
		t.Errorf("resume of a live session: exit %d %q", code, errOut)
	}
	if out := c.ok("stop", l.ID); out != "stopped "+l.ID+" (exit observed)\n" {
		t.Errorf("stop printed %q", out)
	}
	if _, err := proc.Lookup(l.PID); err == nil {
		t.Fatal("agent still alive after stop")
	}
	waitFor(t, 5*time.Second, "the end to be recorded", func() bool { return c.status(l.ID).ExitCode != nil })
	s = c.status(l.ID)
	if s.Status != "stopped" || s.PID != 0 {
		t.Errorf("after stop: %+v", s)
	}
	// A second stop is idempotent (issue 37 item 9, like docker stop).
	if out, errOut, code := c.run("stop", l.ID); code != 0 || out != "already stopped "+l.ID+"\n" {
		t.Errorf("second stop: exit %d %q %q", code, out, errOut)
	}
	if ls, _ := locks.List(c.store()); len(ls) != 0 {
		t.Errorf("auto-lock not released: %+v", ls)
	}

	out := c.ok("resume", l.ID, "now finish", "--env", "FAKE_EXIT=0")
	if !strings.HasPrefix(out, "resumed "+l.ID+" (claude-code, pid ") {
		t.Errorf("resume printed %q", out)
	}
	out, errOut, code := c.run("wait", l.ID)
	if code != 0 || out != l.ID+" stopped (exit 0)\n" {
		t.Errorf("wait after resume: exit %d %q %q", code, out, errOut)
	}
	recs, _ := c.store().ReadLaunches()
	if len(recs) != 2 || recs[1].Kind != "resume" || recs[1].SessionID != l.ID || recs[1].Cwd != dir {
		t.Errorf("resume record: %+v", recs)
	}
}

func TestLaunchWaitExitCode(t *testing.T) {
	c := newCLI(t)
	dir := mkdir(t, "proj")
	out, _, code := c.run("launch", "--cwd", dir, "-p", "x", "--wait", "--env", "FAKE_EXIT=3")
	if code != 3 {
		t.Fatalf("launch --wait: exit %d, want the agent's 3\n%s", code, out)
	}
	if !strings.Contains(out, "ended (exit 3)") {
		t.Errorf("output %q", out)
	}
	// A failing on-create hook: exit 1, and the agent keeps running.
	out, errOut, code := c.run("launch", "--cwd", dir, "-p", "x", "--env", "FAKE_SLEEP=5", "--on-create", "exit 4")
	if code != 1 || !strings.Contains(errOut, "on-create hook") || !strings.Contains(errOut, "the agent keeps running") {
		t.Fatalf("on-create failure: exit %d %q", code, errOut)
	}
	id := strings.Fields(out)[1]
	if s := c.status(id); s.Status != "running" {
		t.Errorf("after a failed on-create hook the agent must run: %+v", s)
	}
}

// A launch record forged to point at an innocent live process (wrong start
// time): nothing shows it alive and stop never signals it.
func TestStopForgedRecord(t *testing.T) {
	c := newCLI(t)
	victim := exec.Command("sleep", "30")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	p, err := proc.Lookup(victim.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	st := c.store()
	sid := "0f0f0f0f-0000-4000-8000-000000000001"
	err = st.UpdateLaunches(func(l *meta.Launches) (bool, error) {
		l.Records = append(l.Records, meta.Launch{ID: "l-forged", Kind: "launch", Adapter: "claude-code", SessionID: sid, Cwd: "/",
			PID: p.PID, PGID: p.PID, StartTicks: p.StartTicks + 12345, BootID: proc.CurrentBootID(), LaunchedAt: time.Now(),
			FinalisedAt: ptr(time.Now()), EndedAt: ptr(time.Now())})
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.status(sid); s.Status == "running" || s.PID != 0 {
		t.Errorf("a forged record made the session look alive: %+v", s)
	}
	// The session has ended, so stop has nothing to signal: "already stopped"
	// (issue 37 item 9: exit 0, was exit 1 "is not running").
	out, errOut, code := c.run("stop", "--force", sid)
	if code != 0 || !strings.HasPrefix(out, "already stopped "+sid) {
		t.Errorf("stop of a forged record: exit %d %q %q", code, out, errOut)
	}
	if _, err := proc.Lookup(victim.Process.Pid); err != nil {
		t.Fatal("stop signalled a process whose start time did not match")
	}
}

func ptr[T any](v T) *T { return &v }

// The supervisor dies mid-run: list keeps showing the session running (the
// agent's process is the truth). After the agent ends, the next commands —
// several at once — finalise it exactly once: on-complete and the signed webhook
// fire once.
func TestSupervisorKilledThenListFinalises(t *testing.T) {
	c := newCLI(t)
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m := hmac.New(sha256.New, []byte("topsecret"))
		m.Write(b)
		if got, want := r.Header.Get("X-Hub-Signature-256"), "sha256="+hex.EncodeToString(m.Sum(nil)); got != want {
			t.Errorf("signature %q, want %q", got, want)
		}
		var v map[string]any
		json.Unmarshal(b, &v)
		mu.Lock()
		bodies = append(bodies, v)
		mu.Unlock()
	}))
	defer srv.Close()
	c.env = append(c.env, "AGENTCTL_WEBHOOK_URL="+srv.URL, "AGENTCTL_WEBHOOK_SECRET=topsecret")
	dir := mkdir(t, "proj")
	hook := filepath.Join(t.TempDir(), "hook.log")
	finish := filepath.Join(t.TempDir(), "finish")
	l := c.launch(dir, "--env", "FAKE_WAIT_FOR="+finish, "--on-complete", "echo $AGENTCTL_SESSION_ID >> "+hook, "--callback-session", "cb-1", "--callback-agent", "agent-7")
	recs, _ := c.store().ReadLaunches()
	sup := recs[0].SupervisorPID
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the supervisor to die", func() bool { return !c.store().IsAlive(sup, recs[0].SupervisorStart, "") })
	ss := c.list()
	if len(ss) != 1 || ss[0].Status != "running" || ss[0].Evidence != "launch-record" || ss[0].Meta["callback_session_key"] != "cb-1" || ss[0].Meta["callback_agent_id"] != "agent-7" {
		t.Fatalf("with the supervisor dead: %+v", ss)
	}
	os.WriteFile(finish, nil, 0o644)
	waitFor(t, 10*time.Second, "the agent to end", func() bool { _, err := proc.Lookup(l.PID); return err != nil })
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.run("list", "-a") }()
	}
	wg.Wait()
	// The slow half runs detached (agentctl __finalise): wait until it is done.
	waitFor(t, 10*time.Second, "on-complete and the webhook", func() bool { return c.ended(l.LaunchID) })
	if got := strings.Fields(readAll(t, hook)); len(got) != 1 || got[0] != l.ID {
		t.Errorf("on-complete ran %d times: %v", len(got), got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 {
		t.Fatalf("webhook delivered %d times, want 1", len(bodies))
	}
	if b := bodies[0]; b["session_id"] != l.ID || b["exit_status"] != nil || b["meta"].(map[string]any)["callback_session_key"] != "cb-1" {
		t.Errorf("webhook body %v", b)
	}
	s := c.status(l.ID)
	if s.Status != "stopped" || s.ExitCode != nil {
		t.Errorf("after lazy finalisation: %+v (exit code unknown → null)", s)
	}
	if out := c.ok("locks"); out != "No active locks.\n" {
		t.Errorf("locks: %s", out)
	}
}

func readAll(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A launch whose supervisor died ends while nobody watches; its on-complete hook
// takes a minute. The `list` that notices the end finalises it and returns at
// once — the hook runs in a detached `agentctl __finalise` — and the hook runs
// exactly once however many commands look meanwhile.
func TestSlowOnCompleteDoesNotDelayList(t *testing.T) {
	c := newCLI(t)
	dir := mkdir(t, "proj")
	hook := filepath.Join(t.TempDir(), "hook.pids")
	// The agent ends only once its supervisor is dead (under load, launch can
	// return after a timed agent ended and the supervisor finalised it).
	finish := filepath.Join(t.TempDir(), "finish")
	l := c.launch(dir, "--env", "FAKE_WAIT_FOR="+finish, "--on-complete", "echo $$ >> "+hook+"; sleep 60")
	t.Cleanup(func() {
		// The hook's shell leads its own process group.
		for _, f := range strings.Fields(readIfAny(hook)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
		waitFor(t, 10*time.Second, "the finaliser to finish", func() bool { return c.ended(l.LaunchID) })
	})
	recs, _ := c.store().ReadLaunches()
	if err := syscall.Kill(recs[0].SupervisorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the supervisor to die", func() bool {
		return !c.store().IsAlive(recs[0].SupervisorPID, recs[0].SupervisorStart, "")
	})
	os.WriteFile(finish, nil, 0o644)
	waitFor(t, 10*time.Second, "the agent and its supervisor to end", func() bool {
		_, err := proc.Lookup(l.PID)
		return err != nil && !c.store().IsAlive(recs[0].SupervisorPID, recs[0].SupervisorStart, "")
	})

	start := time.Now()
	ss := c.list("-a")
	took := time.Since(start)
	t.Logf("the list that finalised took %s", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Fatalf("list took %s: it waited for the on-complete hook", took)
	}
	if len(ss) != 1 || ss[0].Status != "stopped" {
		t.Errorf("list: %+v", ss)
	}
	waitFor(t, 10*time.Second, "the hook to start", func() bool { return readIfAny(hook) != "" })
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(2)
		go func() { defer wg.Done(); c.run("list", "-a") }()
		go func() { defer wg.Done(); c.run("status", l.ID) }()
	}
	wg.Wait()
	c.ok("sweep")
	if got := strings.Fields(readIfAny(hook)); len(got) != 1 {
		t.Errorf("on-complete started %d times (%v), want once", len(got), got)
	}
	if c.ended(l.LaunchID) {
		t.Error("the launch's slow half is done while its hook still sleeps")
	}
}

func readIfAny(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// --spec is recorded as an absolute path by a single and by a group launch
// alike: the record is read from other directories (compare, accept), where
// a relative path names another file or none.
func TestLaunchRecordsSpecAbsolute(t *testing.T) {
	c := newCLI(t)
	repo := gittest.NewRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "spec.md"), []byte("the spec\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, repo, "add", "spec.md")
	gittest.Run(t, repo, "commit", "-q", "-m", "spec")
	for _, args := range [][]string{
		{"launch", "-p", "x", "--spec", "spec.md"},
		{"launch", "--adapter", "claude-code", "--model", "a,b", "-p", "x", "--spec", "spec.md"},
	} {
		cmd := exec.Command(c.bin, args...)
		cmd.Env, cmd.Dir = c.env, repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("agentctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	c.settle()
	recs, err := c.store().ReadLaunches()
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d launch records (%v), want 3", len(recs), err)
	}
	for _, r := range recs {
		if want := filepath.Join(repo, "spec.md"); r.Spec != want {
			t.Errorf("launch %s (group %q) records spec %q, want %q", r.ID, r.Group, r.Spec, want)
		}
	}
}
