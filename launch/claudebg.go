package launch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/jsonl"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// Claude Code background sessions (`claude --bg`, docs/agents/claude-code.md §4.5):
// `claude --bg` hands the session to Claude's own daemon and exits at once, so
// the supervisor cannot wait for a child. It makes sure a warm spare is ready
// (so that the prompt reaches a claimed spare on stdin and is in no argv),
// runs `claude --bg` with the prompt on stdin, confirms the session from the
// registry entry naming the printed short id, and then watches the session's
// process (PID + start time) and Claude's job record until it ends.

// bgShort is what `claude --bg` prints: `backgrounded · <short>`.
var bgShort = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`backgrounded · ([0-9a-f]{8})`) })

// Timeouts of the warm-up (docs/agents/claude-code.md §4.5: the daemon binds
// its control socket within ~0.5 s, a spare listens ~2 s later).
var (
	bgDaemonTimeout = 15 * time.Second
	bgSpareTimeout  = 45 * time.Second
	bgWatchInterval = 250 * time.Millisecond
	// bgSockBase is where Claude keeps its daemons' sockets (tests move it).
	bgSockBase = "/tmp"
)

// claudeSockDir is the directory of the daemon serving config root root:
// /tmp/cc-daemon-<uid>/<first 8 hex of sha256(root)> (docs/agents/claude-code.md §4.5).
func claudeSockDir(root string, uid int) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(bgSockBase, "cc-daemon-"+strconv.Itoa(uid), hex.EncodeToString(sum[:])[:8])
}

// spareReady reports whether a warm spare listens in dir: its claim socket
// exists from the moment it can be claimed until it is.
func spareReady(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "spare", "*.claim.sock"))
	return len(m) > 0
}

// bgLease is a lease on Claude's daemon: while it is held the daemon stays up
// and keeps a spare warm (docs/agents/claude-code.md §4.5).
type bgLease struct{ conn net.Conn }

func (l *bgLease) Close() {
	if l != nil && l.conn != nil {
		_ = l.conn.Close()
	}
}

// takeLease asks the daemon at sock for a lease, the way Claude's own clients
// do: one JSON line, answered {"ok":true,"op":"lease"}.
func takeLease(sock, cwd string, pid int, timeout time.Duration) (*bgLease, error) {
	c, err := net.DialTimeout("unix", sock, timeout)
	if err != nil {
		return nil, err
	}
	req, _ := json.Marshal(map[string]any{"proto": 1, "op": "lease",
		"client": map[string]any{"label": "agentctl launch", "cwd": cwd, "pid": pid}})
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(append(req, '\n')); err != nil {
		c.Close()
		return nil, err
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("no answer to a lease: %w", err)
	}
	var ans struct {
		OK bool   `json:"ok"`
		Op string `json:"op"`
	}
	if json.Unmarshal(line, &ans) != nil || !ans.OK || ans.Op != "lease" {
		c.Close()
		return nil, fmt.Errorf("lease refused: %s", strings.TrimSpace(string(line)))
	}
	_ = c.SetDeadline(time.Time{})
	return &bgLease{conn: c}, nil
}

