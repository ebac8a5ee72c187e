package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/jsonl"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// Report is the one line the supervisor writes to the launcher over the pipe.
type Report struct {
	Status    string `json:"status"` // ready | failed
	SessionID string `json:"session_id,omitempty"`
	PID       int    `json:"pid,omitempty"`
	Class     string `json:"class,omitempty"`
	Message   string `json:"message,omitempty"`
}

// Supervise is `agentctl __supervise <launch-id>`: it runs in its own session with
// its stdio on the launch log, starts the agent as its child in the agent's own
// process group (stdin: the prompt file; stdout and stderr: the launch log),
// records the agent's verified identity in the launch record and the lock,
// confirms the session id from the agent's own output, reports to the launcher,
// waits for the agent and finalises. If this process dies, nothing about the
// session changes: the agent keeps running and a later command finalises it.
func (d *Deps) Supervise(ctx context.Context, launchID string, ready io.WriteCloser, prompt *os.File, environ []string, confirmTimeout time.Duration) error {
	reported := false
	report := func(r Report) {
		if reported || ready == nil {
			return
		}
		reported = true
		b, _ := json.Marshal(r)
		_, _ = ready.Write(append(b, '\n'))
		_ = ready.Close()
	}
	defer func() {
		if !reported && ready != nil {
			_ = ready.Close()
		}
	}()
	recs, err := d.Store.ReadLaunches()
	if err != nil {
		return err
	}
	rec := meta.FindLaunch(recs, launchID)
	if rec == nil {
		return fmt.Errorf("no launch record %s", launchID)
	}
	drv, err := DriverFor(rec.Adapter)
	if err != nil {
		return err
	}
	if drv.Gateway() {
		return d.superviseGateway(ctx, rec, report, prompt, environ, confirmTimeout)
	}
	if rec.Background {
		return d.superviseBackground(ctx, rec, report, prompt, environ, confirmTimeout)
	}
	fail := func(o Outcome, exit *int) error {
		// Finalise first: when `launch` reports the failure, the lock is released
		// and the record says why.
		_, ferr := d.finalise(ctx, launchID, ended{ExitCode: exit, Outcome: o, Startup: true}, false)
		report(Report{Status: "failed", Class: o.Class, Message: o.Message})
		return ferr
	}

	// Handled signals are reset to their defaults in a child, ignored ones stay
	// ignored: if whoever started us ignored SIGINT (nohup, go test, a shell's
	// background job), the agent would too and `stop` could not interrupt it.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	d.takeOver(launchID)

	logf, offset, err := openLaunchLog(rec.Log)
	if err != nil {
		return fail(Outcome{Class: "error", Message: err.Error()}, nil)
	}
	defer logf.Close()
	startOffset := offset

	var stdin io.Reader
	if prompt != nil {
		stdin = prompt
	}
	// A kept-open run (launch --keep-open) reads a FIFO instead: the prompt
	// goes in as its first command, written once the agent runs.
	var input *os.File
	var first []byte
	if rec.Input != "" {
		if input, first, err = openKeptInput(drv, rec.Input, prompt); err != nil {
			return fail(Outcome{Class: "error", Message: err.Error()}, nil)
		}
		defer input.Close()
		prompt, stdin = nil, input
	}

	newCmd := func() *exec.Cmd {
		return &exec.Cmd{
			Path: rec.Bin, Args: append([]string{rec.Bin}, rec.Argv...), Dir: rec.Cwd, Env: environ,
			Stdin: stdin, Stdout: logf, Stderr: logf,
			// Own session and process group (pgid == pid), no controlling TTY: the
			// agent outlives us, and stop can signal its whole group.
			SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		}
	}
	cmd := newCmd()
	err = cmd.Start()
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ETXTBSY) {
		// A self-update may be swapping the binary: re-resolve once (docs/agents/claude-code.md §6.1).
		time.Sleep(500 * time.Millisecond)
		cmd = newCmd()
		err = cmd.Start()
	}
	if err != nil {
		if prompt != nil {
			prompt.Close()
		}
		return fail(Outcome{Class: "binary-missing", Message: fmt.Sprintf("cannot run %s: %v; install the agent or fix its binary setting", rec.Bin, err)}, nil)
	}
	if prompt != nil {
		prompt.Close() // the child has its own descriptor
	}
	pid := cmd.Process.Pid
	spawned := time.Now()
	exited := make(chan int, 1)
	go func() {
		_ = cmd.Wait()
		exited <- exitCodeOf(cmd.ProcessState)
	}()
	var wrote chan error
	if input != nil {
		wrote = make(chan error, 1)
		go func() {
			_, err := input.Write(first)
			// The agent holds its own descriptor; ours goes, so the FIFO's
			// only reader is the agent (send finds no reader once it is gone).
			wrote <- errors.Join(err, input.Close())
		}()
	}
	boot := d.Procs.BootID()
	var ticks uint64
	if p, err := d.Procs.Find(pid); err == nil {
		ticks = p.StartTicks
	}
	d.setField(launchID, func(r *meta.Launch) {
		r.PID, r.PGID, r.StartTicks, r.BootID, r.LogOffset = pid, pid, ticks, boot, offset
	})
	if ticks != 0 {
		if _, err := locks.SetOwner(d.Store, launchID, pid, ticks, boot, ""); err != nil {
			d.warn("lock: %v", err)
		}
	}

	// Confirmation: only the agent's own output can name the session.
	want := rec.SessionID
	if confirmTimeout <= 0 {
		confirmTimeout = ClaudeConfirmTimeout
	}
	deadline := time.Now().Add(confirmTimeout)
	var lines [][]byte
	readMore := func() {
		offset, _, _ = jsonl.ReadFile(rec.Log, offset, func(line []byte, _ int64) error {
			lines = append(lines, append([]byte(nil), line...))
			return nil
		})
	}
	interval := 10 * time.Millisecond
	var sid string
	var init *meta.InitInfo
	prober, _ := drv.(Prober)
	var probe *Probe
	if prober != nil {
		probe = &Probe{Kind: rec.Kind, Want: want, Cwd: rec.Cwd, Argv: rec.Argv, Environ: environ, Spawned: spawned}
	}
	var lastProbe time.Time
	for confirmed := false; !confirmed; {
		readMore()
		if sid, init, confirmed = drv.Confirm(lines, want); confirmed {
			break
		}
		if prober != nil && time.Since(lastProbe) >= 200*time.Millisecond {
			lastProbe = time.Now()
			if sid, confirmed = prober.Probe(probe); confirmed {
				break
			}
		}
		select {
		case code := <-exited:
			readMore()
			if sid, init, confirmed = drv.Confirm(lines, want); confirmed {
				exited <- code // confirmed, then done: report ready, finalise below
				continue
			}
			o := drv.Classify(lines, code, false)
			if o.Class == "" {
				o = Outcome{Class: "crashed", Message: fmt.Sprintf("the agent exited (code %d) before confirming its session", code)}
			}
			return fail(o, &code)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
		if time.Now().After(deadline) {
			code := d.stopChild(pid, exited)
			return fail(Outcome{Class: "timeout", Message: fmt.Sprintf("no session confirmation from the agent within %s; stopped it (see %s)", confirmTimeout, rec.Log)}, code)
		}
		if interval < 100*time.Millisecond {
			interval *= 2
		}
	}

	if wrote != nil {
		// Ready only once the prompt is wholly in the FIFO: a send must not
		// write into the middle of it.
		select {
		case err := <-wrote:
			if err != nil {
				code := d.stopChild(pid, exited)
				return fail(Outcome{Class: "error", Message: fmt.Sprintf("write the prompt to the agent's input %s: %v; stopped it", rec.Input, err)}, code)
			}
		case <-time.After(confirmTimeout):
			code := d.stopChild(pid, exited)
			return fail(Outcome{Class: "timeout", Message: fmt.Sprintf("the agent did not read its prompt within %s; stopped it (see %s)", confirmTimeout, rec.Log)}, code)
		}
	}
	if strict, ok := drv.(interface{ StrictResume() bool }); ok && strict.StrictResume() && rec.Kind == KindResume && sid != want {
		_ = d.Kill(pid, syscall.SIGINT)
		code := d.stopChild(pid, exited)
		return fail(Outcome{Class: "resume-mismatch", Message: fmt.Sprintf("asked to resume %s, the agent started thread %s instead; stopped it", want, sid)}, code)
	}
	now := d.now()
	d.setField(launchID, func(r *meta.Launch) {
		r.ConfirmedAt = &now
		r.Init = init
		if r.Model == "" && init != nil {
			r.Model = init.Model
		}
		if sid != want {
			if r.Kind == KindResume {
				r.ResumedAs = sid
			} else {
				r.SessionID = sid
			}
		}
	})
	if ticks != 0 {
		if _, err := locks.SetOwner(d.Store, launchID, pid, ticks, boot, sid); err != nil {
			d.warn("lock: %v", err)
		}
	}
	if cur := d.record(launchID); cur != nil {
		d.journal(meta.EventLaunched, cur)
	}
	report(Report{Status: "ready", SessionID: sid, PID: pid})

	code, err := d.awaitExit(ctx, launchID, exited)
	if err != nil {
		return err
	}
	stopRequested := false
	if cur := d.record(launchID); cur != nil {
		stopRequested = cur.StopRequested != nil
	}
	o := drv.Classify(logTail(rec.Log, startOffset), code, stopRequested)
	_, err = d.finalise(ctx, launchID, ended{ExitCode: &code, Outcome: o}, false)
	return err
}

