package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
)

// Connection reuse (issue 36 item 5): with the control master, 10 `list
// --hosts all` in a row open one ssh connection per host, counted by each
// sshd; a host whose ssh config names a ControlPath of the user's own keeps
// it (agentctl adds none: here the user's has no master, so each call
// connects); list --watch across hosts redraws over the same connection.
func TestHostsShareConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("real sshd test skipped with -short")
	}
	t.Parallel()
	n := harness.NewSSHNet(t)
	a1 := n.Start(t, "hosta", harness.HostEnv(t, claudeHome(t, 2, 41)))
	b1 := n.Start(t, "hostb", harness.HostEnv(t, claudeHome(t, 2, 42)))
	own := n.Start(t, "mine", harness.HostEnv(t, claudeHome(t, 1, 43)))
	userSockets := harness.TempDir(t)
	n.AddBlock(t, "mine", "  ControlPath "+filepath.Join(userSockets, "u-%C")+"\n")
	a := harness.NewAgentctl(t, harness.TempDir(t))
	a.Env = a.Env.With("AGENTCTL_SSH", n.SSHCommand())
	writeHostsConfig(t, a.State, `["hosta", "hostb", "mine"]`)
	base := map[string]int{}
	for _, s := range []*harness.SSHD{a1, b1, own} {
		if base[s.Name] = s.Accepted(t); base[s.Name] != 0 {
			t.Fatalf("%s accepted %d ssh connections before agentctl ran", s.Name, base[s.Name])
		}
	}
	for i := 0; i < 10; i++ {
		out, errOut, code := a.Run(t, "list", "-a", "--hosts", "all", "--json")
		if code != 0 || errOut != "" || len(decodeArray(t, "list --hosts all", out)) != 5 {
			t.Fatalf("list --hosts all (run %d): exit %d, stderr %q\n%s", i+1, code, errOut, out)
		}
	}
	for _, s := range []*harness.SSHD{a1, b1} {
		if got := s.Accepted(t) - base[s.Name]; got != 1 {
			t.Errorf("%s accepted %d ssh connections over 10 list --hosts all; want 1 (one shared connection per host)", s.Name, got)
		}
	}
	if got := own.Accepted(t) - base[own.Name]; got != 10 {
		t.Errorf("mine (ControlPath set by the user's config) accepted %d connections; want 10: agentctl must not add its own control master there", got)
	}
	// The sockets are in a 0700 directory of agentctl's.
	dir := filepath.Join(a.State, "ssh")
	if len(dir) > 45 {
		dir = ""
	}
	if dir != "" {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("control socket directory %s: %v %v; want 0700", dir, fi, err)
		}
	}

	// list --watch across hosts: several rounds, still one connection per host.
	cmd := exec.Command(harness.AgentctlBin(t), "list", "-a", "--hosts", "all", "--json", "--watch", "--home", a.Home)
	cmd.Env = a.Env.List()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("list --watch --hosts all did not end on SIGINT")
	}
	rounds := 0
	dec := json.NewDecoder(&out)
	for {
		var v []map[string]any
		if dec.Decode(&v) != nil {
			break
		}
		if len(v) != 5 {
			t.Errorf("list --watch --hosts all round %d: %d sessions, want 5", rounds+1, len(v))
		}
		rounds++
	}
	if rounds < 2 || strings.Contains(errOut.String(), "runs on this machine only") {
		t.Errorf("list --watch --hosts all: %d rounds in 5 s, stderr %q; want 2 or more", rounds, errOut.String())
	}
	for _, s := range []*harness.SSHD{a1, b1} {
		if got := s.Accepted(t) - base[s.Name]; got != 1 {
			t.Errorf("%s accepted %d connections after list --watch; want still 1", s.Name, got)
		}
	}
}
