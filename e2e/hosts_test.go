package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/e2e/synth"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// Several machines (README "Several machines") against two real OpenSSH
// servers on 127.0.0.1, each standing for one host with its own agent home and
// agentctl state; agentctl reaches them with AGENTCTL_SSH="ssh -F <config>".

// runAs runs agentctl as one machine would: env is the whole environment, no
// --home. It never fails the test by itself.
func runAs(t *testing.T, env harness.Env, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(harness.AgentctlBin(t), args...)
	cmd.Env = env.List()
	cmd.Dir = env["HOME"]
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentctl %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// claudeHome writes n synthetic Claude Code sessions under a fresh home.
func claudeHome(t *testing.T, n int, seed int64) string {
	t.Helper()
	home := harness.TempDir(t)
	if err := synth.WriteClaudeHome(home, n, 2000, 6000, seed); err != nil {
		t.Fatal(err)
	}
	return home
}

func writeHostsConfig(t *testing.T, state, hosts string) {
	t.Helper()
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "config.json"), []byte(`{"hosts": `+hosts+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

func decodeArray(t *testing.T, what, out string) []map[string]any {
	t.Helper()
	var v []map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%s: not a JSON array: %v\n%s", what, err, out)
	}
	return v
}

func TestHostsOverSSH(t *testing.T) {
	if testing.Short() {
		t.Skip("real sshd test skipped with -short")
	}
	t.Parallel()
	n := harness.NewSSHNet(t)
	envA := harness.HostEnv(t, claudeHome(t, 3, 11))
	envB := harness.HostEnv(t, claudeHome(t, 2, 22))
	n.Start(t, "hosta", envA)
	n.Start(t, "hostb", envB)
	// A machine where agentctl is not installed.
	n.Start(t, "bare", harness.BaseEnv(harness.TempDir(t), harness.TempDir(t)))
	n.AddClosed(t, "closed")
	n.AddHanging(t, "wedged")

	a := harness.NewAgentctl(t, harness.TempDir(t))
	a.Env = a.Env.With("AGENTCTL_SSH", n.SSHCommand())
	// The hosts host:id may name (the others are named with --host).
	writeHostsConfig(t, a.State, `["hosta", "hostb"]`)

	// list across two hosts is exactly the union of each host's own list,
	// each session with its host.
	var want []map[string]any
	ids := map[string][]string{}
	for _, h := range []struct {
		name string
		env  harness.Env
	}{{"hosta", envA}, {"hostb", envB}} {
		out, errOut, code := runAs(t, h.env, "list", "-a", "--json")
		if code != 0 {
			t.Fatalf("%s's own list: exit %d\n%s", h.name, code, errOut)
		}
		own := decodeArray(t, h.name+" list", out)
		if len(own) == 0 {
			t.Fatalf("%s's own list is empty: the fixture home has no sessions", h.name)
		}
		for _, s := range own {
			s["host"] = h.name
			ids[h.name] = append(ids[h.name], s["id"].(string))
		}
		want = append(want, own...)
	}
	out, errOut, code := a.Run(t, "list", "-a", "--host", "hosta", "--host", "hostb", "--json")
	if code != 0 || errOut != "" {
		t.Fatalf("list --host hosta --host hostb: exit %d, stderr %q", code, errOut)
	}
	if d := cmp.Diff(want, decodeArray(t, "list across hosts", out)); d != "" {
		t.Errorf("list across hosts is not the union of each host's list (-want +got):\n%s", d)
	}

	// The table has a HOST column.
	out, _, code = a.Run(t, "list", "-a", "--host", "hosta", "--host", "hostb")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || !strings.HasPrefix(lines[0], "HOST ") || len(lines) != len(want)+1 ||
		!strings.HasPrefix(lines[1], "hosta ") || !strings.HasPrefix(lines[len(lines)-1], "hostb ") {
		t.Errorf("list table across hosts: exit %d\n%s", code, out)
	}

	// host:id answers from that host; another host does not know the id.
	idB := ids["hostb"][0]
	var st struct {
		ID, Host string
	}
	a.JSON(t, &st, "status", "hostb:"+idB)
	if st.ID != idB || st.Host != "hostb" {
		t.Errorf("status hostb:%s: %+v", idB, st)
	}
	if _, errOut, code := a.Run(t, "status", "hosta:"+idB); code != 3 || !strings.Contains(errOut, "hosta: session not found") {
		t.Errorf("status hosta:<id of hostb>: exit %d, stderr %q; want 3, naming the host", code, errOut)
	}
	// A bare id (a prefix) is looked for on every host named.
	a.JSON(t, &st, "status", "--host", "hosta", "--host", "hostb", idB[:8])
	if st.ID != idB || st.Host != "hostb" {
		t.Errorf("status --host hosta --host hostb %s: %+v", idB[:8], st)
	}
	if _, errOut, code := a.Run(t, "status", "--host", "hosta", "--host", "hostb", "ffffffff-none"); code != 3 {
		t.Errorf("status of an id no host has: exit %d, stderr %q; want 3", code, errOut)
	}

	// A host whose port is closed: a warning naming it, partial results, exit
	// 0; exit 1 with --strict.
	out, errOut, code = a.Run(t, "list", "-a", "--host", "hosta", "--host", "closed", "--json")
	if code != 0 || !strings.Contains(errOut, "warning: closed: connection refused") || len(decodeArray(t, "list with a closed host", out)) != len(ids["hosta"]) {
		t.Errorf("list with a closed host: exit %d, stderr %q, out %s", code, errOut, out)
	}
	if _, _, code := a.Run(t, "list", "-a", "--host", "hosta", "--host", "closed", "--strict"); code != 1 {
		t.Errorf("list --strict with a closed host: exit %d, want 1", code)
	}
	// agentctl missing there: said so.
	_, errOut, code = a.Run(t, "list", "-a", "--host", "hosta", "--host", "bare")
	if code != 0 || !strings.Contains(errOut, "bare: agentctl is not installed there") {
		t.Errorf("list with a host without agentctl: exit %d, stderr %q", code, errOut)
	}

	// A host that accepts and never answers costs at most the host bound (2 ×
	// --timeout: the connection, then the remote adapters).
	start := time.Now()
	out, errOut, code = a.Run(t, "list", "-a", "--host", "hosta", "--host", "wedged", "--timeout", "3s", "--json")
	took := time.Since(start)
	if code != 0 || !strings.Contains(errOut, "wedged: connection timed out") || len(decodeArray(t, "list with a wedged host", out)) != len(ids["hosta"]) {
		t.Errorf("list with a wedged host: exit %d, stderr %q", code, errOut)
	}
	t.Logf("list with a wedged host (--timeout 3s) took %s", took.Round(time.Millisecond))
	if took > 8*time.Second {
		t.Errorf("list with a wedged host took %s; want at most the host bound (2 × --timeout 3s) plus start-up", took)
	}

	// Nothing in an id, a cwd or a prompt runs on the remote side: neither
	// with an absolute path nor relative to the remote home.
	mark := filepath.Join(harness.TempDir(t), "injected")
	rel := filepath.Join(envB["HOME"], "injected")
	var evil []string
	for _, m := range []string{mark, "injected"} {
		evil = append(evil,
			"x; touch "+m,
			"$(touch "+m+")",
			"`touch "+m+"`",
			"'; touch "+m+"; '",
			"\"; touch "+m+"; \"",
			"x\ntouch "+m,
			"x\\'; touch "+m+" #",
		)
	}
	evil = append(evil, "x\\", "x'", "'")
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, e := range evil {
		for _, args := range [][]string{
			{"status", "hostb:" + e},
			{"launch", "--host", "hostb", "--cwd", e, "-p", e, "--model", e},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				if _, errOut, code := a.Run(t, args...); code == 0 {
					t.Errorf("agentctl %q: exit 0 (%s)", args, errOut)
				}
			}()
		}
	}
	wg.Wait()
	a.Run(t, "list", "--host", "hostb", "--cwd", evil[0])
	a.Run(t, "status", "--host", "hosta", "--host", "hostb", evil[7])
	a.Run(t, "peek", "-n", evil[1], "hostb:"+idB)
	for _, m := range []string{mark, rel} {
		if _, err := os.Stat(m); err == nil {
			t.Fatalf("an argument ran a command on the remote side: %s exists", m)
		}
	}
	// The remote agentctl got the arguments verbatim.
	for _, e := range []string{"x; touch injected", "it's $(id) `id` \"q\" *"} {
		if _, errOut, _ := a.Run(t, "status", "hostb:"+e); !strings.Contains(errOut, "hostb: session not found: "+e) {
			t.Errorf("status hostb:%q: the remote agentctl did not get the id verbatim: %q", e, errOut)
		}
	}
}