// record re-reads one launch record.
// takeOver makes this supervisor the owner of launch id and of its auto-lock.
// The launcher's claim ends: it may live on, e.g. `launch --wait`, without
// keeping the record "owned".
func (d *Deps) takeOver(id string) {
	spid, sstart := d.self()
	d.setField(id, func(r *meta.Launch) {
		r.SupervisorPID, r.SupervisorStart = spid, sstart
		r.LauncherPID, r.LauncherStart = 0, 0
	})
	if _, err := locks.SetOwner(d.Store, id, spid, sstart, "", ""); err != nil {
		d.warn("lock: %v", err)
	}
}

func (d *Deps) record(id string) *meta.Launch {
	recs, err := d.Store.ReadLaunches()
	if err != nil {
		return nil
	}
	return meta.FindLaunch(recs, id)
}

// stopChild stops our own child's process group after a failed start: SIGTERM,
// then SIGKILL after 3 s. It returns the exit code once observed.
func (d *Deps) stopChild(pid int, exited chan int) *int {
	_ = d.Kill(-pid, syscall.SIGTERM)
	select {
	case code := <-exited:
		return &code
	case <-time.After(3 * time.Second):
	}
	_ = d.Kill(-pid, syscall.SIGKILL)
	select {
	case code := <-exited:
		return &code
	case <-time.After(2 * time.Second):
	}
	return nil
}

// openLaunchLog opens a launch's log for appending the agent's output and
// returns the size it had, where this run's output starts.
func openLaunchLog(path string) (*os.File, int64, error) {
	f, err := meta.OpenAppend(path, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("open launch log %s: %v", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}
