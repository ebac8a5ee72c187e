package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/proc"
)

// argvWatch samples every process's argv every 100 ms for a marker.
type argvWatch struct {
	mu      sync.Mutex
	samples int
	hits    []string
	stop    chan struct{}
	done    chan struct{}
}

func watchArgv(marker string) *argvWatch {
	w := &argvWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			tab := proc.Snapshot()
			var hits []string
			for _, p := range tab.All() {
				argv, err := tab.Argv(p.PID)
				if err == nil && strings.Contains(strings.Join(argv, "\x00"), marker) {
					hits = append(hits, time.Now().Format("15:04:05.000")+" pid "+itoa(p.PID)+": "+strings.Join(argv, " "))
				}
			}
			w.mu.Lock()
			w.samples++
			w.hits = append(w.hits, hits...)
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *argvWatch) finish() (int, []string) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples, w.hits
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// `launch claude-code --background` end to end, from a cold daemon: the id is
// confirmed from Claude's registry, status says running then idle as a
// background session, `claude stop <short>` ends it, `wait` exits 0 with the
// session stopped, on-complete runs exactly once, and the prompt (a unique
// marker) is in no process's argv at any 100 ms sample from the launch on.
func TestClaudeBackgroundLaunch(t *testing.T) {
	forEachBackgroundClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		dir := harness.WorkDir(t, "bg")
		seedClaudeJSON(t, c, dir)
		a := harness.NewAgentctl(t, c.Home)
		a.Env = c.Env.Merge(harness.Env{"AGENTCTL_HOME": a.State, "NO_COLOR": "1", "AGENTCTL_CLAUDE_BIN": c.Bin})
		rb := make([]byte, 8)
		_, _ = rand.Read(rb)
		marker := "BGMARK" + hex.EncodeToString(rb)
		hookOut := filepath.Join(t.TempDir(), "hook.txt")
		hook := `echo "$AGENTCTL_EXIT_CODE" >> ` + hookOut

		w := watchArgv(marker)
		start := time.Now()
		// The prompt reaches agentctl on stdin too: no argv anywhere may hold it.
		lc := exec.Command(a.Bin, "launch", "claude-code", "--background", "--json", "--cwd", dir, "-p", "-",
			"--on-complete", hook, "--home", a.Home)
		lc.Env, lc.Dir = a.Env.List(), a.Home
		lc.Stdin = strings.NewReader(marker + " background launch HOLD=bgl")
		var lout, lerr strings.Builder
		lc.Stdout, lc.Stderr = &lout, &lerr
		code := 0
		if err := lc.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("agentctl launch: %v", err)
			}
			code = ee.ExitCode()
		}
		out, errOut := lout.String(), lerr.String()
		if code != 0 {
			w.finish()
			t.Fatalf("launch --background: exit %d\n%s%s", code, out, errOut)
		}
		t.Logf("launch --background took %s: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
		var res []struct {
			ID    string `json:"id"`
			PID   int    `json:"pid"`
			Kind  string `json:"kind"`
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 {
			t.Fatalf("launch --json: %v\n%s", err, out)
		}
		l := res[0]
		if l.Kind != "background" || !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(l.JobID) || !strings.HasPrefix(l.ID, l.JobID) || l.PID <= 0 {
			t.Fatalf("launch --json: %+v; want kind background, an 8-hex job_id prefixing the session id, a pid", l)
		}
		waitHeldFor(t, srv, "bgl", 90*time.Second)
		// Claude's own list names the same session and PID.
		var mine *claudeAgent
		for _, ag := range claudeAgents(t, c, dir, false) {
			if ag.ID == l.JobID {
				ag := ag
				mine = &ag
			}
		}
		if mine == nil || mine.SessionID != l.ID || mine.PID != l.PID {
			t.Errorf("claude agents --json: %+v; want session %s pid %d", mine, l.ID, l.PID)
		}
		harness.Eventually(t, 20*time.Second, func() string {
			s := a.Status(t, l.JobID)
			if s.Status != "running" || s.Kind != "background" || s.JobID != l.JobID || s.ID != l.ID {
				return "status " + l.JobID + ": " + s.ID + " " + s.Status + " kind " + s.Kind + "; want running background " + l.ID
			}
			return ""
		})
		srv.Release("bgl")
		harness.Eventually(t, 60*time.Second, func() string {
			if s := a.Status(t, l.ID); s.Status != "idle" {
				return "status after the reply: " + s.Status + " (" + s.EvidenceDetail + "), want idle"
			}
			return ""
		})

		// `wait` blocks until Claude's own stop ends the session.
		wcmd := exec.Command(a.Bin, "wait", l.ID, "--json", "--home", a.Home)
		wcmd.Env, wcmd.Dir = a.Env.List(), a.Home
		var wout, werr strings.Builder
		wcmd.Stdout, wcmd.Stderr = &wout, &werr
		if err := wcmd.Start(); err != nil {
			t.Fatal(err)
		}
		wdone := make(chan error, 1)
		go func() { wdone <- wcmd.Wait() }()
		time.Sleep(time.Second)
		p := harness.Start(t, harness.Spec{Path: c.Bin, Args: []string{"stop", l.JobID}, Dir: dir, Env: c.Env, Name: "claude-stop"})
		if code := p.Wait(t, 90*time.Second); code != 0 {
			t.Fatalf("claude stop %s exited %d: %s%s", l.JobID, code, p.Stdout(), p.Stderr())
		}
		select {
		case err := <-wdone:
			if err != nil {
				t.Errorf("agentctl wait after claude stop: %v (want exit 0)\n%s%s", err, wout.String(), werr.String())
				lo, _, _ := a.Run(t, "status", l.ID, "--json")
				t.Logf("status: %s", lo)
				b, _ := os.ReadFile(filepath.Join(a.State, "launches.json"))
				t.Logf("launches.json: %s", b)
			}
		case <-time.After(30 * time.Second):
			_ = wcmd.Process.Kill()
			t.Fatalf("agentctl wait did not return within 30 s of claude stop")
		}
		var wl struct {
			Status   string `json:"status"`
			ExitCode *int   `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(wout.String())), &wl); err != nil || wl.Status != "stopped" || wl.ExitCode == nil || *wl.ExitCode != 0 {
			t.Errorf("wait --json after claude stop: %s; want stopped, exit_code 0", wout.String())
		}
		harness.Eventually(t, 20*time.Second, func() string {
			if got := hookLines(hookOut); len(got) != 1 || got[0] != "0" {
				return "on-complete ran " + strings.Join(got, ",") + "; want once with exit code 0"
			}
			return ""
		})
		time.Sleep(2 * time.Second)
		a.ListAlive(t) // a reading command must not run the hook again
		if got := hookLines(hookOut); len(got) != 1 {
			t.Errorf("on-complete ran %d times, want once: %v", len(got), got)
		}
		s := a.Status(t, l.ID)
		if s.Status != "stopped" || s.Kind != "background" {
			t.Errorf("after claude stop: %s (%s: %s), kind %q; want stopped, background", s.Status, s.Evidence, s.EvidenceDetail, s.Kind)
		}

		// A second launch (the daemon is warm now), human output: the attach
		// hint; then agentctl's own stop, which asks Claude first: the job
		// record says stopped, `wait` exits 0, on-complete runs once.
		hook2 := filepath.Join(t.TempDir(), "hook2.txt")
		lc = exec.Command(a.Bin, "launch", "claude-code", "--background", "--cwd", dir, "-p", "-",
			"--on-complete", `echo "$AGENTCTL_EXIT_CODE" >> `+hook2, "--home", a.Home)
		lc.Env, lc.Dir = a.Env.List(), a.Home
		lc.Stdin = strings.NewReader(marker + " second HOLD=bg2")
		hout, err := lc.Output()
		if err != nil {
			t.Fatalf("second launch --background: %v\n%s", err, hout)
		}
		m := regexp.MustCompile("background session ([0-9a-f]{8}).*`claude attach ([0-9a-f]{8})` opens it").FindStringSubmatch(string(hout))
		if m == nil || m[1] != m[2] {
			t.Fatalf("launch --background printed %q; want the job id and the `claude attach` hint", hout)
		}
		short2 := m[1]
		waitHeldFor(t, srv, "bg2", 90*time.Second)
		sout, serr, scode := a.Run(t, "stop", short2, "--json")
		var sres struct {
			Via          string `json:"via"`
			ExitObserved bool   `json:"exit_observed"`
		}
		_ = json.Unmarshal([]byte(sout), &sres)
		if scode != 0 || sres.Via != "claude stop "+short2 || !sres.ExitObserved {
			t.Errorf("agentctl stop %s: exit %d, %s%s; want via claude stop", short2, scode, sout, serr)
		}
		if st, _ := jobRecordState(c, short2); st != "stopped" {
			t.Errorf("after agentctl stop, Claude's job record says %q, want stopped", st)
		}
		wout2, werr2, wcode2 := a.Run(t, "wait", short2, "--json")
		var wl2 struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal([]byte(strings.TrimSpace(wout2)), &wl2)
		if wcode2 != 0 || wl2.Status != "stopped" {
			t.Errorf("wait after agentctl stop: exit %d %s%s; want 0, stopped", wcode2, wout2, werr2)
		}
		harness.Eventually(t, 20*time.Second, func() string {
			if got := hookLines(hook2); len(got) != 1 || got[0] != "0" {
				return "on-complete after agentctl stop ran " + strings.Join(got, ",") + "; want once with 0"
			}
			return ""
		})

		n, hits := w.finish()
		t.Logf("%d argv samples of every process over %s", n, time.Since(start).Round(time.Second))
		if n < 50 {
			t.Errorf("only %d argv samples; want at least 50 to mean anything", n)
		}
		if len(hits) > 0 {
			t.Errorf("the prompt was in a process's argv:\n%s", strings.Join(hits, "\n"))
		}
	})
}

// jobRecordState reads Claude's job record of short.
func jobRecordState(c *harness.Claude, short string) (string, error) {
	b, err := os.ReadFile(filepath.Join(c.Home, ".claude", "jobs", short, "state.json"))
	if err != nil {
		return "", err
	}
	var j struct {
		State string `json:"state"`
	}
	return j.State, json.Unmarshal(b, &j)
}

// A background launch over its --max-duration: the supervisor stops it
// Claude's way (the job record says stopped, not done), the run ends with
// exit_reason budget:duration and on-complete runs once.
func TestClaudeBackgroundLaunchBudget(t *testing.T) {
	forEachBackgroundClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		dir := harness.WorkDir(t, "bg")
		seedClaudeJSON(t, c, dir)
		a := harness.NewAgentctl(t, c.Home)
		a.Env = c.Env.Merge(harness.Env{"AGENTCTL_HOME": a.State, "NO_COLOR": "1", "AGENTCTL_CLAUDE_BIN": c.Bin})
		hookOut := filepath.Join(t.TempDir(), "hook.txt")
		out, errOut, code := a.RunLong(t, 120*time.Second, "launch", "claude-code", "--background", "--json", "--cwd", dir,
			"-p", "held HOLD=bgbudget", "--max-duration", "5s", "--on-complete", `echo "$AGENTCTL_EXIT_CODE" >> `+hookOut)
		if code != 0 {
			t.Fatalf("launch --background --max-duration: exit %d\n%s%s", code, out, errOut)
		}
		var res []struct {
			ID    string `json:"id"`
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 || res[0].JobID == "" {
			t.Fatalf("launch --json: %v\n%s", err, out)
		}
		waitHeldFor(t, srv, "bgbudget", 90*time.Second)
		wout, werr, wcode := a.RunLong(t, 60*time.Second, "wait", res[0].ID, "--json")
		var wl struct {
			Status     string `json:"status"`
			ExitReason string `json:"exit_reason"`
		}
		_ = json.Unmarshal([]byte(strings.TrimSpace(wout)), &wl)
		if wl.Status != "stopped" || wl.ExitReason != "budget:duration" {
			t.Errorf("wait after the budget: exit %d %s%s; want stopped with exit_reason budget:duration", wcode, wout, werr)
		}
		if st, _ := jobRecordState(c, res[0].JobID); st != "stopped" {
			t.Errorf("after the budget stop Claude's job record says %q, want stopped (stopped Claude's way)", st)
		}
		harness.Eventually(t, 20*time.Second, func() string {
			if got := hookLines(hookOut); len(got) != 1 {
				return "on-complete ran " + strings.Join(got, ",") + "; want once"
			}
			return ""
		})
	})
}