// warmClaude makes sure Claude's daemon for root runs and has a warm spare,
// and holds a lease on it until the caller closes it (after `claude --bg`
// returned). A cold daemon would start the first session itself with the
// prompt in its argv (docs/agents/claude-code.md §4.5), so without a spare the launch fails
// rather than expose the prompt.
func (d *Deps) warmClaude(ctx context.Context, bin string, env []string, root, cwd string) (*bgLease, error) {
	dir := claudeSockDir(root, os.Getuid())
	sock := filepath.Join(dir, "control.sock")
	pid, _ := d.self()
	lease, err := takeLease(sock, cwd, pid, 2*time.Second)
	if err != nil {
		// No daemon: start a transient one, as `claude --bg` itself would. It
		// exits at once when the config root does not exist yet (a fresh HOME).
		if err := os.MkdirAll(root, 0o700); err != nil {
			return nil, fmt.Errorf("create Claude's config root: %w", err)
		}
		by, _ := json.Marshal(map[string]any{"label": "agentctl launch", "cwd": cwd, "pid": pid})
		cmd := &exec.Cmd{Path: bin, Args: []string{bin, "daemon", "run", "--origin", "transient", "--spawned-by", string(by)},
			Dir: cwd, Env: env, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start Claude's daemon (%s daemon run): %v", bin, err)
		}
		go func() { _ = cmd.Wait() }()
		deadline := time.Now().Add(bgDaemonTimeout)
		for {
			if lease, err = takeLease(sock, cwd, pid, 2*time.Second); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("the daemon of Claude Code did not answer on %s within %s (%v); see `%s daemon status`", sock, bgDaemonTimeout, err, bin)
			}
			if err := d.Sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, err
			}
		}
	}
	deadline := time.Now().Add(bgSpareTimeout)
	for !spareReady(dir) {
		if time.Now().After(deadline) {
			lease.Close()
			return nil, fmt.Errorf("the daemon of Claude Code has no warm spare after %s (%s/spare); not starting the session, whose prompt would otherwise be in a process's argv", bgSpareTimeout, dir)
		}
		if err := d.Sleep(ctx, 100*time.Millisecond); err != nil {
			lease.Close()
			return nil, err
		}
	}
	return lease, nil
}

// bgEntry is the part of a registry entry (<root>/sessions/<pid>.json) that
// names a background session (docs/agents/claude-code.md §4.5).
type bgEntry struct {
	PID       int             `json:"pid"`
	SessionID string          `json:"sessionId"`
	ProcStart json.RawMessage `json:"procStart"`
	Kind      string          `json:"kind"`
	JobID     string          `json:"jobId"`
}

// findBgEntry returns the registry entry whose jobId is short.
func findBgEntry(root, short string) (*bgEntry, bool) {
	m, _ := filepath.Glob(filepath.Join(root, "sessions", "*.json"))
	for _, p := range m {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var e bgEntry
		if json.Unmarshal(b, &e) == nil && e.JobID == short && e.PID > 0 && e.SessionID != "" {
			return &e, true
		}
	}
	return nil, false
}

