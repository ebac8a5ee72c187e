package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// `launch --background` runs `claude --bg` (docs/agents/claude-code.md §4.5):
// no -p, no --session-id (Claude's daemon picks the id), never the prompt.
func TestClaudePlanBackground(t *testing.T) {
	r := planReq(t)
	r.Background, r.Model, r.PermissionMode, r.Prompt = true, "opus", "plan", "SECRET PROMPT"
	p, err := Claude{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--bg", "--model", "opus", "--permission-mode", "plan"}
	if d := cmp.Diff(want, p.Args); d != "" {
		t.Errorf("argv (-want +got):\n%s", d)
	}
	if p.SessionID != "" {
		t.Errorf("pre-assigned session id %q; Claude's daemon picks it", p.SessionID)
	}
	for _, a := range p.Args {
		if strings.Contains(a, "SECRET") {
			t.Errorf("the prompt is in argv: %q", p.Args)
		}
	}
}

// --background is claude-code's, and for a launch only.
func TestLauncherPlanBackgroundRefusals(t *testing.T) {
	d := testDeps(t)
	d.Environ = []string{"AGENTCTL_CLAUDE_BIN=" + fakeBin(t), "HOME=" + t.TempDir(), "PATH=/usr/bin"}
	l := &Launcher{Deps: d, Euid: 1000}
	var ie *InputError
	if _, _, err := l.Plan(&Spec{Adapter: "codex", Background: true, Cwd: "/w"}); !errors.As(err, &ie) || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("codex --background: %v; want an input error naming claude-code", err)
	}
	if _, _, err := l.Plan(&Spec{Adapter: "claude-code", Kind: KindResume, SessionID: "x", Background: true, Cwd: "/w"}); !errors.As(err, &ie) {
		t.Errorf("resume --background: %v; want an input error", err)
	}
	if _, p, err := l.Plan(&Spec{Adapter: "claude-code", Background: true, Cwd: "/w"}); err != nil || p.Args[0] != "--bg" {
		t.Errorf("claude-code --background: %v %v", p, err)
	}
}

func writeJob(t *testing.T, root, short, state string) {
	t.Helper()
	dir := filepath.Join(root, "jobs", short)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{"state": state, "detail": "d-" + state, "daemonShort": short})
	if err := os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// How a background session ended, from Claude's job record once its process
// is gone: stopped and done are an end (exit 0); a record still working means
// the process died unrecorded (exit unknown, crashed) unless agentctl stopped it.
func TestBackgroundEnd(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct {
		state     string
		stopReq   bool
		code      int
		class     string
		mentioned string
	}{
		{"stopped", false, 0, "", ""},
		{"done", false, 0, "", ""},
		{"working", false, -1, "crashed", "still says working"},
		{"blocked", false, -1, "crashed", "still says blocked"},
		{"working", true, 0, "", ""},
		{"", false, -1, "crashed", "no job record"},
	} {
		short := "abcd" + map[bool]string{true: "1111", false: "0000"}[c.stopReq]
		if c.state != "" {
			writeJob(t, root, short, c.state)
		} else {
			short = "ffffffff"
		}
		code, o := bgEnd(root, short, c.stopReq)
		if code != c.code || o.Class != c.class || !strings.Contains(o.Message, c.mentioned) {
			t.Errorf("state %q stop %v: %d %+v; want %d %q mentioning %q", c.state, c.stopReq, code, o, c.code, c.class, c.mentioned)
		}
	}
}

// The supervisor's watch path with an injected process table: it reports the
// end once the PID is gone or carries another start time (a reused PID), and
// never while the process lives.
func TestWatchBackground(t *testing.T) {
	d := testDeps(t)
	d.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	var mu sync.Mutex
	calls := 0
	d.Store.Procs = proc.Funcs{FindFunc: func(pid int) (proc.Process, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		switch {
		case calls < 5:
			return proc.Process{PID: pid, StartTicks: 77}, nil
		case calls < 8:
			return proc.Process{PID: pid, StartTicks: 78}, nil // the PID was reused
		}
		return proc.Process{}, proc.ErrGone
	}, Boot: func() string { return "" }}
	exited := make(chan int, 1)
	d.watchBackground(context.Background(), 4242, 77, "", exited)
	select {
	case <-exited:
	default:
		t.Fatal("no end reported")
	}
	if calls != 5 {
		t.Errorf("ended after %d looks; want 5 (the first with another start time)", calls)
	}

	// A live process: nothing is reported, the watch ends with its context.
	d.Store.Procs = proc.Starts{4242: 77}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	d.Sleep = func(ctx context.Context, _ time.Duration) error {
		if n++; n == 20 {
			cancel()
		}
		return ctx.Err()
	}
	exited = make(chan int, 1)
	d.watchBackground(ctx, 4242, 77, "", exited)
	if len(exited) != 0 {
		t.Error("reported the end of a live process")
	}
}

