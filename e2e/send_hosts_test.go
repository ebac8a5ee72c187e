package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// issue 36 item 4: `send HOST:ID` runs send on that host, the message on
// ssh's stdin. The "host" is a real sshd on loopback whose HOME is the home of
// a real `opencode serve` (the agent runs there); this machine's agentctl
// knows only the host. The message given as an argument, as "-" and as -f -
// (both stdin here) and as -f FILE (a file on the host) is delivered through
// the server's API: the stub sees it, the transcript holds it once, and its
// marker is in no argv at any 50 ms sample but the one the user typed it in
// (this side's own agentctl, for the argument). --json carries the host; an
// id the host does not know exits 3, as locally.
func TestSendOnHost(t *testing.T) {
	if testing.Short() {
		t.Skip("real sshd test skipped with -short")
	}
	harness.Require(t)
	srv := stub.Start(t, nil)
	o := harness.NewOpenCode(t, srv)
	dir := harness.WorkDir(t, "send-host")
	oc := startOCServe(t, o, dir, "opencode-serve-host")
	oc.waitHealthy(120 * time.Second)
	id := oc.newSession("first")

	// The host "gpu": its HOME is OpenCode's; there agentctl sees the serve.
	n := harness.NewSSHNet(t)
	gpu := harness.HostEnv(t, o.Home)
	n.Start(t, "gpu", gpu)
	// This machine: no agent home of its own, only the host.
	a := harness.NewAgentctl(t, harness.TempDir(t))
	a.Env = a.Env.With("AGENTCTL_SSH", n.SSHCommand())
	writeHostsConfig(t, a.State, `["gpu"]`)
	// The host's own view, for the checks (its agentctl state is its own).
	there := harness.NewAgentctl(t, o.Home)

	idle := func(when string) {
		t.Helper()
		eventually(t, 120*time.Second, func() (bool, string) {
			s := there.Status(t, id)
			return s.Status == "stopped" || s.Status == "idle", when + ": " + s.Status + " " + s.Evidence + " " + s.EvidenceDetail
		})
		// The server must be idle too: the store's turn closes a moment before.
		eventually(t, 60*time.Second, func() (bool, string) {
			var status map[string]any
			oc.get("/session/status", &status)
			_, busy := status[id]
			return !busy, when + ": server status " + fmt.Sprint(status)
		})
	}
	marker := "HOSTMARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	// send runs `agentctl send args…` here with stdin, sampling every argv
	// while it runs; own is the marker hits of that agentctl's own argv.
	send := func(stdin string, args ...string) (r sendResult, hits []string, own int) {
		t.Helper()
		w := watchCmdlines(marker)
		cmd := exec.Command(a.Bin, append([]string{"send"}, args...)...)
		cmd.Env = a.Env.List()
		cmd.Dir = a.Home
		cmd.Stdin = strings.NewReader(stdin)
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		r = sendResult{out: so.String(), errOut: se.String(), took: time.Since(start)}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("agentctl send: %v", err)
		}
		samples, all := w.finish()
		if samples < 2 && r.took > 200*time.Millisecond { // 50 ms apart: a quick refusal may see one
			t.Errorf("only %d argv samples during send %q (%s)", samples, args, r.took)
		}
		self := fmt.Sprintf("pid %d: ", cmd.Process.Pid)
		for _, h := range all {
			if strings.HasPrefix(h, self) {
				own++
				continue
			}
			hits = append(hits, h)
		}
		return r, hits, own
	}
	// delivered checks one message: recorded once there, seen by the stub.
	delivered := func(how, msg string, m mark) {
		t.Helper()
		if n := userRecords(t, there, id, msg); n != 1 {
			t.Errorf("%s: %d user records with the message on the host, want 1", how, n)
		}
		eventually(t, 120*time.Second, func() (bool, string) {
			for _, e := range since(srv, m) {
				if strings.TrimSpace(e.Request.LastUser) == msg {
					return true, ""
				}
			}
			return false, how + ": the stub has not seen the message in a request"
		})
		idle("after the reply to " + how)
		if n := userRecords(t, there, id, msg); n != 1 {
			t.Errorf("%s: after the reply %d user records with the message, want exactly 1", how, n)
		}
	}
	idle("after the first turn")

	// 1. The message on stdin ("-"), --json.
	msg := "please note " + marker + " on the host; $(touch pwned) 'quoted'\nsecond line"
	m := markNow(srv)
	var r sendResult
	var hits []string
	for start := time.Now(); ; {
		r, hits, _ = send(msg, "--json", "--timeout", "120s", "gpu:"+id, "-")
		if r.code == 0 || !strings.Contains(r.errOut, "is running, not idle") || time.Since(start) > 60*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if r.code != 0 {
		t.Fatalf("send gpu:ID -: exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.errOut)
	}
	var got struct {
		Host, ID, Adapter, Via, Status string
		Record                         struct{ Kind, Text string }
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("send --json: %v\n%s", err, r.out)
	}
	if got.Host != "gpu" || got.ID != id || got.Adapter != "opencode" || got.Via != "opencode-api" || got.Status != "delivered" ||
		got.Record.Kind != "user" || got.Record.Text != msg {
		t.Errorf("send --json = %s; want host gpu, id %s, opencode, via opencode-api, delivered, a user record %q", r.out, id, msg)
	}
	t.Logf("send gpu:ID - → delivered in %s", r.took.Round(time.Millisecond))
	for _, h := range hits {
		t.Errorf("stdin: the message's marker is in an argv: %s", h)
	}
	delivered("stdin", msg, m)
	if exists(filepath.Join(o.Home, "pwned")) || exists(filepath.Join(dir, "pwned")) {
		t.Errorf("the message's $(…) ran on the host")
	}

	// 2. The message as an argument: in this side's own argv (the user put it
	// there), never in ssh's or the host's.
	msg = "argument " + marker
	m = markNow(srv)
	r, hits, own := send("", "--timeout", "120s", "gpu:"+id, msg)
	if r.code != 0 || strings.TrimSpace(r.out) != "delivered "+id {
		t.Fatalf("send gpu:ID MESSAGE: exit %d, %q %q; want delivered %s", r.code, r.out, r.errOut, id)
	}
	if own == 0 {
		t.Errorf("the sampler never saw the marker in this side's own agentctl argv: it cannot see argvs")
	}
	for _, h := range hits {
		t.Errorf("argument: the message's marker is in an argv other than agentctl's own here: %s", h)
	}
	delivered("argument", msg, m)

	// 3. -f - : stdin again.
	msg = "via -f - " + marker
	m = markNow(srv)
	r, hits, _ = send(msg, "-f", "-", "--timeout", "120s", "gpu:"+id)
	if r.code != 0 || strings.TrimSpace(r.out) != "delivered "+id {
		t.Fatalf("send -f - gpu:ID: exit %d, %q %q; want delivered %s", r.code, r.out, r.errOut, id)
	}
	for _, h := range hits {
		t.Errorf("-f -: the message's marker is in an argv: %s", h)
	}
	delivered("-f -", msg, m)

	// 4. -f FILE: a file on the host (relative to its HOME, where ssh starts).
	msg = "from a file on the host " + marker
	if err := os.WriteFile(filepath.Join(o.Home, "followup.txt"), []byte(msg+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m = markNow(srv)
	r, hits, _ = send("", "-f", "followup.txt", "--timeout", "120s", "gpu:"+id)
	if r.code != 0 || strings.TrimSpace(r.out) != "delivered "+id {
		t.Fatalf("send -f FILE gpu:ID: exit %d, %q %q; want delivered %s", r.code, r.out, r.errOut, id)
	}
	for _, h := range hits {
		t.Errorf("-f FILE: the message's marker is in an argv: %s", h)
	}
	delivered("-f FILE", msg, m)

	// An id the host does not know: exit 3, as locally; nothing is sent.
	m = markNow(srv)
	r, _, _ = send("never "+marker, "--timeout", "10s", "gpu:ses_nosuchsession", "-")
	if r.code != 3 {
		t.Errorf("send gpu:<unknown id>: exit %d (%q), want 3", r.code, r.errOut)
	}
	if !strings.Contains(r.errOut, "ses_nosuchsession") {
		t.Errorf("send gpu:<unknown id>: stderr %q does not name the id", r.errOut)
	}
	time.Sleep(time.Second)
	if ex := since(srv, m); len(ex) != 0 {
		t.Errorf("send to an unknown id reached the stub: %d requests", len(ex))
	}
	if n := userRecords(t, there, id, "never "+marker); n != 0 {
		t.Errorf("send to an unknown id: the session got it (%d records)", n)
	}
}
