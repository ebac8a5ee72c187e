package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/synth"
)

// notify across hosts (issue 36 item 2) over two real sshd hosts: four
// overlapping one-shot runs and a --follow, each its own watcher, fire each
// transition of each host's sessions exactly once (with AGENTCTL_HOST); a
// host down for a run and back for the next fires the transition it went
// through meanwhile once. The transitions are into stopped: sessions that
// appear, ended, in a host's agent home (synthetic Claude Code sessions: no
// live agent runs on the hosts).
func TestNotifyAcrossHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("real sshd test skipped with -short")
	}
	t.Parallel()
	n := harness.NewSSHNet(t)
	homes := map[string]string{"hosta": claudeHome(t, 2, 51), "hostb": claudeHome(t, 2, 52)}
	envs := map[string]harness.Env{}
	sshds := map[string]*harness.SSHD{}
	for _, h := range []string{"hosta", "hostb"} {
		envs[h] = harness.HostEnv(t, homes[h])
		sshds[h] = n.Start(t, h, envs[h])
	}
	a := harness.NewAgentctl(t, harness.TempDir(t))
	a.Env = a.Env.With("AGENTCTL_SSH", n.SSHCommand())
	writeHostsConfig(t, a.State, `["hosta", "hostb"]`)

	// What each host itself lists: the transitions to expect.
	want := func() []string {
		var w []string
		for _, h := range []string{"hosta", "hostb"} {
			out, errOut, code := runAs(t, envs[h], "list", "-a", "--json")
			if code != 0 {
				t.Fatalf("%s's own list: exit %d\n%s", h, code, errOut)
			}
			for _, s := range decodeArray(t, h+" list", out) {
				if s["status"] != "stopped" {
					t.Fatalf("%s: session %v is %v, want stopped", h, s["id"], s["status"])
				}
				w = append(w, h+":"+s["id"].(string)+":stopped")
			}
		}
		sort.Strings(w)
		return w
	}
	logs := harness.TempDir(t)
	cronLog, followLog := filepath.Join(logs, "cron"), filepath.Join(logs, "follow")
	lines := func(p string) []string {
		b, _ := os.ReadFile(p)
		l := strings.Fields(string(b))
		sort.Strings(l)
		return l
	}
	record := func(p string) string {
		return `echo "$AGENTCTL_HOST:$AGENTCTL_SESSION_ID:$AGENTCTL_STATUS" >> ` + p
	}
	oneShot := func() (string, int) {
		_, errOut, code := a.Run(t, "notify", "--hosts", "all", "--on", "stopped", "--timeout", "2s", "--exec", record(cronLog))
		return errOut, code
	}
	// Four loops of one-shot runs, overlapping, for d.
	cron := func(d time.Duration) {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []string
		end := time.Now().Add(d)
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) {
					if errOut, code := oneShot(); code != 0 || errOut != "" {
						mu.Lock()
						errs = append(errs, errOut)
						mu.Unlock()
					}
					time.Sleep(300 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Errorf("%d one-shot notify runs failed or warned; first: %s", len(errs), errs[0])
		}
	}

	// One call first brings each host's control master up: calls that all
	// start at once before it is there would each connect on their own.
	if _, errOut, code := a.Run(t, "list", "--hosts", "all"); code != 0 {
		t.Fatalf("list --hosts all: exit %d\n%s", code, errOut)
	}
	follow := exec.Command(a.Bin, "notify", "--hosts", "all", "--follow", "--interval", "1s", "--on", "stopped",
		"--timeout", "2s", "--home", a.Home, "--exec", record(followLog))
	follow.Env = a.Env.List()
	var followOut strings.Builder
	follow.Stdout, follow.Stderr = &followOut, &followOut
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		follow.Process.Signal(os.Interrupt)
		follow.Wait()
	})

	w := want()
	cron(4 * time.Second)
	if d := cmp.Diff(w, lines(cronLog)); d != "" {
		t.Errorf("4 overlapping one-shot runs: each transition once (-want +got):\n%s", d)
	}
	harness.Eventually(t, 15*time.Second, func() string {
		if len(lines(followLog)) < len(w) {
			return "notify --follow fired " + strings.Join(lines(followLog), " ") + "\n" + followOut.String()
		}
		return ""
	})

	// hostb goes down; a session ends there meanwhile.
	sshds["hostb"].Down(t)
	if err := synth.WriteClaudeHome(homes["hostb"], 1, 2000, 6000, 53); err != nil {
		t.Fatal(err)
	}
	errOut, code := oneShot()
	if code != 0 || !strings.Contains(errOut, "warning: hostb: connection refused") {
		t.Errorf("one-shot with hostb down: exit %d, stderr %q; want 0 and a warning naming hostb", code, errOut)
	}
	if d := cmp.Diff(w, lines(cronLog)); d != "" {
		t.Errorf("with hostb down nothing more fires (-want +got):\n%s", d)
	}
	time.Sleep(2 * time.Second) // --follow polls with hostb down too
	sshds["hostb"].Up(t)
	w = want()
	if len(w) != 5 {
		t.Fatalf("after the new session on hostb: %d sessions listed, want 5", len(w))
	}
	cron(3 * time.Second)
	if d := cmp.Diff(w, lines(cronLog)); d != "" {
		t.Errorf("hostb back: its missed transition fires once (-want +got):\n%s", d)
	}
	harness.Eventually(t, 15*time.Second, func() string {
		if len(lines(followLog)) < len(w) {
			return "notify --follow fired " + strings.Join(lines(followLog), " ") + "\n" + followOut.String()
		}
		return ""
	})
	time.Sleep(2 * time.Second)
	if d := cmp.Diff(w, lines(followLog)); d != "" {
		t.Errorf("notify --follow across hosts: each transition once (-want +got):\n%s\n%s", d, followOut.String())
	}
	// The --follow's polls and every one-shot run shared one connection to
	// hosta (the control master), not one per poll.
	if got := sshds["hosta"].Accepted(t); got != 1 {
		t.Errorf("hosta accepted %d ssh connections over the --follow and the one-shot runs; want 1", got)
	}
}