// fakeDaemon serves Claude's control socket in dir: it answers a lease and,
// when spare is set, then makes a spare's claim socket appear.
func fakeDaemon(t *testing.T, dir string, spare bool) (leases func() []map[string]any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "spare"), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "control.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var got []map[string]any
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadBytes('\n')
				if err != nil {
					return
				}
				var m map[string]any
				_ = json.Unmarshal(line, &m)
				mu.Lock()
				got = append(got, m)
				mu.Unlock()
				_, _ = c.Write([]byte(`{"ok":true,"op":"lease"}` + "\n"))
				if spare {
					time.Sleep(50 * time.Millisecond)
					_ = os.WriteFile(filepath.Join(dir, "spare", "0a1b2c3d.claim.sock"), nil, 0o600)
				}
				_, _ = c.Read(make([]byte, 1)) // held until the lease is closed
			}()
		}
	}()
	return func() []map[string]any { mu.Lock(); defer mu.Unlock(); return append([]map[string]any(nil), got...) }
}

// The warm-up takes a lease on Claude's daemon and returns once a spare
// listens; without a spare it refuses rather than let the prompt into argv.
func TestWarmClaude(t *testing.T) {
	old := bgSockBase
	bgSockBase = t.TempDir()
	defer func() { bgSockBase = old }()
	d := testDeps(t)
	root := filepath.Join(t.TempDir(), ".claude")

	leases := fakeDaemon(t, claudeSockDir(root, os.Getuid()), true)
	lease, err := d.warmClaude(context.Background(), "/bin/false", nil, root, "/w")
	if err != nil {
		t.Fatal(err)
	}
	lease.Close()
	got := leases()
	if len(got) != 1 || got[0]["op"] != "lease" || got[0]["proto"] != float64(1) {
		t.Fatalf("daemon saw %v; want one lease", got)
	}
	if c, _ := got[0]["client"].(map[string]any); c["label"] != "agentctl launch" || c["cwd"] != "/w" {
		t.Errorf("lease client %v", got[0]["client"])
	}

	oldSpare, oldDaemon := bgSpareTimeout, bgDaemonTimeout
	bgSpareTimeout, bgDaemonTimeout = 300*time.Millisecond, 300*time.Millisecond
	defer func() { bgSpareTimeout, bgDaemonTimeout = oldSpare, oldDaemon }()
	root2 := filepath.Join(t.TempDir(), ".claude")
	fakeDaemon(t, claudeSockDir(root2, os.Getuid()), false)
	if _, err := d.warmClaude(context.Background(), "/bin/false", nil, root2, "/w"); err == nil || !strings.Contains(err.Error(), "argv") {
		t.Errorf("no spare: %v; want a refusal that says why", err)
	}
	// No daemon at all, and the one started (here /bin/false) never answers.
	root3 := filepath.Join(t.TempDir(), ".claude")
	if _, err := d.warmClaude(context.Background(), "/bin/false", nil, root3, t.TempDir()); err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("no daemon: %v", err)
	}
	if st, err := os.Stat(root3); err != nil || !st.IsDir() {
		t.Errorf("the config root was not created for the daemon: %v", err)
	}
}

// The daemon's socket directory is named by the config root's hash
// (docs/agents/claude-code.md §4.5), checked against one the real CLI made.
func TestClaudeSockDir(t *testing.T) {
	if got := claudeSockDir("/tmp/bg20h/home/.claude", 0); got != filepath.Join(bgSockBase, "cc-daemon-0", "f250e741") {
		t.Errorf("sock dir %s", got)
	}
}

