package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/launch"
)

// testHost is a host for running commands in-process: an empty home and state
// dir of its own, buffers for streams, a fixed clock, and no executable, so no
// detached helper can start.
func testHost(t *testing.T) (*host, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "AGENTCTL_HOME": filepath.Join(dir, "state"), "USER": "tester"}
	var out, errOut bytes.Buffer
	h := &host{IOStreams: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		getenv:     func(k string) string { return env[k] },
		now:        func() time.Time { return time.Date(2026, 11, 20, 23, 0, 0, 0, time.UTC) },
		executable: func() (string, error) { return "", errors.New("no agentctl executable in tests") }}
	return h, &out, &errOut
}

// codeOf is the exit code run would give err.
func codeOf(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	}
	return exitFailed
}

type seamCase struct {
	name string
	run  func(context.Context, *host) error
	code int
	want string // in the error, or in stdout when the command succeeds
}

func runSeam(t *testing.T, cases []seamCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, out, _ := testHost(t)
			err := c.run(context.Background(), h)
			if got := codeOf(err); got != c.code {
				t.Fatalf("exit %d (%v), want %d", got, err, c.code)
			}
			text := out.String()
			if err != nil {
				text = err.Error()
			}
			if !strings.Contains(text, c.want) {
				t.Errorf("got %q, want it to contain %q", text, c.want)
			}
		})
	}
}

func TestListThroughTheSeam(t *testing.T) {
	list := func(o listOptions) func(context.Context, *host) error {
		return func(ctx context.Context, h *host) error { return runList(ctx, h, o) }
	}
	runSeam(t, []seamCase{
		{"empty", list(listOptions{}), exitOK, "No sessions found.\n"},
		{"empty json", list(listOptions{JSON: true, All: true}), exitOK, "[]"},
		{"argument", list(listOptions{Args: []string{"abc"}}), exitUsage, `list takes no arguments (got "abc")`},
		{"bad status", list(listOptions{Statuses: []string{"running,asleep"}}), exitUsage, `--status "asleep": want one of`},
		{"bad since", list(listOptions{Since: "soon"}), exitUsage, `--since "soon": want a duration`},
		{"unknown adapter", list(listOptions{globalOptions: globalOptions{Adapters: []string{"codex,aider"}}}), exitUsage, `unknown adapter "aider"; known adapters: claude-code,`},
		{"bad timeout", list(listOptions{globalOptions: globalOptions{Timeout: "-1s"}}), exitUsage, `--timeout "-1s": want a positive duration`},
		{"home not a dir", list(listOptions{globalOptions: globalOptions{Home: "/nonexistent/home"}}), exitUsage, "--home /nonexistent/home: not a directory"},
	})
}

func TestStatusStopResumeThroughTheSeam(t *testing.T) {
	status := func(o statusOptions) func(context.Context, *host) error {
		return func(ctx context.Context, h *host) error { return runStatus(ctx, h, o) }
	}
	stop := func(o stopOptions) func(context.Context, *host) error {
		return func(ctx context.Context, h *host) error { return runStop(ctx, h, o) }
	}
	resume := func(o resumeOptions) func(context.Context, *host) error {
		return func(ctx context.Context, h *host) error { return runResume(ctx, h, o) }
	}
	runSeam(t, []seamCase{
		{"status without id", status(statusOptions{}), exitUsage, "status: want one session ID (see agentctl status --help)"},
		{"status two ids", status(statusOptions{Args: []string{"a", "b"}}), exitUsage, "status: want one session ID"},
		{"status not found", status(statusOptions{Args: []string{"0f0f0f0f"}}), exitNotFound, "0f0f0f0f"},
		{"stop without id", stop(stopOptions{}), exitUsage, "stop: want one session ID"},
		{"stop not found", stop(stopOptions{Args: []string{"0f0f0f0f"}, Force: true}), exitNotFound, "0f0f0f0f"},
		{"resume without message", resume(resumeOptions{Args: []string{"0f0f0f0f"}}), exitUsage, "resume: want a session ID and a MESSAGE"},
		{"resume fork", resume(resumeOptions{Args: []string{"0f0f0f0f", "go on"}, Fork: true}), exitNotFound, "0f0f0f0f"},
		{"resume empty message", resume(resumeOptions{Args: []string{"0f0f0f0f", "  \n"}}), exitUsage, "the MESSAGE is empty"},
		{"resume not found", resume(resumeOptions{Args: []string{"0f0f0f0f", "go on"}}), exitNotFound, "0f0f0f0f"},
	})
}

