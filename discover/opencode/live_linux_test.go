package opencode

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// helperEnv makes the test binary, started under the name "opencode", sleep: a
// real process that looks like `opencode run --dir <dir>` in the real /proc.
const helperEnv = "AGENTCTL_OPENCODE_TEST_SLEEP"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		time.Sleep(60 * time.Second)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A real opencode-named process, the real process table and the platform's
// start-time conversion (btime + ticks/CLK_TCK): a session prompted after the
// process started is running (inferred), one prompted long before is not.
func TestRealProcessTable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	bin := filepath.Join(t.TempDir(), "opencode")
	if err := os.Link(self, bin); err != nil {
		t.Skipf("cannot link the test binary: %v", err)
	}
	dir := t.TempDir()
	home, path := dataCopy(t, testdata(t, "home/.local/share/opencode"))

	cmd := exec.Command(bin, "run", "--format", "json", "--dir", dir)
	cmd.Env = []string{helperEnv + "=1", "PWD=" + dir}
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	started := time.Now()

	w := writer(t, path)
	addOpen := func(id string, at time.Time) {
		addSession(t, w, id, dir, "real process test", at.UnixMilli())
		mustExec(t, w, `INSERT INTO message(id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)`,
			"msg_"+id[4:16]+"01Assistant001", id, at.UnixMilli()+100, at.UnixMilli()+100,
			`{"role":"assistant","parentID":"x","time":{"created":`+itoa(at.UnixMilli()+100)+`}}`)
	}
	const fresh, stale = "ses_e0500001fffeRealProcFresh1", "ses_e0500002fffeRealProcStale1"
	addOpen(fresh, started.Add(200*time.Millisecond))
	addOpen(stale, started.Add(-10*time.Minute))
	w.Close()

	// wait until the child is in /proc under its new name
	var table proc.Table
	for i := 0; i < 100; i++ {
		table = proc.Snapshot()
		if p, ok := table.Get(cmd.Process.Pid); ok && p.Comm == "opencode" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	env := newEnv(home, nil, table)
	ss, err := New().Discover(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]discover.Session{}
	for _, s := range ss {
		by[s.ID] = s
	}
	if s := by[fresh]; s.Status != discover.StatusRunning || s.PID != cmd.Process.Pid || !s.Inferred {
		t.Errorf("fresh session: %s pid %d (%s), want running pid %d", s.Status, s.PID, s.EvidenceDetail, cmd.Process.Pid)
	}
	if s := by[stale]; s.Status != discover.StatusFailed {
		t.Errorf("stale session: %s (%s), want failed", s.Status, s.EvidenceDetail)
	}
}
