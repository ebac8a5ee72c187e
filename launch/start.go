package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// Spec is one launch (or resume), its inputs already validated by the command.
type Spec struct {
	Adapter   string
	Kind      string // KindLaunch (default) or KindResume
	SessionID string // resume: the session to continue
	// SessionPath and SessionModel describe the resumed session as the read side
	// found it (pi resumes by file path; opencode keeps the session's model).
	SessionPath, SessionModel string
	Fork                      bool // resume into a new session (CanFork)
	// LaunchID is assigned by Start (kept when already set).
	LaunchID string
	Prompt   string // the full prompt, delivered on stdin
	Summary  string // what the record keeps of the prompt (shown by list, sent in webhooks)
	Cwd      string // realpath

	Model, PermissionMode, AppendSystemPrompt string
	Sandbox                                   bool
	// Background: a Claude Code background session (`claude --bg`,
	// docs/agents/claude-code.md §4.5), hosted by Claude's daemon.
	Background bool
	UserEnv    []string
	Home       string

	OnCreate, OnComplete string
	Meta                 map[string]string
	Force                bool
	User                 string
	// LockHeld: the caller already holds the auto-lock on Cwd under LaunchID
	// (LockAll), so Start does not take it again.
	LockHeld bool

	Group, SpecPath, Branch, Worktree, BaseBranch string
	BaseCommit                                    string
	WebhookURL, WebhookSecret                     string
	// Budget is what the run may take; the supervisor stops the agent past it.
	Budget *meta.Budget
	// KeepOpen: the run stays open for messages after its prompt (`launch
	// --keep-open`, agents whose row says KeepOpen).
	KeepOpen bool
}

// Launcher starts supervised agents.
type Launcher struct {
	*Deps
	// Self is how to run agentctl itself (the supervisor is `Self __supervise`).
	Self     string
	Euid     int
	LookPath func(string) (string, error)
	// ConfirmTimeout overrides the driver's confirmation window (0: the driver's).
	ConfirmTimeout time.Duration
}

// Result is a launch that the agent confirmed.
type Result struct {
	Record   meta.Launch
	Warnings []string
	// OnCreateErr is a failed on-create hook: reported with exit 1, but the agent
	// keeps running.
	OnCreateErr error
}

// StartError is a launch that did not get confirmed: Class and Message come from
// the agent's output (auth, bad-flag, …) or from agentctl (timeout, aborted).
type StartError struct {
	Class, Message, Log string
}

func (e *StartError) Error() string {
	if e.Log != "" {
		return fmt.Sprintf("launch failed (%s): %s (log: %s)", e.Class, e.Message, e.Log)
	}
	return fmt.Sprintf("launch failed (%s): %s", e.Class, e.Message)
}

// Plan checks everything about a launch that can be checked without writing any
// state: the adapter, the binary, the environment policy, the root guard.
func (l *Launcher) Plan(sp *Spec) (Driver, *Plan, error) {
	drv, err := DriverFor(sp.Adapter)
	if err != nil {
		return nil, nil, &InputError{err.Error()}
	}
	if err := ParseEnv(sp.UserEnv); err != nil {
		return nil, nil, &InputError{err.Error()}
	}
	req := &Request{Kind: sp.Kind, SessionID: sp.SessionID, SessionPath: sp.SessionPath, SessionModel: sp.SessionModel, Fork: sp.Fork,
		LaunchID: sp.LaunchID, Prompt: sp.Prompt, Cwd: sp.Cwd, Model: sp.Model, PermissionMode: sp.PermissionMode,
		AppendSystemPrompt: sp.AppendSystemPrompt, Sandbox: sp.Sandbox, Background: sp.Background, UserEnv: sp.UserEnv, Environ: l.Environ,
		Euid: l.Euid, Home: sp.Home, Config: l.Config, LookPath: l.LookPath, KeepOpen: sp.KeepOpen}
	if sp.KeepOpen {
		if err := keepOpenAllowed(sp, drv); err != nil {
			return nil, nil, err
		}
	}
	if sp.Background {
		if _, ok := drv.(Claude); !ok {
			return nil, nil, &InputError{fmt.Sprintf("--background is for claude-code (Claude Code's own background sessions), not %s", sp.Adapter)}
		}
		if sp.Kind == KindResume {
			return nil, nil, &InputError{"--background applies to launch only; resume a background session with `claude --bg --resume <id>` or `claude attach <short>`"}
		}
	}
	plan, err := drv.Plan(req)
	if err != nil {
		return nil, nil, err
	}
	if plan.Bin != "" {
		if abs, err := filepath.Abs(plan.Bin); err == nil {
			plan.Bin = abs
		}
	}
	if l.ConfirmTimeout > 0 {
		plan.ConfirmTimeout = l.ConfirmTimeout
	}
	return drv, plan, nil
}

