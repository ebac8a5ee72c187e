package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An AGENTCTL_HOME that cannot be read (issue 37 item 12): a reading command
// works without agentctl's state and says so once, naming AGENTCTL_HOME; a
// writing one fails naming it. Run as nobody when the test runs as root, whom
// modes do not stop.
func TestUnreadableAgentctlHome(t *testing.T) {
	fixtures, err := filepath.Abs("testdata/home")
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "alice")
	if err := os.CopyFS(home, os.DirFS(fixtures)); err != nil {
		t.Fatal(err)
	}
	caller := t.TempDir()
	state := filepath.Join(caller, "state")
	if err := os.Mkdir(state, 0o000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(state, 0o700) })
	run := runCLI
	if os.Geteuid() == 0 {
		run = runAsNobody(t, home, caller)
	}
	env := map[string]string{"HOME": caller, "AGENTCTL_HOME": state, "NO_COLOR": "1", "TZ": "UTC"}
	want := "AGENTCTL_HOME " + state + " cannot be read"

	out, errOut, code := run(t, env, "--home", home, "status", "01a1faeb-aa41")
	if code != 0 || !strings.Contains(out, "stopped") {
		t.Errorf("status: exit %d\n%s%s", code, out, errOut)
	}
	if lines := strings.Split(strings.TrimSpace(errOut), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "warning: "+want) {
		t.Errorf("status: want one warning naming %q, got:\n%s", want, errOut)
	}

	_, errOut, code = run(t, env, "lock", home)
	if code != 1 || !strings.Contains(errOut, "agentctl: "+want) {
		t.Errorf("lock: exit %d, want 1 and an error naming %q:\n%s", code, want, errOut)
	}
}
