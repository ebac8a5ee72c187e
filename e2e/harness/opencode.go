package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/e2e/stub"
)

// OpenCode runs the pinned OpenCode CLI against a stub (docs/agents/opencode.md §10): a fresh
// HOME with every XDG variable set under it, so a developer's own XDG values
// cannot leak in, and a global config naming the stub as provider "fake".
type OpenCode struct {
	Bin  string
	Home string
	Env  Env
}

// NewOpenCode prepares a fresh home whose provider "fake" is srv.
func NewOpenCode(t testing.TB, srv *stub.Server) *OpenCode {
	t.Helper()
	bin := Tool(t, "opencode")
	root := TempDir(t)
	home := filepath.Join(root, "home")
	tmp := filepath.Join(root, "tmp")
	cfgDir := filepath.Join(home, ".config", "opencode")
	mkdirs(t, cfgDir, tmp)
	cfg := fmt.Sprintf(`{
  "$schema": "https://opencode.ai/config.json",
  "model": "fake/fake-model",
  "small_model": "fake/fake-model",
  "autoupdate": false,
  "share": "disabled",
  "provider": {
    "fake": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Fake local",
      "options": { "baseURL": "%s/v1", "apiKey": "sk-fake" },
      "models": { "fake-model": { "name": "Fake Model" } }
    }
  }
}
`, srv.URL())
	if err := os.WriteFile(filepath.Join(cfgDir, "opencode.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := BaseEnv(home, tmp).Merge(Env{
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		// The model catalog lives on the internet; the stub is the only peer.
		"OPENCODE_DISABLE_MODELS_FETCH": "1",
		"OPENCODE_DISABLE_AUTOUPDATE":   "1",
	})
	return &OpenCode{Bin: bin, Home: home, Env: env}
}

// Run starts `opencode run --format json --dir dir -m fake/fake-model <args>`
// with the prompt on stdin and PWD = dir (OpenCode trusts $PWD over the cwd).
func (o *OpenCode) Run(t testing.TB, dir, prompt string, args ...string) *Proc {
	t.Helper()
	argv := append([]string{"run", "--format", "json", "--dir", dir, "-m", "fake/fake-model"}, args...)
	return Start(t, Spec{Path: o.Bin, Args: argv, Dir: dir, Env: o.Env.With("PWD", dir), Stdin: prompt, Name: "opencode"})
}

// DB is OpenCode's SQLite store in this home.
func (o *OpenCode) DB() string {
	return filepath.Join(o.Home, ".local", "share", "opencode", "opencode.db")
}

// OpenCodeSessionID returns the first sessionID on the JSON event stream.
func OpenCodeSessionID(stdout string) string {
	for _, l := range lines(stdout) {
		var v struct {
			SessionID string `json:"sessionID"`
		}
		if json.Unmarshal([]byte(l), &v) == nil && v.SessionID != "" {
			return v.SessionID
		}
	}
	return ""
}

// OpenCodeAllowBash copies the config at src to dst with the bash tool
// allowed: with bash at "ask", `opencode run` rejects the tool call about 5 s
// later with nobody to answer (docs/agents/opencode.md).
func OpenCodeAllowBash(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	cfg["permission"] = map[string]any{"bash": "allow", "edit": "allow"}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(dst, out, 0o600)
}

// AskBeforeBash makes OpenCode ask before every bash command (config
// "permission": {"bash": "ask"}), so a tool call waits for the user.
func (o *OpenCode) AskBeforeBash(t testing.TB) {
	t.Helper()
	cfg := filepath.Join(o.Home, ".config", "opencode", "opencode.json")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", cfg, err)
	}
	c["permission"] = map[string]string{"bash": "ask"}
	if b, err = json.MarshalIndent(c, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
