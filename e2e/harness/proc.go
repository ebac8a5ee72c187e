package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Spec says how to start one process.
type Spec struct {
	Path string
	Args []string
	Dir  string
	Env  Env
	// Stdin is written to a file that becomes the process's stdin: agents wait
	// for EOF on an open pipe, and a file is what agentctl itself passes.
	// Empty means /dev/null.
	Stdin string
	// Name labels the output files (default: the binary's base name).
	Name string
}

// Proc is a started process. Its stdout and stderr go to files, never pipes:
// a closed pipe kills or stalls agents (docs/agents/codex.md §6).
type Proc struct {
	PID        int
	StdoutPath string
	StderrPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's error, valid after done
}

// tokenVar marks every process a test starts, and their descendants through the
// inherited environment, so cleanup can also find processes that left the group
// (Claude's Bash tool calls setsid; a SIGKILLed agent orphans its tools).
const tokenVar = "AGENTCTL_E2E_TOKEN"

var seq atomic.Int64 // output file names only

// Start starts the process in its own process group and kills the group, and
// everything carrying the test's token, in t.Cleanup.
func Start(t testing.TB, s Spec) *Proc {
	t.Helper()
	name := s.Name
	if name == "" {
		name = filepath.Base(s.Path)
	}
	dir := t.TempDir()
	n := seq.Add(1)
	base := filepath.Join(dir, fmt.Sprintf("%s-%d", name, n))
	p := &Proc{StdoutPath: base + ".stdout", StderrPath: base + ".stderr", done: make(chan struct{})}

	stdin, err := os.Open(os.DevNull)
	if s.Stdin != "" {
		in := base + ".stdin"
		if err = os.WriteFile(in, []byte(s.Stdin), 0o600); err == nil {
			stdin, err = os.Open(in)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := os.OpenFile(p.StdoutPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(p.StderrPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()

	token := newToken()
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = s.Env.With(tokenVar, token).List()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", s.Path, err)
	}
	p.cmd, p.PID = cmd, cmd.Process.Pid
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill(t, token) })
	return p
}

// runOwner names this test binary in every token ("<pid>.<start ticks>-<random>"),
// so a later run can tell leftovers of a dead run from another live run's processes.
var runOwner = owner()

func newToken() string {
	b := make([]byte, 8)
	rand.Read(b)
	return runOwner + "-" + hex.EncodeToString(b)
}

func (p *Proc) kill(t testing.TB, token string) {
	select {
	case <-p.done:
	default:
		syscall.Kill(-p.PID, syscall.SIGKILL)
	}
	killTagged(tokenVar + "=" + token)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("pid %d did not exit 10 s after SIGKILL", p.PID)
	}
}

// Wait waits for the process to exit and returns its exit code (-1 when killed
// by a signal). It fails the test after timeout.
func (p *Proc) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("pid %d still running after %s\nstdout:\n%s\nstderr:\n%s", p.PID, timeout, Tail(p.Stdout(), 20), Tail(p.Stderr(), 20))
	}
	return p.ExitCode()
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// ExitCode is the exit status after Done (-1 for a signal, or still running).
func (p *Proc) ExitCode() int {
	select {
	case <-p.done:
	default:
		return -1
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		return -1
	}
	return 0
}

// Signal sends sig to the process (not its group).
func (p *Proc) Signal(sig syscall.Signal) error { return syscall.Kill(p.PID, sig) }

// Stdout and Stderr return what the process wrote so far.
func (p *Proc) Stdout() string { b, _ := os.ReadFile(p.StdoutPath); return string(b) }
func (p *Proc) Stderr() string { b, _ := os.ReadFile(p.StderrPath); return string(b) }

// WaitStdout polls stdout until match returns a non-empty string, the process
// exits, or the timeout passes.
func (p *Proc) WaitStdout(t testing.TB, timeout time.Duration, what string, match func(stdout string) string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		if v := match(p.Stdout()); v != "" {
			return v
		}
		select {
		case <-p.done:
			if v := match(p.Stdout()); v != "" {
				return v
			}
			t.Fatalf("%s: process exited (code %d) before it printed %s\nstdout:\n%s\nstderr:\n%s",
				filepath.Base(p.cmd.Path), p.ExitCode(), what, Tail(p.Stdout(), 20), Tail(p.Stderr(), 20))
		case <-ctx.Done():
			t.Fatalf("no %s on stdout after %s\nstdout:\n%s\nstderr:\n%s", what, timeout, Tail(p.Stdout(), 20), Tail(p.Stderr(), 20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Eventually polls cond every 100 ms until it returns "" (success) or the
// timeout passes; the last non-empty answer explains the failure.
func Eventually(t testing.TB, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lines splits output into non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