// `claude --bg` in an untrusted workspace fails with Claude's own advice
// (2.1.329), classified rather than called a crash.
func TestClassifyUntrusted(t *testing.T) {
	o := Claude{}.Classify([][]byte{[]byte("Workspace not trusted. Run `claude` in /w once and accept the trust prompt, then retry.")}, 1, false)
	if o.Class != "untrusted" || !strings.Contains(o.Message, "accept the trust prompt") {
		t.Errorf("%+v", o)
	}
}

// A background launch whose supervisor died is finalised lazily from
// Claude's job record: stopped → exit 0, no failure.
func TestFinaliseDeadBackground(t *testing.T) {
	d := testDeps(t)
	d.Store.Procs, d.Procs = proc.Starts{}, proc.Starts{}
	root := t.TempDir()
	writeJob(t, root, "0badcafe", "stopped")
	writeJob(t, root, "1badcafe", "working")
	now := time.Now().UTC()
	recs := []meta.Launch{
		{ID: "bg-stopped", Adapter: "claude-code", PID: 10, StartTicks: 1, LaunchedAt: now, ConfirmedAt: &now, Background: true, JobID: "0badcafe", ClaudeRoot: root},
		{ID: "bg-killed", Adapter: "claude-code", PID: 11, StartTicks: 1, LaunchedAt: now, ConfirmedAt: &now, Background: true, JobID: "1badcafe", ClaudeRoot: root},
	}
	_ = d.Store.UpdateLaunches(func(l *meta.Launches) (bool, error) { l.Records = recs; return true, nil })
	if _, err := d.FinaliseDead(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := d.Store.ReadLaunches()
	for _, r := range got {
		switch r.ID {
		case "bg-stopped":
			if r.ExitCode == nil || *r.ExitCode != 0 || r.Failure != "" {
				t.Errorf("stopped job: exit %v failure %q; want 0, none", r.ExitCode, r.Failure)
			}
		case "bg-killed":
			if r.ExitCode != nil || !strings.Contains(r.Failure, "still says working") {
				t.Errorf("job still working: exit %v failure %q; want unknown, crashed", r.ExitCode, r.Failure)
			}
		}
	}
}

// A budget stop of a background launch asks `claude stop <short>` with the
// launch's binary and config root; other launches get no such command.
func TestBackgroundStopCommand(t *testing.T) {
	d := testDeps(t)
	if d.backgroundStop(&meta.Launch{Bin: "/bin/true", JobID: "abcd1234"}) != nil {
		t.Error("a stop command for a launch that is not a background session")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "args")
	bin := filepath.Join(dir, "claude")
	script := "#!/bin/sh\necho \"$* HOME=$HOME CCD=$CLAUDE_CONFIG_DIR\" > " + out + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d.Environ = []string{"HOME=/elsewhere", "PATH=/usr/bin:/bin"}
	ask := d.backgroundStop(&meta.Launch{Background: true, Bin: bin, JobID: "abcd1234", ClaudeRoot: "/h/.claude"})
	if ask == nil {
		t.Fatal("no stop command for a background launch")
	}
	if err := ask(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if got := strings.TrimSpace(string(b)); got != "stop abcd1234 HOME=/h CCD=" {
		t.Errorf("ran %q; want `stop abcd1234` with HOME=/h", got)
	}
}

// superviseBackground end to end against a fake `claude` and a fake daemon:
// the prompt arrives on `claude --bg`'s stdin, the session is confirmed from
// the registry entry naming the printed short id, the record gets its PID, job
// id and kind, and once the process is gone the job record decides the exit.
func TestSuperviseBackground(t *testing.T) {
	old := bgSockBase
	bgSockBase = t.TempDir()
	defer func() { bgSockBase = old }()
	d := testDeps(t)
	if err := d.Store.EnsureDir(); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	root := filepath.Join(home, ".claude")
	fakeDaemon(t, claudeSockDir(root, os.Getuid()), true)
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	script := `#!/bin/sh
[ "$1" = "--bg" ] || exit 9
cat > "$HOME/prompt-seen"
sleep 30 &
pid=$!
mkdir -p "$HOME/.claude/sessions" "$HOME/.claude/jobs/abcdef12"
echo '{"state":"working"}' > "$HOME/.claude/jobs/abcdef12/state.json"
echo "{\"pid\":$pid,\"sessionId\":\"abcdef12-0000-4000-8000-000000000000\",\"kind\":\"bg\",\"jobId\":\"abcdef12\"}" > "$HOME/.claude/sessions/$pid.json"
echo "backgrounded · abcdef12"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "launch.log")
	rec := meta.Launch{ID: "l-bg", Kind: KindLaunch, Adapter: "claude-code", Cwd: dir, Bin: bin, Argv: []string{"--bg"},
		Log: logPath, Background: true, LaunchedAt: time.Now().UTC()}
	_ = d.Store.UpdateLaunches(func(l *meta.Launches) (bool, error) { l.Records = []meta.Launch{rec}; return true, nil })
	pf := filepath.Join(dir, "prompt")
	_ = os.WriteFile(pf, []byte("the secret task"), 0o600)
	prompt, _ := os.Open(pf)

	reports := make(chan Report, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- d.superviseBackground(context.Background(), &rec, func(r Report) { reports <- r }, prompt,
			[]string{"HOME=" + home, "PATH=/usr/bin:/bin"}, 10*time.Second)
	}()
	var rep Report
	select {
	case rep = <-reports:
	case err := <-errc:
		b, _ := os.ReadFile(logPath)
		t.Fatalf("supervisor returned before reporting: %v\n%s", err, b)
	case <-time.After(20 * time.Second):
		t.Fatal("no report")
	}
	if rep.Status != "ready" || rep.SessionID != "abcdef12-0000-4000-8000-000000000000" || rep.PID <= 0 {
		t.Fatalf("report %+v", rep)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "prompt-seen")); string(b) != "the secret task" {
		t.Errorf("claude --bg read %q on stdin", b)
	}
	cur := d.record("l-bg")
	if cur == nil || cur.PID != rep.PID || cur.JobID != "abcdef12" || cur.ClaudeRoot != root || cur.ConfirmedAt == nil || cur.StartTicks == 0 || cur.PGID != 0 {
		t.Fatalf("record %+v", cur)
	}
	// Claude's stop: the record says stopped, then the process exits.
	_ = os.WriteFile(filepath.Join(root, "jobs", "abcdef12", "state.json"), []byte(`{"state":"stopped"}`), 0o600)
	p, _ := os.FindProcess(rep.PID)
	_ = p.Kill()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the supervisor did not see the session end")
	}
	cur = d.record("l-bg")
	if cur.FinalisedAt == nil || cur.ExitCode == nil || *cur.ExitCode != 0 || cur.Failure != "" {
		t.Errorf("after claude stop: exit %v failure %q finalised %v; want 0, none, finalised", cur.ExitCode, cur.Failure, cur.FinalisedAt)
	}
}

// A job record that catches up a moment after the process exited (Claude Code
// 2.1.332 after `claude stop`) is waited for; one that stays `working` is given
// up on after jobSettle, and one already final costs no wait.
func TestSettleJob(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct {
		name      string
		state     string
		catchUpAt int // the record says stopped after this many sleeps; 0: never
		wantSleep int
	}{
		{"already stopped", "stopped", 0, 0},
		{"catches up", "working", 3, 3},
		{"blocked catches up", "blocked", 1, 1},
		{"never catches up", "working", 0, int(jobSettle / (100 * time.Millisecond))},
	} {
		t.Run(c.name, func(t *testing.T) {
			short := "abcd9999"
			writeJob(t, root, short, c.state)
			d := testDeps(t)
			sleeps := 0
			d.Sleep = func(context.Context, time.Duration) error {
				sleeps++
				if sleeps == c.catchUpAt {
					writeJob(t, root, short, "stopped")
				}
				return nil
			}
			d.settleJob(context.Background(), root, short)
			if sleeps != c.wantSleep {
				t.Errorf("slept %d times, want %d", sleeps, c.wantSleep)
			}
			code, o := bgEnd(root, short, false)
			if wantCrash := c.catchUpAt == 0 && c.state != "stopped"; (o.Class == "crashed") != wantCrash || (code == 0) == wantCrash {
				t.Errorf("after settling: %d %+v; crashed want %v", code, o, wantCrash)
			}
		})
	}
}
