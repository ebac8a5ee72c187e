package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// HookEnv is the AGENTCTL_* environment of a hook (README "Hooks and webhooks").
func HookEnv(r *meta.Launch, exitCode *int) []string {
	model := r.Model
	if model == "" && r.Init != nil {
		model = r.Init.Model
	}
	env := []string{
		"AGENTCTL_SESSION_ID=" + r.CurrentSessionID(),
		"AGENTCTL_CWD=" + r.Cwd,
		"AGENTCTL_ADAPTER=" + r.Adapter,
		"AGENTCTL_MODEL=" + model,
		"AGENTCTL_GROUP=" + r.Group,
		"AGENTCTL_BRANCH=" + r.Branch,
		"AGENTCTL_LAUNCH_ID=" + r.ID,
	}
	if exitCode != nil {
		env = append(env, "AGENTCTL_EXIT_CODE="+strconv.Itoa(*exitCode))
	}
	if r.ExitReason != "" {
		env = append(env, "AGENTCTL_EXIT_REASON="+r.ExitReason)
	}
	return env
}

// trusted is the trust rule (meta.Store.Trusted) where something is about to
// run or be sent: nothing a state dir names runs unless the caller owns it and
// no one else can write it.
func (d *Deps) trusted() error {
	if d.Store == nil {
		return nil
	}
	return d.Store.Trusted()
}

// RunHook runs cmdline with /bin/sh -c in dir, output appended to logPath, killed
// (with its whole process group) after timeout. It returns "ok", "exit N",
// "timeout" or "error: …", and an error for anything but "ok". From a state dir
// that fails the trust rule it runs nothing and returns "refused".
func (d *Deps) RunHook(ctx context.Context, name, cmdline, dir string, env []string, logPath string) (string, error) {
	if err := d.trusted(); err != nil {
		return "refused", fmt.Errorf("%s hook not run: %w", name, err)
	}
	timeout := d.HookTimeout
	if timeout <= 0 {
		timeout = 300 * time.Second
	}
	log, err := meta.OpenAppend(logPath, d.Store.Warn) // never through a link
	if err != nil {
		return "error: " + err.Error(), fmt.Errorf("%s hook: open log: %w", name, err)
	}
	defer log.Close()
	fmt.Fprintf(log, "agentctl: %s hook: %s\n", name, cmdline)
	cmd := exec.Command("/bin/sh", "-c", cmdline)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), d.Environ...), env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		res := "error: " + err.Error()
		fmt.Fprintf(log, "agentctl: %s hook: %s\n", name, res)
		return res, fmt.Errorf("%s hook %q: %w", name, cmdline, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var werr error
	res := ""
	select {
	case werr = <-done:
	case <-timer.C:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		res = "timeout"
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		res = "error: " + ctx.Err().Error()
	}
	if res == "" {
		var ee *exec.ExitError
		switch {
		case werr == nil:
			res = "ok"
		case errors.As(werr, &ee):
			res = "exit " + strconv.Itoa(exitCodeOf(ee.ProcessState))
		default:
			res = "error: " + werr.Error()
		}
	}
	fmt.Fprintf(log, "agentctl: %s hook: %s\n", name, res)
	if res != "ok" {
		if res == "timeout" {
			return res, fmt.Errorf("%s hook %q timed out after %s (see %s)", name, cmdline, timeout, logPath)
		}
		return res, fmt.Errorf("%s hook %q failed: %s (see %s)", name, cmdline, res, logPath)
	}
	return res, nil
}

// exitCodeOf is the shell-style exit code: 128+N for a death by signal N.
func exitCodeOf(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