// procStart is the entry's start time in clock ticks ("2128388" or a number;
// 0: not given).
func (e *bgEntry) procStart() uint64 {
	s := strings.Trim(string(e.ProcStart), `"`)
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

// jobState reads Claude's job record of short: state and detail ("" when
// there is none).
func jobState(root, short string) (state, detail string) {
	b, err := os.ReadFile(filepath.Join(root, "jobs", short, "state.json"))
	if err != nil {
		return "", ""
	}
	var j struct {
		State  string `json:"state"`
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal(b, &j)
	return j.State, j.Detail
}

// bgEnd is how a background session ended, from Claude's job record once its
// process is gone (docs/agents/claude-code.md §4.5): `stopped` (claude stop) and `done` are
// an end (exit 0) unless agentctl's stop or a failure says otherwise; a record
// still `working` or `blocked` means the process died without Claude
// recording it (killed, or the daemon was).
func bgEnd(root, short string, stopRequested bool) (int, Outcome) {
	state, detail := jobState(root, short)
	switch state {
	case "stopped", "done":
		return 0, Outcome{}
	}
	if stopRequested {
		return 0, Outcome{}
	}
	if state == "" {
		return -1, Outcome{Class: "crashed", Message: fmt.Sprintf("the background session %s ended and Claude kept no job record of it", short)}
	}
	msg := fmt.Sprintf("the background session %s ended while Claude's job record still says %s", short, state)
	if detail != "" {
		msg += " (" + oneLine(detail, 120) + ")"
	}
	return -1, Outcome{Class: "crashed", Message: msg + "; see `claude logs " + short + "`"}
}

// jobSettle is how long the supervisor lets Claude's job record catch up with
// a background session whose process just exited: after `claude stop` returned,
// Claude Code 2.1.332 was seen to leave the record `working` for a moment after
// the process was gone (e2e, under load), which bgEnd would read as a crash.
const jobSettle = 5 * time.Second

// settleJob waits, up to jobSettle, while short's job record still says the
// session is working or blocked.
func (d *Deps) settleJob(ctx context.Context, root, short string) {
	const step = 100 * time.Millisecond
	for waited := time.Duration(0); waited < jobSettle; waited += step {
		if st, _ := jobState(root, short); st != "working" && st != "blocked" {
			return
		}
		if d.Sleep(ctx, step) != nil {
			return
		}
	}
}

// rootOf is the config root of a launch from its environment.
func rootOf(environ []string) string {
	return claudeRoot(newEnvSet(environ))
}

// superviseBackground is Supervise for `launch claude-code --background`.
func (d *Deps) superviseBackground(ctx context.Context, rec *meta.Launch, report func(Report), prompt *os.File, environ []string, confirmTimeout time.Duration) error {
	id := rec.ID
	fail := func(o Outcome, exit *int) error {
		_, ferr := d.finalise(ctx, id, ended{ExitCode: exit, Outcome: o, Startup: true}, false)
		report(Report{Status: "failed", Class: o.Class, Message: o.Message})
		return ferr
	}
	if prompt != nil {
		defer prompt.Close()
	}
	d.takeOver(id)
	if confirmTimeout <= 0 {
		confirmTimeout = ClaudeConfirmTimeout
	}
	root := rootOf(environ)
	if root == "" {
		return fail(Outcome{Class: "error", Message: "no HOME or CLAUDE_CONFIG_DIR: cannot find Claude's config root"}, nil)
	}
	logf, offset, err := openLaunchLog(rec.Log)
	if err != nil {
		return fail(Outcome{Class: "error", Message: err.Error()}, nil)
	}
	defer logf.Close()

	// One background launch at a time per state dir: two at once could both
	// see the same spare, and the second session would start cold.
	unlock, err := d.bgLock()
	if err != nil {
		return fail(Outcome{Class: "error", Message: err.Error()}, nil)
	}
	lease, err := d.warmClaude(ctx, rec.Bin, environ, root, rec.Cwd)
	if err != nil {
		unlock()
		return fail(Outcome{Class: "daemon", Message: err.Error()}, nil)
	}
	cmd := &exec.Cmd{Path: rec.Bin, Args: append([]string{rec.Bin}, rec.Argv...), Dir: rec.Cwd, Env: environ,
		Stdin: prompt, Stdout: logf, Stderr: logf, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		lease.Close()
		unlock()
		return fail(Outcome{Class: "binary-missing", Message: fmt.Sprintf("cannot run %s: %v; install Claude Code or fix its binary setting", rec.Bin, err)}, nil)
	}
	// One window for `claude --bg` to return and the session to register.
	deadline := time.Now().Add(confirmTimeout)
	done := make(chan int, 1)
	go func() {
		_ = cmd.Wait()
		done <- exitCodeOf(cmd.ProcessState)
	}()
	var code int
	select {
	case code = <-done:
	case <-time.After(time.Until(deadline)):
		_ = cmd.Process.Kill()
		code = <-done
		lease.Close()
		unlock()
		return fail(Outcome{Class: "timeout", Message: fmt.Sprintf("`claude --bg` did not return within %s (see %s)", confirmTimeout, rec.Log)}, &code)
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		lease.Close()
		unlock()
		return ctx.Err()
	}
	lease.Close()
	unlock()

	var lines [][]byte
	_, _, _ = jsonl.ReadFile(rec.Log, offset, func(line []byte, _ int64) error {
		lines = append(lines, append([]byte(nil), line...))
		return nil
	})
	short := ""
	for _, ln := range lines {
		if m := bgShort().FindSubmatch(ln); m != nil {
			short = string(m[1])
		}
	}
	if code != 0 || short == "" {
		o := Claude{}.Classify(lines, code, false)
		if o.Class == "" || o.Class == "crashed" {
			last := ""
			if n := len(lines); n > 0 {
				last = ": " + oneLine(string(lines[n-1]), 200)
			}
			o = Outcome{Class: "crashed", Message: fmt.Sprintf("`claude --bg` exited %d without naming a session%s", code, last)}
		}
		return fail(o, &code)
	}

	// Confirmation: the registry entry the session itself writes names its
	// PID and the short id; the PID is verified against the process table.
	var ent *bgEntry
	var ticks uint64
	for {
		if e, ok := findBgEntry(root, short); ok {
			if p, err := d.Procs.Find(e.PID); err == nil && (e.procStart() == 0 || e.procStart() == p.StartTicks) {
				ent, ticks = e, p.StartTicks
				break
			}
		}
		if time.Now().After(deadline) {
			return fail(Outcome{Class: "timeout", Message: fmt.Sprintf("`claude --bg` printed %s, but no live session registered it within %s; see `claude agents`", short, confirmTimeout)}, nil)
		}
		if err := d.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	boot := d.Procs.BootID()
	now := d.now()
	d.setField(id, func(r *meta.Launch) {
		r.PID, r.PGID, r.StartTicks, r.BootID, r.LogOffset = ent.PID, 0, ticks, boot, offset
		r.SessionID, r.JobID, r.ClaudeRoot, r.ConfirmedAt = ent.SessionID, short, root, &now
	})
	if _, err := locks.SetOwner(d.Store, id, ent.PID, ticks, boot, ent.SessionID); err != nil {
		d.warn("lock: %v", err)
	}
	if cur := d.record(id); cur != nil {
		d.journal(meta.EventLaunched, cur)
	}
	report(Report{Status: "ready", SessionID: ent.SessionID, PID: ent.PID})

	exited := make(chan int, 1)
	go d.watchBackground(ctx, ent.PID, ticks, boot, exited)
	if _, err := d.awaitExit(ctx, id, exited); err != nil {
		return err
	}
	stopRequested := false
	if cur := d.record(id); cur != nil {
		stopRequested = cur.StopRequested != nil
	}
	if !stopRequested {
		d.settleJob(ctx, root, short)
	}
	ec, o := bgEnd(root, short, stopRequested)
	var exit *int
	if ec >= 0 {
		exit = &ec
	}
	_, err = d.finalise(ctx, id, ended{ExitCode: exit, Outcome: o}, false)
	return err
}

// watchBackground sends on exited once the process pid (verified by its start
// time) is gone; the value is unused (bgEnd reads the job record).
func (d *Deps) watchBackground(ctx context.Context, pid int, ticks uint64, boot string, exited chan<- int) {
	for d.Store.IsAlive(pid, ticks, boot) {
		if err := d.Sleep(ctx, bgWatchInterval); err != nil {
			return
		}
	}
	exited <- 0
}

// bgLock serialises background launches under the state dir: the store's
// flock on claude-bg.lock (never through a symbolic link).
func (d *Deps) bgLock() (func(), error) { return d.Store.Lock("claude-bg") }

// backgroundStop is `claude stop <short>` for a launched background session
// (nil for any other launch): the binary it was launched with, its config root.
func (d *Deps) backgroundStop(r *meta.Launch) func(context.Context) error {
	if !r.Background || r.JobID == "" || r.Bin == "" || r.ClaudeRoot == "" {
		return nil
	}
	home, _ := lookupEnv(d.Environ, "HOME")
	if filepath.Base(r.ClaudeRoot) == ".claude" {
		home = filepath.Dir(r.ClaudeRoot)
	}
	return ClaudeStopCommand(r.Bin, r.JobID, home, r.ClaudeRoot, d.Environ)
}
