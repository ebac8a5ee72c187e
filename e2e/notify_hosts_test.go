package e2e

import (
	"encoding/json"
	"fmt"
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
	"github.com/agentctl/agentctl/e2e/stub"
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

// issue 36 item 2, as the issue words it: `notify --hosts all --on waiting
// --exec …` over two real sshd hosts, each the HOME of a real `opencode serve`
// whose bash tool asks for permission (a real waiting session: the server
// lists the request). Four overlapping loops of one-shot runs and a --follow,
// two watchers, each fire each transition into waiting of each host's
// sessions exactly once, with AGENTCTL_HOST: the first request on each host,
// a second one of the same session on hosta once the watchers have seen it
// leave waiting, and a new session on hostb that starts waiting while hostb
// is down (its one-shot run warns naming hostb and fires nothing more) and
// fires once when hostb answers again. The expected firings are what the
// servers themselves list (GET /permission), not agentctl's word.
func TestNotifyWaitingAcrossHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("real sshd test skipped with -short")
	}
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	type ocHost struct {
		name string
		o    *harness.OpenCode
		oc   ocServer
		dir  string
		env  harness.Env
		sshd *harness.SSHD
	}
	n := harness.NewSSHNet(t)
	hosts := map[string]*ocHost{}
	names := []string{"hosta", "hostb"}
	for _, name := range names {
		h := &ocHost{name: name, o: harness.NewOpenCode(t, srv), dir: harness.WorkDir(t, "notify-"+name)}
		h.o.AskBeforeBash(t)
		h.oc = startOCServe(t, h.o, h.dir, "opencode-serve-"+name)
		h.env = harness.HostEnv(t, h.o.Home)
		h.sshd = n.Start(t, name, h.env)
		hosts[name] = h
	}
	for _, h := range hosts {
		h.oc.waitHealthy(180 * time.Second)
	}
	a := harness.NewAgentctl(t, harness.TempDir(t))
	a.Env = a.Env.With("AGENTCTL_SSH", n.SSHCommand())
	writeHostsConfig(t, a.State, `["hosta", "hostb"]`)

	// request is the id of the permission request the server h lists for
	// session sid ("" when none).
	request := func(h *ocHost, sid string) string {
		var reqs []struct {
			ID        string `json:"id"`
			SessionID string `json:"sessionID"`
		}
		h.oc.get("/permission", &reqs)
		for _, r := range reqs {
			if r.SessionID == sid {
				return r.ID
			}
		}
		return ""
	}
	// hostStatus is what the host's own agentctl says of sid.
	hostStatus := func(h *ocHost, sid string) string {
		out, _, code := runAs(t, h.env, "status", "--json", sid)
		if code != 0 {
			return fmt.Sprintf("exit %d", code)
		}
		var s struct{ Status string }
		json.Unmarshal([]byte(out), &s)
		return s.Status
	}
	// ask makes session sid of h (a new one when sid is "") run a bash command
	// that needs permission, and returns once the server lists the request and
	// the host's own agentctl reports the session waiting.
	ask := func(h *ocHost, sid, file string) string {
		t.Helper()
		if sid == "" {
			var sess struct {
				ID string `json:"id"`
			}
			h.oc.post("/session", `{}`, &sess)
			sid = sess.ID
		}
		h.oc.post("/session/"+sid+"/prompt_async",
			`{"model":{"providerID":"fake","modelID":"fake-model"},"parts":[{"type":"text","text":"TOOLCMD: touch `+file+`"}]}`, nil)
		eventually(t, 180*time.Second, func() (bool, string) {
			if request(h, sid) == "" {
				return false, h.name + ": the server lists no permission request for " + sid
			}
			st := hostStatus(h, sid)
			return st == "waiting", h.name + ": the server asks, the host's agentctl says " + st
		})
		return sid
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
		_, errOut, code := a.Run(t, "notify", "--hosts", "all", "--on", "waiting", "--timeout", "5s", "--exec", record(cronLog))
		return errOut, code
	}
	// cron runs four loops of overlapping one-shot runs until the cron log has
	// n lines, and for settle more.
	cron := func(n int, settle time.Duration) {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []string
		limit := time.Now().Add(120 * time.Second)
		var end time.Time
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					mu.Lock()
					if end.IsZero() && len(lines(cronLog)) >= n {
						end = time.Now().Add(settle)
					}
					stop := (!end.IsZero() && time.Now().After(end)) || time.Now().After(limit)
					mu.Unlock()
					if stop {
						return
					}
					if errOut, code := oneShot(); code != 0 || errOut != "" {
						mu.Lock()
						errs = append(errs, errOut)
						mu.Unlock()
					}
					time.Sleep(200 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Errorf("%d one-shot notify runs failed or warned; first: %s", len(errs), errs[0])
		}
	}
	followed := func(n int) {
		t.Helper()
		harness.Eventually(t, 60*time.Second, func() string {
			if len(lines(followLog)) < n {
				return "notify --follow fired " + strings.Join(lines(followLog), " ")
			}
			return ""
		})
	}

	ha, hb := hosts["hosta"], hosts["hostb"]
	a1 := ask(ha, "", "a1")
	b1 := ask(hb, "", "b1")
	want := []string{"hosta:" + a1 + ":waiting", "hostb:" + b1 + ":waiting"}

	// One call first brings each host's control master up.
	if _, errOut, code := a.Run(t, "list", "--hosts", "all"); code != 0 {
		t.Fatalf("list --hosts all: exit %d\n%s", code, errOut)
	}
	follow := exec.Command(a.Bin, "notify", "--hosts", "all", "--follow", "--interval", "1s", "--on", "waiting",
		"--timeout", "5s", "--home", a.Home, "--exec", record(followLog))
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

	cron(len(want), 3*time.Second)
	sort.Strings(want)
	if d := cmp.Diff(want, lines(cronLog)); d != "" {
		t.Errorf("4 overlapping one-shot runs: each host's waiting session fires once (-want +got):\n%s", d)
	}
	followed(len(want))

	// A second transition of a1: approved, it leaves waiting; once both
	// watchers have seen that (their marks of a1 on hosta no longer say
	// waiting), it asks again.
	ha.oc.post("/permission/"+request(ha, a1)+"/reply", `{"reply":"once"}`, nil)
	eventually(t, 120*time.Second, func() (bool, string) {
		st := hostStatus(ha, a1)
		return st != "waiting" && exists(filepath.Join(ha.dir, "a1")), "after approving a1: " + st
	})
	eventually(t, 120*time.Second, func() (bool, string) {
		oneShot()
		var m struct {
			Watchers map[string]map[string]struct{ Status string } `json:"watchers"`
		}
		b, _ := os.ReadFile(filepath.Join(a.State, "notify.json"))
		if err := json.Unmarshal(b, &m); err != nil {
			return false, "notify.json: " + err.Error()
		}
		seen := 0
		for w, marks := range m.Watchers {
			if !strings.HasSuffix(w, "@hosta") {
				continue
			}
			if mk, ok := marks["opencode/"+a1]; ok && mk.Status == "waiting" {
				return false, "watcher " + w + " still marks a1 waiting"
			}
			seen++
		}
		return seen == 2, fmt.Sprintf("%d watchers of hosta in notify.json, want 2: %s", seen, b)
	})
	ask(ha, a1, "a2")
	want = append(want, "hosta:"+a1+":waiting")
	sort.Strings(want)
	cron(len(want), 3*time.Second)
	if d := cmp.Diff(want, lines(cronLog)); d != "" {
		t.Errorf("a1 waiting again: fires once more (-want +got):\n%s", d)
	}
	followed(len(want))

	// hostb goes down; a new session there starts waiting meanwhile.
	hb.sshd.Down(t)
	b2 := ask(hb, "", "b2")
	errOut, code := oneShot()
	if code != 0 || !strings.Contains(errOut, "warning: hostb: connection refused") {
		t.Errorf("one-shot with hostb down: exit %d, stderr %q; want 0 and a warning naming hostb", code, errOut)
	}
	if d := cmp.Diff(want, lines(cronLog)); d != "" {
		t.Errorf("with hostb down nothing more fires (-want +got):\n%s", d)
	}
	time.Sleep(3 * time.Second) // --follow polls with hostb down too
	if d := cmp.Diff(want, lines(followLog)); d != "" {
		t.Errorf("notify --follow with hostb down: nothing more fires (-want +got):\n%s\n%s", d, followOut.String())
	}
	hb.sshd.Up(t)
	want = append(want, "hostb:"+b2+":waiting")
	sort.Strings(want)
	cron(len(want), 3*time.Second)
	if d := cmp.Diff(want, lines(cronLog)); d != "" {
		t.Errorf("hostb back: its missed transition fires once (-want +got):\n%s", d)
	}
	followed(len(want))
	time.Sleep(3 * time.Second)
	if d := cmp.Diff(want, lines(followLog)); d != "" {
		t.Errorf("notify --follow across hosts: each transition once (-want +got):\n%s\n%s", d, followOut.String())
	}
	// What every host's server still asks is what fired last: b1, a1 and b2
	// are waiting now.
	for _, c := range []struct {
		h   *ocHost
		sid string
	}{{ha, a1}, {hb, b1}, {hb, b2}} {
		if request(c.h, c.sid) == "" {
			t.Errorf("%s: no permission request for %s at the end", c.h.name, c.sid)
		}
	}
}
