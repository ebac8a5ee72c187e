package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/stub"
)

// Claude runs one pinned Claude Code version against a stub, in a fresh HOME
// (docs/agents/claude-code.md §10.2).
type Claude struct {
	Version string
	Bin     string
	Home    string // config root is Home/.claude
	Env     Env
}

// NewClaude installs (if needed) Claude Code `version` and prepares a fresh home
// whose model API is srv.
func NewClaude(t testing.TB, version string, srv *stub.Server) *Claude {
	t.Helper()
	bin := Tool(t, "claude-"+version)
	root := TempDir(t)
	home := filepath.Join(root, "home")
	tmp := filepath.Join(root, "tmp")
	mkdirs(t, home, tmp)
	env := BaseEnv(home, tmp).Merge(Env{
		"ANTHROPIC_BASE_URL": srv.URL(),
		"ANTHROPIC_API_KEY":  "sk-test",
		// No bootstrap, metrics or event logging: the stub is the only peer.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		// A scripted error must fail at once, not after a minute of retries.
		"CLAUDE_CODE_MAX_RETRIES": "0",
	})
	return &Claude{Version: version, Bin: bin, Home: home, Env: env}
}

// Print starts `claude -p --output-format stream-json --verbose <args>` in dir
// with prompt on stdin. Use --session-id, --resume, --fork-session,
// --allowedTools … in args.
func (c *Claude) Print(t testing.TB, dir, prompt string, args ...string) *Proc {
	t.Helper()
	argv := append([]string{"-p", "--output-format", "stream-json", "--verbose"}, args...)
	return Start(t, Spec{Path: c.Bin, Args: argv, Dir: dir, Env: c.Env, Stdin: prompt, Name: "claude-" + c.Version})
}

// Run is Print plus waiting for a clean exit; it returns the session id from the
// stream's system/init line.
func (c *Claude) Run(t testing.TB, dir, prompt string, args ...string) (id string, p *Proc) {
	t.Helper()
	p = c.Print(t, dir, prompt, args...)
	if code := p.Wait(t, 60*time.Second); code != 0 {
		t.Fatalf("claude %s exited %d\nstdout:\n%s\nstderr:\n%s", c.Version, code, Tail(p.Stdout(), 20), Tail(p.Stderr(), 20))
	}
	return ClaudeSessionID(p.Stdout()), p
}

// ClaudeSessionID returns session_id (snake_case) of the system/init line.
func ClaudeSessionID(stdout string) string {
	for _, l := range lines(stdout) {
		var v struct {
			Type      string `json:"type"`
			Subtype   string `json:"subtype"`
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(l), &v) == nil && v.Type == "system" && v.Subtype == "init" {
			return v.SessionID
		}
	}
	return ""
}

// ClaudeResult returns the stream's result line, if any.
func ClaudeResult(stdout string) map[string]any {
	for _, l := range lines(stdout) {
		var v map[string]any
		if json.Unmarshal([]byte(l), &v) == nil && v["type"] == "result" {
			return v
		}
	}
	return nil
}

// Transcript is where Claude keeps the session's transcript (slug rule docs/agents/claude-code.md §1.3).
func (c *Claude) Transcript(cwd, id string) string {
	slug := strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, cwd)
	return filepath.Join(c.Home, ".claude", "projects", slug, id+".jsonl")
}

// Registry is the live-session registry file of pid.
func (c *Claude) Registry(pid int) string {
	return filepath.Join(c.Home, ".claude", "sessions", strconv.Itoa(pid)+".json")
}

// TempDir is t.TempDir with symlinks resolved: agents record real paths.
func TempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// WorkDir creates a project directory named name under a fresh temp root.
func WorkDir(t testing.TB, name string) string {
	t.Helper()
	d := filepath.Join(TempDir(t), name)
	mkdirs(t, d)
	return d
}

// ProjectDir creates a project directory inside home, so that recordings can
// rewrite one prefix for HOME and every cwd alike.
func ProjectDir(t testing.TB, home, name string) string {
	t.Helper()
	d := filepath.Join(home, name)
	mkdirs(t, d)
	return d
}

func mkdirs(t testing.TB, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
