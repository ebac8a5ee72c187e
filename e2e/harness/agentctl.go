package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// agentctlBuild builds agentctl once per test binary: linking takes seconds and
// every test wants the same binary.
var agentctlBuild = sync.OnceValues(buildAgentctl)

// binDir is where this test binary keeps its agentctl build; derived from the
// pid so that Main can remove it without any shared state.
func binDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("agentctl-e2e-bin-%d", os.Getpid()))
}

// Main runs the tests and then removes the agentctl binary built for them:
//
//	func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
func Main(m *testing.M) int {
	guard()
	code := m.Run()
	os.RemoveAll(binDir())
	return code
}

func buildAgentctl() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(binDir(), "agentctl")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build agentctl in %s: %v\n%s", root, err, out)
	}
	return bin, nil
}

// AgentctlBin builds agentctl once per test binary and returns its path.
func AgentctlBin(t testing.TB) string {
	t.Helper()
	bin, err := agentctlBuild()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Agentctl runs the built binary against one test's agent home.
type Agentctl struct {
	Bin   string
	Home  string // passed as --home: where the agents' files are
	State string // AGENTCTL_HOME
	Env   Env
}

// NewAgentctl returns a runner reading agents' files under home, with a fresh
// state dir and an environment built from scratch.
func NewAgentctl(t testing.TB, home string) *Agentctl {
	t.Helper()
	state := filepath.Join(t.TempDir(), "agentctl-state")
	env := BaseEnv(home, t.TempDir()).With("AGENTCTL_HOME", state).With("NO_COLOR", "1")
	return &Agentctl{Bin: AgentctlBin(t), Home: home, State: state, Env: env}
}

// Run runs `agentctl <args> --home <home>` and returns stdout, stderr and the
// exit code. It never fails the test by itself; it fails it when agentctl
// does not finish within 30 s (see RunLong).
func (a *Agentctl) Run(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return a.RunLong(t, 30*time.Second, args...)
}

// RunLong is Run with its own limit, for one command that legitimately runs
// long (a group `launch --wait` waits for every agent of the group).
func (a *Agentctl) RunLong(t testing.TB, limit time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	args = append(append([]string{}, args...), "--home", a.Home)
	cmd := exec.Command(a.Bin, args...)
	cmd.Env = a.Env.List()
	cmd.Dir = a.Home
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	done := make(chan error, 1)
	start := time.Now()
	defer func() {
		// agentctl must feel instant (README "Performance"): make slowness visible.
		if d := time.Since(start); d > 2*time.Second {
			t.Logf("agentctl %s took %s", strings.Join(args, " "), d.Round(time.Millisecond))
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start agentctl: %v", err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("agentctl %s: %v", strings.Join(args, " "), err)
		}
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("agentctl %s did not finish in %s\nstderr:\n%s", strings.Join(args, " "), limit, e.String())
	}
	return o.String(), e.String(), code
}

// JSON runs `agentctl <args> --json`, requires exit 0 and decodes stdout into v.
func (a *Agentctl) JSON(t testing.TB, v any, args ...string) {
	t.Helper()
	args = append(append([]string{}, args...), "--json")
	out, errOut, code := a.Run(t, args...)
	if code != 0 {
		t.Fatalf("agentctl %s: exit %d\nstderr:\n%s", strings.Join(args, " "), code, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("agentctl %s: output is not the JSON expected: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Session is the documented JSON shape of one session (README "JSON" and "How status is decided"), decoded
// independently of agentctl's Go types so the tests pin the public contract.
type Session struct {
	ID             string  `json:"id"`
	Adapter        string  `json:"adapter"`
	Status         string  `json:"status"`
	Evidence       string  `json:"evidence"`
	EvidenceDetail string  `json:"evidence_detail"`
	PID            int     `json:"pid"`
	Cwd            string  `json:"cwd"`
	Model          string  `json:"model"`
	Title          string  `json:"title"`
	Prompt         string  `json:"prompt"`
	Tokens         *Tokens `json:"tokens"`
	StartedAt      string  `json:"started_at"`
	LastActivity   string  `json:"last_activity"`
	Kind           string  `json:"kind"`
	JobID          string  `json:"job_id"`
	Extra          struct {
		TokensSubagents *Tokens `json:"tokens_subagents"`
	} `json:"extra"`
}

// Tokens is the JSON `tokens` object.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
}

// Message is one `peek --json` item.
type Message struct {
	Kind  string `json:"kind"`
	Text  string `json:"text"`
	Tools []struct {
		Name    string `json:"tool"`
		Summary string `json:"summary"`
		Result  string `json:"result"`
	} `json:"tools"`
}

// List returns `agentctl list -a --json` (every session, alive or not).
func (a *Agentctl) List(t testing.TB, args ...string) []Session {
	t.Helper()
	var ss []Session
	a.JSON(t, &ss, append([]string{"list", "-a"}, args...)...)
	return ss
}

// ListAlive returns `agentctl list --json` (alive and unknown sessions only).
func (a *Agentctl) ListAlive(t testing.TB) []Session {
	t.Helper()
	var ss []Session
	a.JSON(t, &ss, "list")
	return ss
}

// Status returns `agentctl status ID --json`.
func (a *Agentctl) Status(t testing.TB, id string) Session {
	t.Helper()
	var s Session
	a.JSON(t, &s, "status", id)
	return s
}

// StatusOrMissing is Status, except that a session agentctl does not know
// (yet: exit 3) is "", not a failure: for waits that may start before the
// agent's process exists.
func (a *Agentctl) StatusOrMissing(t testing.TB, id string) Session {
	t.Helper()
	out, errOut, code := a.Run(t, "status", id, "--json")
	if code == 3 {
		return Session{}
	}
	var s Session
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("agentctl status %s --json: exit %d\n%s%s", id, code, out, errOut)
	}
	return s
}

// Peek returns `agentctl peek -n 0 ID --json`.
func (a *Agentctl) Peek(t testing.TB, id string) []Message {
	t.Helper()
	var m []Message
	a.JSON(t, &m, "peek", "-n", "0", id)
	return m
}

// Find returns the session with id from ss.
func Find(ss []Session, id string) (Session, bool) {
	for _, s := range ss {
		if s.ID == id {
			return s, true
		}
	}
	return Session{}, false
}
