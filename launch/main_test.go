package launch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// The test binary doubles as agentctl's supervisor: Launcher.Start runs
// `<self> __supervise --state DIR --confirm-timeout D <id>`, and with
// LAUNCH_TEST_SUPERVISE=1 in its environment this TestMain serves it.
func TestMain(m *testing.M) {
	if os.Getenv("LAUNCH_TEST_SUPERVISE") == "1" && len(os.Args) > 1 && os.Args[1] == "__supervise" {
		os.Exit(superviseMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func superviseMain(args []string) int {
	var state, id string
	var timeout time.Duration
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--state":
			state = args[i+1]
			i++
		case "--confirm-timeout":
			timeout, _ = time.ParseDuration(args[i+1])
			i++
		default:
			id = args[i]
		}
	}
	st := meta.NewStore(state)
	st.Warn = func(f string, a ...any) { fmt.Fprintf(os.Stderr, "supervisor warning: "+f+"\n", a...) }
	d := DefaultDeps(st, &meta.Config{})
	d.Warn = func(m string) { fmt.Fprintln(os.Stderr, "supervisor warning:", m) }
	if p := os.Getenv("LAUNCH_TEST_TOTALS"); p != "" {
		d.Totals = fileTotals(p)
	}
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	if err := d.Supervise(context.Background(), id, os.NewFile(3, "report"), os.NewFile(4, "prompt"), os.Environ(), timeout); err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		return 1
	}
	return 0
}

// testLauncher launches the fake agent with this test binary as supervisor.
func testLauncher(t *testing.T) *Launcher {
	t.Helper()
	d := testDeps(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "LAUNCH_TEST_SUPERVISE=1", "AGENTCTL_CLAUDE_BIN="+fakeBin(t))
	d.Environ = env
	l := &Launcher{Deps: d, Self: self, Euid: os.Geteuid(), ConfirmTimeout: 10 * time.Second}
	// Before the temp dirs go: stop what is still running and let every
	// supervisor finish writing.
	t.Cleanup(func() {
		recs, _ := d.Store.ReadLaunches()
		for _, r := range recs {
			if _, ok := d.verify(r.PID, r.StartTicks, r.BootID); ok {
				d.Stop(context.Background(), StopTarget{PID: r.PID, Start: r.StartTicks, BootID: r.BootID, PGID: r.PGID, Group: true, LaunchID: r.ID}, StopOptions{Force: true})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			if _, err := d.WaitLaunch(ctx, r.ID); err != nil {
				t.Errorf("launch %s did not settle: %v", r.ID, err)
			}
			cancel()
		}
	})
	return l
}

// workdir is a fresh canonical directory to launch in.
func workdir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func spec(cwd, prompt string, env ...string) Spec {
	return Spec{Adapter: "claude-code", Cwd: cwd, Prompt: prompt, Summary: prompt, UserEnv: env, User: "tester"}
}

// eventually polls cond for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
