package e2e

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/internal/gittest"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// compare HOST:GROUP, compare --check and accept HOST:ID run on that host
// (issue 36 item 3): a group of two Claude Code slots launched on hostb from
// here; compare --check there tells the passing slot; accept hostb:<id> lands
// its commit on hostb's repository, exit codes as locally, and this
// machine's state is untouched.
func TestAcceptOnHost(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	os.MkdirAll(filepath.Join(c.Home, ".claude"), 0o700)
	os.WriteFile(filepath.Join(c.Home, ".claude", "settings.json"), []byte(`{"permissions":{"allow":["Bash"]}}`), 0o600)
	n := harness.NewSSHNet(t)
	remoteState := filepath.Join(harness.TempDir(t), "agentctl-state")
	envB := c.Env.Merge(harness.Env{
		"AGENTCTL_HOME":       remoteState,
		"AGENTCTL_CLAUDE_BIN": c.Bin,
		"NO_COLOR":            "1",
		"PATH":                filepath.Dir(harness.AgentctlBin(t)) + ":" + c.Env["PATH"],
	})
	n.Start(t, "hostb", envB)
	t.Cleanup(func() {
		recs, _ := meta.NewStore(remoteState).ReadLaunches()
		for _, r := range recs {
			if p, err := proc.Lookup(r.PID); err == nil && p.StartTicks == r.StartTicks {
				syscall.Kill(-r.PGID, syscall.SIGKILL)
			}
		}
	})
	a := harness.NewAgentctl(t, harness.TempDir(t))
	a.Env = a.Env.With("AGENTCTL_SSH", n.SSHCommand())
	writeHostsConfig(t, a.State, `["hostb"]`)

	// hostb's repository.
	repo := harness.WorkDir(t, "calc")
	gittest.Run(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "result.txt"), []byte("pending\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "check.sh"), []byte("grep -qx ok result.txt || { echo \"result: $(cat result.txt)\"; exit 3; }\n"), 0o644)
	gittest.Run(t, repo, "add", ".")
	gittest.Run(t, repo, "commit", "-q", "-m", "init")
	base := strings.TrimSpace(gittest.Run(t, repo, "rev-parse", "HEAD"))

	prompt := `fix result TOOLCMD: case "$PWD" in *cc-opus-4-6) echo ok > result.txt ;; *) echo bad > result.txt ;; esac`
	out, errOut, code := a.Run(t, "launch", "--host", "hostb", "--json", "--cwd", repo, "--adapter", "claude-code",
		"--model", "claude-opus-4-6,claude-sonnet-4-5", "--wait", "-p", prompt)
	if code != 0 {
		t.Fatalf("launch --host hostb: exit %d\n%s\n%s", code, out, errOut)
	}
	var ls []struct{ Group, Host string }
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 2 || ls[0].Group == "" || ls[0].Host != "hostb" {
		t.Fatalf("launch --json: %v\n%s", err, out)
	}
	group := ls[0].Group

	// This machine's state, before compare and accept (its ssh control
	// sockets aside).
	snapshot := func() map[string]string {
		m := map[string]string{}
		filepath.WalkDir(a.State, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Type()&fs.ModeSocket != 0 {
				return nil
			}
			b, _ := os.ReadFile(p)
			m[p] = string(b)
			return nil
		})
		return m
	}
	before := snapshot()

	var cmp struct {
		Host  string `json:"host"`
		Slots []struct {
			ID, Slot, Branch string
			Check            *struct{ Passed bool } `json:"check"`
		} `json:"slots"`
	}
	a.JSON(t, &cmp, "compare", "hostb:"+group, "--check", "sh check.sh", "--sort", "check")
	if cmp.Host != "hostb" || len(cmp.Slots) != 2 || cmp.Slots[0].Slot != "cc-opus-4-6" || cmp.Slots[0].Check == nil ||
		!cmp.Slots[0].Check.Passed || cmp.Slots[1].Check == nil || cmp.Slots[1].Check.Passed {
		t.Fatalf("compare hostb:%s --check: %+v", group, cmp)
	}
	win := cmp.Slots[0]
	// Exit codes as locally: a group hostb does not have is not found (3).
	if _, errOut, code := a.Run(t, "compare", "hostb:no-such-group"); code != 3 || !strings.Contains(errOut, "hostb: no launch group no-such-group") {
		t.Errorf("compare hostb:no-such-group: exit %d, %q; want 3 naming the host", code, errOut)
	}
	// A dirty target on hostb: refused there, exit 5.
	os.WriteFile(filepath.Join(repo, "result.txt"), []byte("mine\n"), 0o644)
	if _, errOut, code := a.Run(t, "accept", "hostb:"+win.ID); code != 5 || !strings.Contains(errOut, "M result.txt") {
		t.Errorf("accept hostb:<id> into a dirty target: exit %d %s", code, errOut)
	}
	gittest.Run(t, repo, "checkout", "result.txt")

	var acc struct{ Host, Commit, Before, Into string }
	a.JSON(t, &acc, "accept", "hostb:"+win.ID)
	if acc.Host != "hostb" || acc.Before != base || acc.Into != "main" || acc.Commit == "" {
		t.Errorf("accept hostb:%s --json: %+v", win.ID, acc)
	}
	if head := strings.TrimSpace(gittest.Run(t, repo, "rev-parse", "main")); head != acc.Commit {
		t.Errorf("hostb's main is %s, want the accepted commit %s", head, acc.Commit)
	}
	if res := gittest.Run(t, repo, "show", "main:result.txt"); res != "ok\n" {
		t.Errorf("hostb's main result.txt = %q, want the winner's ok", res)
	}
	after := snapshot()
	for p, b := range after {
		if before[p] != b {
			t.Errorf("accept on hostb changed this machine's %s", p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("accept on hostb removed this machine's %s", p)
		}
	}
}