// LockAll takes the auto-locks of several launches at once, all or nothing
// (a comparison group: one slot's locked directory and no agent starts). It
// assigns each spec its LaunchID and marks the lock held for Start; on a
// conflict (*locks.ConflictError) nothing is locked.
func (l *Launcher) LockAll(specs []*Spec) ([]string, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	if err := l.Store.EnsureDir(); err != nil {
		return nil, err
	}
	me, myStart := l.self()
	now := l.now()
	var ls []locks.Lock
	for _, sp := range specs {
		if sp.Kind == "" {
			sp.Kind = KindLaunch
		}
		if sp.LaunchID == "" {
			sp.LaunchID = NewLaunchID()
		}
		if sp.Cwd == "" {
			continue
		}
		ls = append(ls, locks.Lock{Directory: sp.Cwd, Type: locks.Auto, PID: me, PIDStart: myStart, LaunchID: sp.LaunchID,
			LockedBy: sp.User, Reason: fmt.Sprintf("%s %s %s", sp.Adapter, sp.Kind, sp.LaunchID), LockedAt: now})
	}
	warns, err := locks.AcquireAll(l.Store, ls, specs[0].Force)
	if err != nil {
		return nil, err
	}
	for _, sp := range specs {
		sp.LockHeld = sp.Cwd != ""
	}
	return warns, nil
}

