package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// launcher is agentctl set up to launch the real Claude Code against the stub:
// the agent's environment (ANTHROPIC_BASE_URL, key, no telemetry) is agentctl's,
// which hands it on (docs/agents/claude-code.md §6.2 keeps ANTHROPIC_BASE_URL).
func launcher(t *testing.T, c *harness.Claude) *harness.Agentctl {
	t.Helper()
	a := harness.NewAgentctl(t, c.Home)
	a.Env = c.Env.Merge(harness.Env{"AGENTCTL_HOME": a.State, "NO_COLOR": "1", "AGENTCTL_CLAUDE_BIN": c.Bin})
	// Launched agents are detached on purpose; make sure none outlives the test.
	t.Cleanup(func() {
		recs, _ := meta.NewStore(a.State).ReadLaunches()
		for _, r := range recs {
			if p, err := proc.Lookup(r.PID); err == nil && p.StartTicks == r.StartTicks {
				syscall.Kill(-r.PGID, syscall.SIGKILL)
			}
		}
	})
	return a
}

type launchedJSON struct {
	ID       string `json:"id"`
	PID      int    `json:"pid"`
	Log      string `json:"log"`
	LaunchID string `json:"launch_id"`
}

func launchClaude(t *testing.T, a *harness.Agentctl, dir, prompt string, args ...string) launchedJSON {
	t.Helper()
	start := time.Now()
	out, errOut, code := a.Run(t, append([]string{"launch", "claude-code", "--json", "--cwd", dir, "-p", prompt}, args...)...)
	if code != 0 {
		t.Fatalf("launch: exit %d\n%s", code, errOut)
	}
	var l []launchedJSON
	if err := json.Unmarshal([]byte(out), &l); err != nil || len(l) != 1 || l[0].ID == "" {
		t.Fatalf("launch --json: %v\n%s", err, out)
	}
	// An open stdin pipe would make -p wait for EOF (or 3 s, then fail): the
	// prompt comes from a file, so the confirmation is quick. How quick is the
	// benchmarks' business (README "Performance"); on a loaded CI machine a
	// cold node start alone can take seconds, so this only reports it.
	t.Logf("launch confirmed in %s", time.Since(start).Round(time.Millisecond))
	return l[0]
}

type statusJSON struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Evidence string `json:"evidence"`
	PID      int    `json:"pid"`
	Cwd      string `json:"cwd"`
	ExitCode *int   `json:"exit_code"`
	LaunchID string `json:"launch_id"`
}

func statusOf(t *testing.T, a *harness.Agentctl, id string) statusJSON {
	t.Helper()
	var s statusJSON
	a.JSON(t, &s, "status", id)
	return s
}

// launch → list shows it running on launch-record evidence → wait returns the
// exit code → status stopped with exit_code 0; the transcript is Claude's own.
func TestLaunchClaudeWaitStatus(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		a := launcher(t, c)
		dir := harness.WorkDir(t, "webapp")
		prompt := "launched run HOLD=launch WORDS=3\nsecond line"
		l := launchClaude(t, a, dir, prompt)
		waitHeld(t, srv, "launch")
		s, ok := harness.Find(a.ListAlive(t), l.ID)
		if !ok || s.Status != "running" || s.Evidence != "launch-record" || s.PID != l.PID {
			t.Errorf("list while the reply is pending: %+v (found %v); want running on launch-record, pid %d", s, ok, l.PID)
		}
		if _, _, code := a.Run(t, "wait", "--timeout", "200ms", l.ID); code != 124 {
			t.Errorf("wait --timeout on a running session: exit %d, want 124", code)
		}
		srv.Release("launch")
		out, errOut, code := a.Run(t, "wait", "--timeout", "30s", l.ID)
		if code != 0 || out != l.ID+" stopped (exit 0)\n" {
			t.Fatalf("wait: exit %d, %q\n%s", code, out, errOut)
		}
		st := statusOf(t, a, l.ID)
		if st.Status != "stopped" || st.ExitCode == nil || *st.ExitCode != 0 || st.Cwd != dir || st.LaunchID != l.LaunchID {
			t.Errorf("status after the end: %+v", st)
		}
		b, err := os.ReadFile(c.Transcript(dir, l.ID))
		if err != nil || !strings.Contains(string(b), "second line") {
			t.Errorf("transcript of the launched session: %v (the multi-line prompt must arrive verbatim)", err)
		}
		if out, _, _ := a.Run(t, "locks"); out != "No active locks.\n" {
			t.Errorf("locks after the end:\n%s", out)
		}
	})
}