// A launch on a remote host with a real agent (Claude Code, against a stub
// model server the remote side reaches), then wait HOST:ID returns the agent's
// exit code, and stop HOST:ID confirms the exit. The prompt travels on ssh's
// stdin and reaches the agent verbatim.
func TestHostsLaunchWaitStop(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	n := harness.NewSSHNet(t)
	state := filepath.Join(harness.TempDir(t), "agentctl-state")
	envB := c.Env.Merge(harness.Env{
		"AGENTCTL_HOME":       state,
		"AGENTCTL_CLAUDE_BIN": c.Bin,
		"NO_COLOR":            "1",
		"PATH":                filepath.Dir(harness.AgentctlBin(t)) + ":" + c.Env["PATH"],
	})
	n.Start(t, "hostb", envB)
	t.Cleanup(func() {
		recs, _ := meta.NewStore(state).ReadLaunches()
		for _, r := range recs {
			if p, err := proc.Lookup(r.PID); err == nil && p.StartTicks == r.StartTicks {
				syscall.Kill(-r.PGID, syscall.SIGKILL)
			}
		}
	})
	a := harness.NewAgentctl(t, harness.TempDir(t))
	a.Env = a.Env.With("AGENTCTL_SSH", n.SSHCommand())
	writeHostsConfig(t, a.State, `[{"host": "hostb", "agentctl": "agentctl"}]`)
	mark := filepath.Join(harness.TempDir(t), "injected")

	launchOn := func(prompt string) string {
		t.Helper()
		dir := harness.WorkDir(t, "remote")
		out, errOut, code := a.Run(t, "launch", "claude-code", "--host", "hostb", "--json", "--cwd", dir, "-p", prompt)
		if code != 0 {
			t.Fatalf("launch --host hostb: exit %d\n%s", code, errOut)
		}
		l := decodeArray(t, "launch --json", out)
		if len(l) != 1 || l[0]["host"] != "hostb" || l[0]["id"] == nil {
			t.Fatalf("launch --host hostb --json: %s", out)
		}
		return l[0]["id"].(string)
	}

	prompt := "remote run HOLD=r1 WORDS=3\n$(touch " + mark + "); 'it''s' \"q\" `x` \\"
	id := launchOn(prompt)
	waitHeld(t, srv, "r1")
	type res struct {
		out, errOut string
		code        int
	}
	done := make(chan res, 1)
	go func() {
		o, e, c := a.Run(t, "wait", "hostb:"+id)
		done <- res{o, e, c}
	}()
	time.Sleep(time.Second)
	srv.Release("r1")
	r := <-done
	if r.code != 0 || !strings.HasPrefix(r.out, id+" stopped (exit 0)") {
		t.Errorf("wait hostb:%s: exit %d, out %q, stderr %q", id, r.code, r.out, r.errOut)
	}
	var items []harness.Message
	a.JSON(t, &items, "peek", "-n", "0", "hostb:"+id)
	if len(items) == 0 || items[0].Kind != "user" || items[0].Text != prompt {
		t.Errorf("the prompt did not reach the remote agent verbatim: %+v", items)
	}

	// A failing run: wait returns its exit code.
	id2 := launchOn("break STATUS=400")
	if _, errOut, code := a.Run(t, "wait", "hostb:"+id2); code != 1 {
		t.Errorf("wait hostb:<failed run>: exit %d, want 1\n%s", code, errOut)
	}

	// stop HOST:ID confirms the exit.
	id3 := launchOn("never answered HOLD=s1")
	waitHeld(t, srv, "s1")
	out, errOut, code := a.Run(t, "stop", "hostb:"+id3)
	if code != 0 || !strings.Contains(out, "stopped "+id3+" (exit observed)") {
		t.Errorf("stop hostb:%s: exit %d, out %q, stderr %q", id3, code, out, errOut)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("the prompt ran a command on the remote side: %s exists", mark)
	}
}