// Start launches one agent (README "Launch and supervision"): lock the directory, write the launch
// record, start the detached supervisor and wait for its ready/failed report.
// Locking conflicts come back as *locks.ConflictError, unconfirmed launches as
// *StartError.
func (l *Launcher) Start(ctx context.Context, sp Spec) (*Result, error) {
	if sp.Kind == "" {
		sp.Kind = KindLaunch
	}
	if sp.LaunchID == "" {
		sp.LaunchID = NewLaunchID()
	}
	st := l.Store
	// The directory lock is this call's until the supervisor confirms the
	// session: every return before that releases it, here and only here.
	lease := &dirLease{store: st, launchID: sp.LaunchID, held: sp.LockHeld}
	defer lease.Release()
	_, plan, err := l.Plan(&sp)
	if err != nil {
		return nil, err
	}
	if err := st.EnsureDir(); err != nil {
		return nil, err
	}
	// The prompt goes to the agent's stdin from a 0600 file under the state dir,
	// never through argv (ps, 128 KiB limit, a leading "-") nor an open pipe.
	promptDir := filepath.Join(st.Dir, "prompts")
	if err := os.MkdirAll(promptDir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", promptDir, err)
	}
	pf, err := os.CreateTemp(promptDir, sp.Adapter+"-prompt-*")
	if err != nil {
		return nil, fmt.Errorf("prompt file: %w", err)
	}
	defer func() {
		pf.Close()
		os.Remove(pf.Name())
	}()
	if _, err := pf.WriteString(sp.Prompt); err != nil {
		return nil, fmt.Errorf("write prompt file: %w", err)
	}
	if _, err := pf.Seek(0, 0); err != nil {
		return nil, err
	}

	id := sp.LaunchID
	me, myStart := l.self()
	now := l.now()
	reason := fmt.Sprintf("%s %s %s", sp.Adapter, sp.Kind, id)
	var warns []string
	// An OpenClaw turn runs in the gateway's own workspace: no directory to lock.
	if sp.Cwd != "" && sp.LockHeld {
		if _, err := locks.SetOwner(st, id, me, myStart, "", plan.SessionID); err != nil {
			return nil, err
		}
	} else if sp.Cwd != "" {
		if warns, err = lease.Acquire(locks.Lock{Directory: sp.Cwd, Type: locks.Auto, PID: me, PIDStart: myStart,
			SessionID: plan.SessionID, LaunchID: id, LockedBy: sp.User, Reason: reason, LockedAt: now}, sp.Force); err != nil {
			return nil, err
		}
	}
	res := &Result{Warnings: warns}
	logPath := st.LogPath(id)
	rec := meta.Launch{ID: id, Kind: sp.Kind, Adapter: sp.Adapter, SessionID: plan.SessionID, Model: sp.Model, Cwd: sp.Cwd,
		Prompt: sp.Summary, Group: sp.Group, Spec: sp.SpecPath, Branch: sp.Branch, Worktree: sp.Worktree, BaseBranch: sp.BaseBranch,
		BaseCommit: sp.BaseCommit, Meta: sp.Meta, Argv: plan.Args, Log: logPath, OnCreate: sp.OnCreate, OnComplete: sp.OnComplete,
		LauncherPID: me, LauncherStart: myStart, Bin: plan.Bin, EnvNames: plan.EnvNames, User: sp.User, Home: sp.Home,
		WebhookURL: sp.WebhookURL, WebhookSecret: sp.WebhookSecret, LaunchedAt: now, Background: sp.Background}
	if plan.Input {
		rec.Input = l.InputPath(id)
	}
	if !sp.Budget.Empty() {
		b := *sp.Budget
		rec.Budget = &b
	}
	if err := st.UpdateLaunches(func(ls *meta.Launches) (bool, error) {
		ls.Records = append(ls.Records, rec)
		return true, nil
	}); err != nil {
		return nil, err
	}
	abort := func(class, msg string) error {
		_, _ = l.finalise(ctx, id, ended{Outcome: Outcome{Class: class, Message: msg}, Startup: true}, false)
		return &StartError{Class: class, Message: msg, Log: logPath}
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return nil, abort("error", err.Error())
	}
	logf, err := meta.OpenAppend(logPath, st.Warn)
	if err != nil {
		return nil, abort("error", err.Error())
	}
	defer logf.Close()
	where := sp.Cwd
	if where == "" {
		where = "the gateway's workspace"
	}
	fmt.Fprintf(logf, "agentctl: %s %s %s in %s at %s\n", sp.Kind, sp.Adapter, id, where, now.Format(time.RFC3339))

	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, abort("error", err.Error())
	}
	defer pr.Close()
	self := l.Self
	if self == "" {
		if self, err = os.Executable(); err != nil {
			pw.Close()
			return nil, abort("error", "cannot find the agentctl executable: "+err.Error())
		}
	}
	sup := &exec.Cmd{
		Path: self,
		Args: []string{self, "__supervise", "--state", st.Dir, "--confirm-timeout", plan.ConfirmTimeout.String(), id},
		// The supervisor's environment is the agent's (after the env policy); it
		// hands it on unchanged.
		Env:    plan.Env,
		Dir:    sp.Cwd,
		Stdout: logf, Stderr: logf,
		// fd 3: the report pipe; fd 4: the prompt.
		ExtraFiles:  []*os.File{pw, pf},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := sup.Start(); err != nil {
		pw.Close()
		return nil, abort("error", "start the supervisor: "+err.Error())
	}
	pw.Close()
	// Reap the supervisor if this process lives on (tests, --wait); a CLI launcher
	// simply exits and the supervisor carries on.
	go func() { _ = sup.Wait() }()

	wait := plan.ConfirmTimeout + 15*time.Second
	if sp.Background {
		// Warming Claude's daemon comes first, and background launches take
		// turns (superviseBackground).
		wait += bgDaemonTimeout + bgSpareTimeout
	}
	rep, rerr := readReport(ctx, pr, wait)
	if rerr != nil || rep.Status != "ready" {
		if rerr == nil && rep.Status == "failed" {
			return nil, &StartError{Class: rep.Class, Message: rep.Message, Log: logPath}
		}
		// The supervisor died or hung before reporting: nothing confirmed the
		// session, so stop whatever agent it started and call the launch failed.
		// (Also when we were interrupted: a launch nobody saw confirmed must not
		// leave an agent behind.) The supervisor goes first, so it cannot start
		// an agent after we looked.
		msg := "the supervisor exited without confirming the session"
		if rerr != nil && !errors.Is(rerr, errEOF) {
			msg = rerr.Error()
		}
		_ = l.Kill(sup.Process.Pid, syscall.SIGKILL)
		bg := context.Background()
		if cur := l.record(id); cur != nil && cur.PID > 0 {
			if _, ok := l.verify(cur.PID, cur.StartTicks, cur.BootID); ok {
				_, _ = l.Stop(bg, StopTarget{SessionID: cur.SessionID, PID: cur.PID, Start: cur.StartTicks, BootID: cur.BootID, PGID: cur.PGID, Group: true, LaunchID: id}, StopOptions{Force: true})
			}
		} else if cur != nil && cur.Gateway != nil {
			// A gateway run the supervisor started before it went away.
			_, _ = l.StopGateway(bg, GatewayStopTarget{Key: cur.CurrentSessionID(), RunID: cur.Gateway.RunID, LaunchID: id, Home: sp.Home}, false)
		}
		_, _ = l.finalise(bg, id, ended{Outcome: Outcome{Class: "aborted", Message: msg}, Startup: true}, false)
		return nil, &StartError{Class: "aborted", Message: msg, Log: logPath}
	}
	// Confirmed: the lock is the supervisor's now (it releases it when the
	// run ends), whatever happens to this process.
	lease.HandOver()
	cur := l.record(id)
	if cur == nil {
		return nil, &StartError{Class: "error", Message: "the launch record vanished", Log: logPath}
	}
	res.Record = *cur
	if sp.OnCreate != "" {
		env := HookEnv(cur, nil)
		out, herr := l.RunHook(ctx, "on-create", sp.OnCreate, cur.Cwd, env, logPath)
		l.setField(id, func(r *meta.Launch) { r.OnCreateResult = out })
		res.OnCreateErr = herr
	}
	return res, nil
}