// stop on a real running agent: SIGINT to its group, exit observed, status
// stopped, nothing left alive.
func TestStopLaunchedClaude(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		a := launcher(t, c)
		dir := harness.WorkDir(t, "stopme")
		l := launchClaude(t, a, dir, "never answered HOLD=stop")
		waitHeld(t, srv, "stop")
		out, errOut, code := a.Run(t, "stop", l.ID)
		if code != 0 || out != "stopped "+l.ID+" (exit observed)\n" {
			t.Fatalf("stop: exit %d %q\n%s", code, out, errOut)
		}
		if _, err := proc.Lookup(l.PID); err == nil {
			t.Errorf("pid %d is still alive after stop", l.PID)
		}
		harness.Eventually(t, 10*time.Second, func() string {
			if st := statusOf(t, a, l.ID); st.Status != "stopped" || st.PID != 0 {
				return "status " + st.Status
			}
			return ""
		})
		if out, errOut, code := a.Run(t, "stop", l.ID); code != 0 || !strings.Contains(out, "already stopped "+l.ID) { // stop is idempotent
			t.Errorf("second stop: exit %d %q %q", code, out, errOut)
		}
	})
}

// resume appends to the same transcript under the same id, run from another
// directory (agentctl sets the start cwd), supervised like a launch.
func TestResumeLaunchedClaude(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		a := launcher(t, c)
		dir := harness.WorkDir(t, "resumable")
		l := launchClaude(t, a, dir, "first turn WORDS=2")
		if _, errOut, code := a.Run(t, "wait", "--timeout", "30s", l.ID); code != 0 {
			t.Fatalf("wait: %d %s", code, errOut)
		}
		transcript := c.Transcript(dir, l.ID)
		before := countLines(t, transcript)
		out, errOut, code := a.Run(t, "resume", l.ID, "second turn WORDS=2")
		if code != 0 || !strings.HasPrefix(out, "resumed "+l.ID+" (claude-code, pid ") {
			t.Fatalf("resume: exit %d %q\n%s\n%s", code, out, errOut, readLog(a.State))
		}
		if _, errOut, code := a.Run(t, "wait", "--timeout", "30s", l.ID); code != 0 {
			t.Fatalf("wait after resume: %d %s", code, errOut)
		}
		if after := countLines(t, transcript); after <= before {
			t.Errorf("resume did not append to %s (%d lines before, %d after)", transcript, before, after)
		}
		b, _ := os.ReadFile(transcript)
		if !strings.Contains(string(b), "second turn") {
			t.Error("the resumed prompt is not in the same transcript")
		}
	})
}

// An API error after the session was confirmed: the launch itself succeeded,
// the run failed — wait exits 1 and status says failed (pitfall 4: is_error
// counts, not subtype "success").
func TestLaunchedClaudeAPIError(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		a := launcher(t, c)
		l := launchClaude(t, a, harness.WorkDir(t, "apierr"), "break STATUS=400")
		out, _, code := a.Run(t, "wait", "--timeout", "30s", l.ID)
		if code != 1 || !strings.HasPrefix(out, l.ID+" failed (exit 1)") {
			t.Errorf("wait: exit %d %q; want 1 and failed", code, out)
		}
		if st := statusOf(t, a, l.ID); st.Status != "failed" {
			t.Errorf("status: %+v", st)
		}
	})
}

