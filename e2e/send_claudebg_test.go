package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// issue 35: a Claude Code background session (launched by agentctl with
// --background, hosted by Claude's daemon) takes a message from `agentctl
// send` through `claude attach`, run by agentctl in a tmux server of its own
// for the send: delivered once the transcript records it, the stub sees it in
// the next request, it is recorded exactly once, its marker is in no argv at
// any 50 ms sample, the session is still Claude's (alive, idle again, listed
// by `claude agents`) and agentctl leaves no attach client or tmux server
// behind. A session busy with a turn is refused without --force. The median
// of 10 send→delivered times is logged for README "send".
func TestSendClaudeBackground(t *testing.T) {
	forEachBackgroundClaude(t, func(t *testing.T, c *harness.Claude, srv *stub.Server) {
		dir := harness.WorkDir(t, "bgsend")
		seedClaudeJSON(t, c, dir)
		a := harness.NewAgentctl(t, c.Home)
		a.Env = c.Env.Merge(harness.Env{"AGENTCTL_HOME": a.State, "NO_COLOR": "1", "AGENTCTL_CLAUDE_BIN": c.Bin})

		lc := exec.Command(a.Bin, "launch", "claude-code", "--background", "--json", "--cwd", dir, "-p", "-", "--home", a.Home)
		lc.Env, lc.Dir = a.Env.List(), a.Home
		lc.Stdin = strings.NewReader("first background turn HOLD=bgs")
		out, err := lc.Output()
		if err != nil {
			t.Fatalf("launch --background: %v\n%s", err, out)
		}
		var res []struct {
			ID    string `json:"id"`
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 || res[0].JobID == "" {
			t.Fatalf("launch --json: %v\n%s", err, out)
		}
		id, short := res[0].ID, res[0].JobID
		t.Cleanup(func() { _ = exec.Command(a.Bin, "stop", "--home", a.Home, short).Run() })
		waitStatus := func(when, status string) harness.Session {
			t.Helper()
			var s harness.Session
			harness.Eventually(t, 90*time.Second, func() string {
				s = a.Status(t, short)
				if s.Status != status {
					return when + ": status " + s.Status + " (" + s.Evidence + ": " + s.EvidenceDetail + "), want " + status
				}
				return ""
			})
			return s
		}
		waitHeldFor(t, srv, "bgs", 90*time.Second)
		waitStatus("first turn held", "running")

		// Busy with a turn: refused without --force, nothing typed.
		r := sendStdin(t, a, "not while busy", short, "-")
		if r.code != 1 || !strings.Contains(r.errOut, "is running, not idle") || !strings.Contains(r.errOut, "--force") {
			t.Errorf("send to a running background session: exit %d, %q; want exit 1 naming running and --force", r.code, r.errOut)
		}
		srv.Release("bgs")
		s := waitStatus("first turn done", "idle")
		pid := s.PID

		var st struct {
			CanSend string `json:"can_send"`
		}
		a.JSON(t, &st, "status", short)
		if st.CanSend != "claude-attach" {
			t.Errorf("status --json can_send %q, want claude-attach", st.CanSend)
		}

		// 1. Delivered, confirmed from the transcript.
		marker := "BGSENDMARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
		msg := "please note " + marker + " and reply"
		sendChecked(t, srv, id, "claude-attach", msg, marker, nil,
			func() sendResult { return sendStdin(t, a, msg, "--json", short, "-") })
		s = waitStatus("after the reply", "idle")
		if s.PID != pid {
			t.Errorf("after the send the session runs as pid %d, was %d", s.PID, pid)
		}
		if n := userRecords(t, a, short, msg); n != 1 {
			t.Errorf("after the reply: %d user records with the message, want exactly 1", n)
		}
		found := false
		for _, ag := range claudeAgents(t, c, dir, false) {
			found = found || ag.ID == short
		}
		if !found {
			t.Errorf("claude agents --json no longer lists %s after the send", short)
		}
		// No attach client and no tmux server of agentctl's are left.
		harness.Eventually(t, 10*time.Second, func() string {
			ps, _ := exec.Command("ps", "-eo", "pid,args").Output()
			for _, l := range strings.Split(string(ps), "\n") {
				if strings.Contains(l, " attach "+short) || strings.Contains(l, "agentctl-send-") {
					return "left behind: " + l
				}
			}
			return ""
		})
		if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "agentctl-send-*")); len(left) > 0 {
			t.Logf("temp dirs named agentctl-send-* (maybe other tests'): %v", left)
		}

		// 2. Ten more, timed: the README's median.
		timedSends(t, a, short, id, marker, "claude-code background via claude attach", func(when string) { waitStatus(when, "idle") }, nil)
		waitStatus("after the timed sends", "idle")
	})
}