// dirLease is Start's hold on a launch's directory lock (the auto-lock, by
// launch id): Release, deferred once, frees it on every way out of Start
// before HandOver gave it to the supervisor. Releasing a lock that a
// finalisation already released is a no-op.
type dirLease struct {
	store    *meta.Store
	launchID string
	held     bool
}

// Acquire takes the lock (LockAll's caller already holds it: held from the start).
func (d *dirLease) Acquire(lk locks.Lock, force bool) ([]string, error) {
	warns, err := locks.Acquire(d.store, lk, force)
	d.held = err == nil
	return warns, err
}

// HandOver gives the lock to the supervisor: Release no longer frees it.
func (d *dirLease) HandOver() { d.held = false }

// Release frees the lock unless it was handed over.
func (d *dirLease) Release() {
	if d.held {
		_ = locks.ReleaseLaunch(d.store, d.launchID)
		d.held = false
	}
}

var errEOF = errors.New("EOF")

// readReport reads the supervisor's one-line report.
func readReport(ctx context.Context, r *os.File, timeout time.Duration) (Report, error) {
	type answer struct {
		rep Report
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadBytes('\n')
		if len(line) == 0 && err != nil {
			ch <- answer{err: errEOF}
			return
		}
		var rep Report
		if jerr := json.Unmarshal(line, &rep); jerr != nil {
			ch <- answer{err: fmt.Errorf("garbled report from the supervisor: %q", line)}
			return
		}
		ch <- answer{rep: rep}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-ch:
		return a.rep, a.err
	case <-t.C:
		return Report{}, fmt.Errorf("no report from the supervisor within %s", timeout)
	case <-ctx.Done():
		return Report{}, ctx.Err()
	}
}

// WaitLaunch blocks until the launch's run has ended and its record says so
// (finalising it lazily if its supervisor died), polling with back-off.
func (d *Deps) WaitLaunch(ctx context.Context, id string) (*meta.Launch, error) {
	interval := 100 * time.Millisecond
	for {
		cur := d.record(id)
		if cur == nil {
			return nil, fmt.Errorf("launch record %s is gone", id)
		}
		// The supervisor exits only after on-complete and the webhook, so "ended"
		// means: neither the agent nor the supervisor is alive any more.
		running := d.Store.AgentAlive(cur) || d.Store.IsAlive(cur.SupervisorPID, cur.SupervisorStart, "")
		if !running {
			if cur.FinalisedAt == nil {
				if _, err := d.FinaliseDead(ctx); err != nil {
					return nil, err
				}
				if again := d.record(id); again != nil {
					cur = again
				}
			}
			if cur.EndedAt != nil {
				return cur, nil
			}
		}
		if err := d.Sleep(ctx, interval); err != nil {
			return nil, err
		}
		interval = min(interval*2, 2*time.Second)
	}
}

// ExitStatus renders an exit code for people ("exit 0", "exit unknown").
func ExitStatus(code *int) string {
	if code == nil {
		return "exit unknown"
	}
	return "exit " + strconv.Itoa(*code)
}

// PromptMaxAge is how long a prompt file may stay under prompts/: Start removes
// its own once the agent holds it (or the launch failed), so one older than this
// was left by a launcher killed outright (SIGKILL, a crash).
const PromptMaxAge = time.Hour

// SweepPrompts removes the prompt files under the state dir's prompts/ that are
// older than PromptMaxAge (sweep calls it) and returns how many went. A prompt
// holds the user's whole task: it must not outlive the launch that wrote it.
func (d *Deps) SweepPrompts() (int, error) {
	dir := filepath.Join(d.Store.Dir, "prompts")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	n := 0
	for _, ent := range ents {
		info, err := ent.Info()
		if err != nil || !info.Mode().IsRegular() || d.now().Sub(info.ModTime()) < PromptMaxAge {
			continue
		}
		if err := os.Remove(filepath.Join(dir, ent.Name())); err == nil {
			n++
		}
	}
	return n, nil
}