// Root guard (docs/agents/claude-code.md §6.2): as root, bypass permissions is refused up
// front unless the user vouches for a sandbox; with --sandbox it runs.
func TestLaunchClaudeRootGuard(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root only")
	}
	forEachClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		a := launcher(t, c)
		dir := harness.WorkDir(t, "root")
		_, errOut, code := a.Run(t, "launch", "--cwd", dir, "-p", "hi", "--permission-mode", "bypassPermissions")
		if code != 2 || !strings.Contains(errOut, "--sandbox") {
			t.Errorf("bypass as root without --sandbox: exit %d %q", code, errOut)
		}
		l := launchClaude(t, a, dir, "hi WORDS=1", "--permission-mode", "bypassPermissions", "--sandbox")
		if _, errOut, code := a.Run(t, "wait", "--timeout", "30s", l.ID); code != 0 {
			t.Errorf("bypass with --sandbox: wait exit %d %s", code, errOut)
		}
	})
}

// codex: launch (the thread id comes from codex's own thread.started), wait,
// resume with the full id (the same rollout grows), and stop mid-turn with
// SIGINT to the process (codex's graceful stop).
func TestLaunchCodex(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewCodex(t, srv)
	a := harness.NewAgentctl(t, c.Home)
	a.Env = c.Env.Merge(harness.Env{"AGENTCTL_HOME": a.State, "NO_COLOR": "1", "AGENTCTL_CODEX_BIN": c.Bin})
	t.Cleanup(func() {
		recs, _ := meta.NewStore(a.State).ReadLaunches()
		for _, r := range recs {
			if p, err := proc.Lookup(r.PID); err == nil && p.StartTicks == r.StartTicks {
				syscall.Kill(-r.PGID, syscall.SIGKILL)
			}
		}
	})
	dir := harness.WorkDir(t, "billing")
	out, errOut, code := a.Run(t, "launch", "codex", "--json", "--cwd", dir, "-p", "Say hello")
	if code != 0 {
		t.Fatalf("launch codex: exit %d\n%s", code, errOut)
	}
	var l []launchedJSON
	if err := json.Unmarshal([]byte(out), &l); err != nil || len(l) != 1 {
		t.Fatalf("launch --json: %v %s", err, out)
	}
	id := l[0].ID
	if out, errOut, code := a.Run(t, "wait", "--timeout", "60s", id); code != 0 || out != id+" stopped (exit 0)\n" {
		t.Fatalf("wait: exit %d %q\n%s", code, out, errOut)
	}
	rollouts := c.Rollouts()
	if len(rollouts) != 1 || !strings.HasSuffix(rollouts[0], "-"+id+".jsonl") {
		t.Fatalf("rollouts %v; the launched id %s must be codex's own thread id", rollouts, id)
	}
	before := countLines(t, rollouts[0])
	if out, errOut, code := a.Run(t, "resume", id, "Say more"); code != 0 || !strings.HasPrefix(out, "resumed "+id) {
		t.Fatalf("resume: exit %d %q\n%s\n%s", code, out, errOut, readLog(a.State))
	}
	if _, errOut, code := a.Run(t, "wait", "--timeout", "60s", id); code != 0 {
		t.Fatalf("wait after resume: %d %s", code, errOut)
	}
	if after := countLines(t, rollouts[0]); after <= before || len(c.Rollouts()) != 1 {
		t.Errorf("resume did not append to the same rollout (%d → %d lines, %d rollouts)", before, after, len(c.Rollouts()))
	}

	dir2 := harness.WorkDir(t, "stopme")
	out, errOut, code = a.Run(t, "launch", "codex", "--json", "--cwd", dir2, "-p", "slow HOLD=codex-stop")
	if code != 0 {
		t.Fatalf("launch: %d %s", code, errOut)
	}
	json.Unmarshal([]byte(out), &l)
	waitHeld(t, srv, "codex-stop")
	if out, errOut, code := a.Run(t, "stop", l[0].ID); code != 0 || out != "stopped "+l[0].ID+" (exit observed)\n" {
		t.Fatalf("stop: exit %d %q\n%s", code, out, errOut)
	}
	if _, err := proc.Lookup(l[0].PID); err == nil {
		t.Errorf("codex pid %d alive after stop", l[0].PID)
	}
}

// readLog returns the newest launch log (for failure messages).
func readLog(state string) string {
	m, _ := filepath.Glob(filepath.Join(state, "logs", "*.log"))
	if len(m) == 0 {
		return "(no launch log)"
	}
	b, _ := os.ReadFile(m[len(m)-1])
	return string(b)
}
