package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// issue 35: a pi that agentctl launches with --keep-open runs in RPC mode and
// keeps its input (a FIFO under the state dir) open: `launch --wait` returns
// once its first turn is over; `agentctl send` writes a message into it;
// send exits 0 "delivered ID" only once pi's own session file holds it; the
// stub's next request carries it; the file holds it exactly once; neither the
// prompt's nor the message's marker is in any /proc/*/cmdline sampled every
// 50 ms; `wait` returns at idle; `stop` ends the run and removes the FIFO,
// after which send is refused pointing to resume, as it is for a one-shot
// launch that has ended. A kept-open run whose supervisor and pi were
// SIGKILLed leaves a FIFO that the next command's upkeep removes unwritten.
// The median of 10 send→delivered times is logged for README "Send".
func TestSendPiKeptOpen(t *testing.T) {
	harness.Require(t)
	srv := stub.Start(t, nil)
	pi := harness.NewPi(t, srv)
	a := agentctlFor(t, pi.Home, pi.Env, harness.Env{"AGENTCTL_PI_BIN": pi.Bin})
	dir := harness.WorkDir(t, "pirpc")
	store := meta.NewStore(a.State)

	// The prompt reaches pi through the FIFO, never an argv.
	pmark := "PROMPTMARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	prompt := "start here " + pmark
	pw := watchCmdlines(pmark)
	lr := launchStdin(t, a, prompt, "--keep-open", "--cwd", dir, "--model", "fakeoai/fake-model", "--wait", "-p", "-")
	psamples, phits := pw.finish()
	out, errOut, code := lr.out, lr.errOut, lr.code
	if code != 0 {
		t.Fatalf("launch --keep-open --wait: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	m := regexp.MustCompile(`(?m)^launched (\S+) \(pi, pid \d+\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("launch output %q: no launched line", out)
	}
	id := m[1]
	if !strings.Contains(out, "\n"+id+" idle; it stays open") {
		t.Errorf("launch --wait output %q: want %s idle once its first turn is over", out, id)
	}
	for _, h := range phits {
		t.Errorf("the prompt's marker is in an argv: %s", h)
	}
	if psamples < 2 {
		t.Errorf("only %d argv samples during the launch", psamples)
	}
	// The stub answered the prompt, and pi is still there.
	if ex := since(srv, 0); len(ex) == 0 || ex[0].Request.LastUser != prompt {
		t.Fatalf("the stub's first request does not carry the prompt: %+v", ex)
	}
	recs, err := store.ReadLaunches()
	if err != nil || len(recs) != 1 || recs[0].Input == "" {
		t.Fatalf("launch records %+v (%v): want one with an input FIFO", recs, err)
	}
	rec := recs[0]
	fifo := rec.Input
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("input %s: %v %v; want a 0600 FIFO", fifo, st, err)
	}
	if p, err := proc.Lookup(rec.PID); err != nil || p.StartTicks != rec.StartTicks {
		t.Fatalf("pi (pid %d) is not alive after its first turn: %v", rec.PID, err)
	}

	var st struct {
		Status  string `json:"status"`
		Kind    string `json:"kind"`
		CanSend string `json:"can_send"`
	}
	a.JSON(t, &st, "status", id)
	if st.Status != "idle" || st.Kind != "kept-open" || st.CanSend != "pi-rpc" {
		t.Errorf("status --json: status %q kind %q can_send %q; want idle, kept-open, pi-rpc", st.Status, st.Kind, st.CanSend)
	}

	marker := "PIRPCMARK" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	msg := "please note " + marker + " and reply"
	mk := markNow(srv)
	w := watchCmdlines(marker)
	r := sendStdin(t, a, msg, id, "-")
	samples, hits := w.finish()
	if r.code != 0 || r.out != "delivered "+id+"\n" {
		t.Fatalf("send: exit %d, stdout %q; want 0, delivered %s\nstderr: %s", r.code, r.out, id, r.errOut)
	}
	t.Logf("send → delivered in %s; %d argv samples", r.took.Round(time.Millisecond), samples)
	enoughSamples(t, samples, r.took)
	for _, h := range hits {
		t.Errorf("the message's marker is in an argv: %s", h)
	}
	harness.Eventually(t, 60*time.Second, func() string {
		if ex := since(srv, mk); len(ex) > 0 {
			if ex[0].Request.LastUser != msg {
				return fmt.Sprintf("the stub's next request carries %q, want the message %q", ex[0].Request.LastUser, msg)
			}
			return ""
		}
		return "the stub has had no request since the send"
	})
	// wait: a kept-open run's turn over is as done as it gets.
	out, errOut, code = a.RunLong(t, 2*time.Minute, "wait", "--timeout", "90s", id)
	if code != 0 || strings.TrimSpace(out) != id+" idle" {
		t.Errorf("wait on the kept-open run: exit %d, %q %q; want 0, %s idle", code, out, errOut, id)
	}
	if n := fileUserRecords(t, pi, id, msg); n != 1 {
		t.Errorf("pi's session file holds %d user messages with the message, want exactly 1", n)
	}
	if n := userRecords(t, a, id, msg); n != 1 {
		t.Errorf("peek shows %d user records with the message, want exactly 1", n)
	}

	// During a turn: refused without --force; with it, pi queues the message
	// (followUp) and runs it once the turn is over, as the next request.
	idleNow(t, a, id)
	held := "a long turn HOLD=busy " + marker
	mk = markNow(srv)
	if r := sendStdin(t, a, held, id, "-"); r.code != 0 {
		t.Fatalf("send of the held turn: exit %d, %q %q", r.code, r.out, r.errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := srv.WaitHeld(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	busy := "while busy " + marker
	if r := sendStdin(t, a, busy, id, "-"); r.code != 1 || !strings.Contains(r.errOut, "not idle") {
		t.Errorf("send during a turn without --force: exit %d, stderr %q; want 1, not idle", r.code, r.errOut)
	}
	forced := make(chan sendResult, 1)
	go func() { forced <- sendStdin(t, a, busy, "--force", id, "-") }()
	time.Sleep(time.Second) // the message is in pi's queue, the turn still held
	if n := fileUserRecords(t, pi, id, busy); n != 0 {
		t.Errorf("a message queued during a turn is in the file %d times before the turn ended", n)
	}
	srv.Release("busy")
	if r := <-forced; r.code != 0 || r.out != "delivered "+id+"\n" {
		t.Fatalf("send --force during a turn: exit %d, %q %q", r.code, r.out, r.errOut)
	}
	harness.Eventually(t, 60*time.Second, func() string {
		ex := since(srv, mk)
		if len(ex) < 2 {
			return fmt.Sprintf("%d requests since the held turn was sent, want 2", len(ex))
		}
		if ex[0].Request.LastUser != held || ex[1].Request.LastUser != busy {
			return fmt.Sprintf("requests carry %q then %q; want the held turn, then the queued message", ex[0].Request.LastUser, ex[1].Request.LastUser)
		}
		return ""
	})
	idleNow(t, a, id)
	if n := fileUserRecords(t, pi, id, busy); n != 1 {
		t.Errorf("the forced message is in the file %d times, want 1", n)
	}

	var took []time.Duration
	for i := range 10 {
		idleNow(t, a, id)
		r := sendStdin(t, a, "timed message "+itoa(i)+" "+marker, id, "-")
		if r.code != 0 || r.out != "delivered "+id+"\n" {
			t.Fatalf("timed send %d: exit %d, %q %q", i, r.code, r.out, r.errOut)
		}
		took = append(took, r.took)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("pi --keep-open via pi-rpc: send → delivered median of 10 = %s (min %s, max %s)",
		((took[4] + took[5]) / 2).Round(time.Millisecond), took[0].Round(time.Millisecond), took[9].Round(time.Millisecond))

	// stop ends it (verified PID, SIGTERM to its group) and the FIFO goes.
	idleNow(t, a, id)
	out, errOut, code = a.Run(t, "stop", id)
	if code != 0 {
		t.Fatalf("stop: exit %d, %q %q", code, out, errOut)
	}
	harness.Eventually(t, 30*time.Second, func() string {
		if _, err := os.Lstat(fifo); err == nil {
			return "the input FIFO " + fifo + " is still there after stop"
		}
		if s := a.Status(t, id); s.Status != "stopped" {
			return "status after stop: " + s.Status
		}
		return ""
	})
	r = sendStdin(t, a, "too late "+marker, id, "-")
	if r.code != 1 || !strings.Contains(r.errOut, "agentctl resume "+id) {
		t.Errorf("send to the stopped kept-open run: exit %d, stderr %q; want 1 pointing to agentctl resume %s", r.code, r.errOut, id)
	}

	// A one-shot launch (no --keep-open) that has ended: refused, pointing to resume.
	out, errOut, code = a.RunLong(t, 3*time.Minute, "launch", "pi", "--cwd", dir, "--model", "fakeoai/fake-model", "--wait", "-p", "one shot")
	m = regexp.MustCompile(`(?m)^launched (\S+) \(pi,`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("one-shot launch --wait: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	r = sendStdin(t, a, "after the end "+marker, m[1], "-")
	if r.code != 1 || !strings.Contains(r.errOut, "agentctl resume "+m[1]) {
		t.Errorf("send to an ended one-shot pi: exit %d, stderr %q; want 1 pointing to agentctl resume %s", r.code, r.errOut, m[1])
	}

	// Crash: supervisor and pi SIGKILLed. The FIFO stays behind until the
	// next command's upkeep finalises the run; send never writes to it.
	out, errOut, code = a.RunLong(t, 3*time.Minute, "launch", "pi", "--keep-open", "--cwd", dir,
		"--model", "fakeoai/fake-model", "--wait", "-p", "crash test")
	m = regexp.MustCompile(`(?m)^launched (\S+) \(pi,`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("second kept-open launch: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var crashed meta.Launch
	recs, _ = store.ReadLaunches()
	for _, l := range recs {
		if l.CurrentSessionID() == m[1] {
			crashed = l
		}
	}
	if crashed.Input == "" || crashed.PID <= 0 || crashed.SupervisorPID <= 0 {
		t.Fatalf("record of %s: %+v; want an input, a pid and a supervisor", m[1], crashed)
	}
	syscall.Kill(crashed.SupervisorPID, syscall.SIGKILL)
	syscall.Kill(-crashed.PGID, syscall.SIGKILL)
	harness.Eventually(t, 10*time.Second, func() string {
		if p, err := proc.Lookup(crashed.PID); err == nil && p.StartTicks == crashed.StartTicks {
			return "pi still alive after SIGKILL"
		}
		return ""
	})
	r = sendStdin(t, a, "to a dead pi "+marker, m[1], "-")
	if r.code != 1 || !strings.Contains(r.errOut, "agentctl resume "+m[1]) {
		t.Errorf("send to a SIGKILLed kept-open run: exit %d, stderr %q; want 1 pointing to agentctl resume", r.code, r.errOut)
	}
	if _, err := os.Lstat(crashed.Input); err == nil {
		t.Errorf("the FIFO of the SIGKILLed run %s is still there after a command's upkeep", crashed.Input)
	}
	if n := fileUserRecords(t, pi, m[1], "to a dead pi "+marker); n != 0 {
		t.Errorf("the dead run's file holds the refused message %d times", n)
	}
}

// idleNow waits until id is idle.
func idleNow(t *testing.T, a *harness.Agentctl, id string) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, func() string {
		if s := a.Status(t, id); s.Status != "idle" {
			return "status " + s.Status + " (" + s.EvidenceDetail + "), want idle"
		}
		return ""
	})
}

// fileUserRecords counts the user messages whose text is msg in pi's own
// session file of id (read here, not through agentctl).
func fileUserRecords(t *testing.T, pi *harness.Pi, id, msg string) int {
	t.Helper()
	n := 0
	for _, f := range pi.Sessions() {
		if !strings.HasSuffix(f, "_"+id+".jsonl") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, ln := range strings.Split(string(b), "\n") {
			var e struct {
				Message struct {
					Role    string `json:"role"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"message"`
			}
			if json.Unmarshal([]byte(ln), &e) == nil && e.Message.Role == "user" && len(e.Message.Content) == 1 && e.Message.Content[0].Text == msg {
				n++
			}
		}
	}
	return n
}

// launchStdin runs `agentctl launch pi … --home H` with stdin (for -p -).
func launchStdin(t *testing.T, a *harness.Agentctl, stdin string, args ...string) sendResult {
	t.Helper()
	cmd := exec.Command(a.Bin, append(append([]string{"launch", "pi"}, args...), "--home", a.Home)...)
	cmd.Env = a.Env.List()
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := sendResult{out: o.String(), errOut: e.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentctl launch: %v", err)
	}
	return r
}
