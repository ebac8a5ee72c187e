package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/e2e/stub"
)

// Codex runs the pinned Codex CLI against a stub (docs/agents/codex.md §10): a fresh HOME,
// CODEX_HOME set explicitly, a config.toml naming the stub as provider "fake".
type Codex struct {
	Version string
	Bin     string
	Home    string // CODEX_HOME is Home/.codex
	Env     Env
}

// NewCodex prepares a fresh home whose model provider is srv, for the newest
// pinned Codex.
func NewCodex(t testing.TB, srv *stub.Server) *Codex {
	t.Helper()
	return NewCodexVersion(t, CodexNewest, srv)
}

// NewCodexVersion is NewCodex for one pinned version (CodexVersions).
func NewCodexVersion(t testing.TB, version string, srv *stub.Server) *Codex {
	t.Helper()
	bin := Tool(t, "codex-"+version)
	root := TempDir(t)
	home := filepath.Join(root, "home")
	codexHome := filepath.Join(home, ".codex")
	tmp := filepath.Join(root, "tmp")
	mkdirs(t, codexHome, tmp)
	cfg := fmt.Sprintf(`model = "fake-model"
model_provider = "fake"

[model_providers.fake]
name = "Fake local"
base_url = "%s/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
`, srv.URL())
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := BaseEnv(home, tmp).Merge(Env{
		"CODEX_HOME":   codexHome,
		"FAKE_API_KEY": "sk-fake",
	})
	// A Codex TUI starts an app-server daemon (and its updater) that outlives
	// the TUI, reparented to init: whatever the home's pid files still name
	// is killed when the test ends (cleanups run last-registered first, so
	// this one reads the pid files before the home is removed).
	t.Cleanup(func() { KillCodexDaemons(codexHome) })
	return &Codex{Version: version, Bin: bin, Home: home, Env: env}
}

// CodexDaemonPID is the pid in CODEX_HOME/app-server-daemon/<name>
// (daemon.pid, daemon-updater.pid); 0 when there is none.
func CodexDaemonPID(codexHome, name string) int {
	b, err := os.ReadFile(filepath.Join(codexHome, "app-server-daemon", name))
	if err != nil {
		return 0
	}
	var v struct {
		PID int `json:"pid"`
	}
	_ = json.Unmarshal(b, &v)
	return v.PID
}

// KillCodexDaemons sends SIGKILL to the app-server daemon and updater the
// home's pid files name, when those pids still run a codex app-server.
func KillCodexDaemons(codexHome string) {
	for _, f := range []string{"daemon.pid", "daemon-updater.pid"} {
		if pid := CodexDaemonPID(codexHome, f); pid > 1 {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && strings.Contains(string(b), "app-server") {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// Exec starts `codex exec --json --skip-git-repo-check -C dir <args> -` with the
// prompt on stdin.
func (c *Codex) Exec(t testing.TB, dir, prompt string, args ...string) *Proc {
	t.Helper()
	argv := append([]string{"exec", "--json", "--skip-git-repo-check", "-C", dir}, args...)
	argv = append(argv, "-")
	return Start(t, Spec{Path: c.Bin, Args: argv, Dir: dir, Env: c.Env.With("PWD", dir), Stdin: prompt, Name: "codex"})
}

// Resume starts `codex exec -C dir resume --json --skip-git-repo-check <id> -`
// (-C belongs to exec, before resume; docs/agents/codex.md §7).
func (c *Codex) Resume(t testing.TB, dir, id, prompt string) *Proc {
	t.Helper()
	argv := []string{"exec", "-C", dir, "resume", "--json", "--skip-git-repo-check", id, "-"}
	return Start(t, Spec{Path: c.Bin, Args: argv, Dir: dir, Env: c.Env.With("PWD", dir), Stdin: prompt, Name: "codex"})
}

// CodexThreadID returns thread_id of the thread.started line.
func CodexThreadID(stdout string) string {
	for _, l := range lines(stdout) {
		var v struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal([]byte(l), &v) == nil && v.Type == "thread.started" {
			return v.ThreadID
		}
	}
	return ""
}

// Rollouts returns the rollout files under CODEX_HOME/sessions.
func (c *Codex) Rollouts() []string {
	m, _ := filepath.Glob(filepath.Join(c.Home, ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl"))
	return m
}