func TestLaunchThroughTheSeam(t *testing.T) {
	cwd := t.TempDir()
	launchO := func(f func(o *launchOptions)) func(context.Context, *host) error {
		o := launchOptions{Prompt: "hello", MaxFileSize: launch.DefaultMaxFileSize}
		f(&o)
		return func(ctx context.Context, h *host) error { return runLaunch(ctx, h, o) }
	}
	runSeam(t, []seamCase{
		{"two adapters", launchO(func(o *launchOptions) { o.Args = []string{"codex", "fix it"} }), exitUsage, "launch takes at most one adapter"},
		{"unknown adapter", launchO(func(o *launchOptions) { o.Args = []string{"aider"} }), exitUsage, `unknown adapter "aider"`},
		{"several --adapter with --worktree", launchO(func(o *launchOptions) { o.Adapters = []string{"codex", "pi"}; o.Worktree, o.Branch = cwd, "b" }), exitUsage, "a group launch makes one worktree per slot itself"},
		{"matrix with --adapter", launchO(func(o *launchOptions) { o.Slots = []slotArg{{Adapter: "codex"}}; o.Matrix = "m.yaml" }), exitUsage, "--matrix and --adapter/ADAPTER exclude each other"},
		{"file size", launchO(func(o *launchOptions) { o.MaxFileSize = 0 }), exitUsage, "--max-file-size 0: want a positive number of bytes"},
		{"repo without issue", launchO(func(o *launchOptions) { o.Repo = "acme/api" }), exitUsage, "--repo only applies to --issue"},
		{"worktree without branch", launchO(func(o *launchOptions) { o.Worktree = cwd }), exitUsage, "--worktree needs --branch NAME"},
		{"branch without worktree", launchO(func(o *launchOptions) { o.Branch = "b" }), exitUsage, "--branch needs --worktree REPO"},
		{"openclaw with cwd", launchO(func(o *launchOptions) { o.Args, o.Cwd = []string{"openclaw"}, cwd }), exitUsage,
			"openclaw runs its turns in the gateway's agent workspace: --cwd and --worktree do not apply"},
		{"bad env", launchO(func(o *launchOptions) { o.Env = []string{"NOVALUE"} }), exitUsage, `--env "NOVALUE": want NAME=VALUE`},
		{"missing cwd", launchO(func(o *launchOptions) { o.Cwd = filepath.Join(cwd, "gone") }), exitUsage, "--cwd " + filepath.Join(cwd, "gone")},
	})
}

func TestPeekAndLocksThroughTheSeam(t *testing.T) {
	peek := func(o peekOptions) func(context.Context, *host) error {
		o.Command = "peek"
		return func(ctx context.Context, h *host) error { return runPeek(ctx, h, o) }
	}
	dir := t.TempDir()
	lockThenList := func(ctx context.Context, h *host) error {
		if err := runLock(h, lockOptions{Args: []string{dir}, Reason: "freeze"}); err != nil {
			return err
		}
		if err := runLock(h, lockOptions{Args: []string{dir}}); codeOf(err) != exitLocked {
			return errors.New("a second lock was not refused with exit 5")
		}
		return runLocks(h, locksOptions{})
	}
	runSeam(t, []seamCase{
		{"peek without id", peek(peekOptions{}), exitUsage, "peek: want one session ID"},
		{"peek negative n", peek(peekOptions{Args: []string{"abc"}, N: -1}), exitUsage, "-n -1: want 0 (all)"},
		{"peek raw and json", peek(peekOptions{Args: []string{"abc"}, Raw: true, JSON: true}), exitUsage, "--raw and --json exclude each other"},
		{"peek unknown id", peek(peekOptions{Args: []string{"abc"}}), exitNotFound, "abc"},
		{"lock without dir", func(_ context.Context, h *host) error { return runLock(h, lockOptions{}) }, exitUsage, "lock: want one directory"},
		{"lock bad ttl", func(_ context.Context, h *host) error {
			return runLock(h, lockOptions{Args: []string{dir}, TTL: "1xd"})
		}, exitUsage, `--ttl "1xd"`},
		{"unlock not locked", func(_ context.Context, h *host) error { return runUnlock(h, unlockOptions{Args: []string{dir}}) }, exitFailed, dir},
		{"locks takes no args", func(_ context.Context, h *host) error { return runLocks(h, locksOptions{Args: []string{"x"}}) }, exitUsage, "locks takes no arguments"},
		{"locks empty", func(_ context.Context, h *host) error { return runLocks(h, locksOptions{}) }, exitOK, "No active locks.\n"},
		{"lock, refuse, list", lockThenList, exitOK, "freeze"},
	})
}

func TestWaitThroughTheSeam(t *testing.T) {
	wait := func(o waitOptions) func(context.Context, *host) error {
		return func(ctx context.Context, h *host) error { return runWait(ctx, h, o) }
	}
	runSeam(t, []seamCase{
		{"no ids", wait(waitOptions{}), exitUsage, "wait: want one or more session IDs"},
		{"bad limit", wait(waitOptions{Args: []string{"abc"}, LimitSet: true, globalOptions: globalOptions{Timeout: "1xd"}}), exitUsage, `--timeout "1xd"`},
		{"bad until", wait(waitOptions{Args: []string{"abc"}, Until: "sleeping"}), exitUsage, "sleeping"},
		{"unknown id", wait(waitOptions{Args: []string{"abc"}}), exitNotFound, "abc"},
	})
}
