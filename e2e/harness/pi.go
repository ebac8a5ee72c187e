package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/e2e/npm"
	"github.com/agentctl/agentctl/e2e/stub"
)

// Pi runs the pinned pi CLI against a stub (docs/agents/pi.md §11): a fresh HOME (so the agent
// dir is Home/.pi/agent), PI_OFFLINE=1, and a models.json naming the stub as
// provider "fakeoai" with prices, so cost is non-zero.
type Pi struct {
	Version string
	// Bin is what a launch runs: the package's bin, or for Pi 1.6 (which needs
	// Node >= 22.19, newer than the machine's node may be) a wrapper that puts
	// the pinned Node 24 first on PATH and execs it (same PID, argv as an npm
	// install's: node …/bin/pi ARGS).
	Bin  string
	Home string
	Env  Env
}

// NewPi prepares a fresh home whose provider "fakeoai" is srv, for the newest
// pinned pi.
func NewPi(t testing.TB, srv *stub.Server) *Pi {
	t.Helper()
	return NewPiVersion(t, PiNewest, srv)
}

// NewPiVersion is NewPi for one pinned version (PiVersions).
func NewPiVersion(t testing.TB, version string, srv *stub.Server) *Pi {
	t.Helper()
	bin := Tool(t, "pi-"+version)
	root := TempDir(t)
	if version != PiOlder {
		wrapper := filepath.Join(root, "bin", "pi")
		mkdirs(t, filepath.Dir(wrapper))
		script := fmt.Sprintf("#!/bin/sh\nPATH='%s':$PATH exec '%s' \"$@\"\n", filepath.Dir(Tool(t, "node24")), bin)
		if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		bin = wrapper
	}
	home := filepath.Join(root, "home")
	tmp := filepath.Join(root, "tmp")
	agentDir := filepath.Join(home, ".pi", "agent")
	mkdirs(t, agentDir, tmp)
	models := fmt.Sprintf(`{ "providers": { "fakeoai": {
    "baseUrl": "%s/v1", "api": "openai-completions", "apiKey": "sk-fake",
    "compat": { "supportsDeveloperRole": false, "supportsReasoningEffort": false },
    "models": [ { "id": "fake-model", "name": "Fake Model", "reasoning": false, "input": ["text"],
                  "contextWindow": 32000, "maxTokens": 4096,
                  "cost": { "input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0 } } ] } } }
`, srv.URL())
	if err := os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	env := BaseEnv(home, tmp).Merge(Env{"PI_OFFLINE": "1"})
	if version != PiOlder {
		// pi 1.6 enables Node's compile cache, in TMPDIR unless
		// NODE_COMPILE_CACHE says where: share one across the suite.
		if dir := sharedCompileCache(t); dir != "" {
			env["NODE_COMPILE_CACHE"] = dir
		}
	}
	return &Pi{Version: version, Bin: bin, Home: home, Env: env}
}

// Print starts `pi --mode json --provider fakeoai --model fake-model <args> -p`
// with the prompt on stdin (-p goes last: it swallows the next argument).
func (p *Pi) Print(t testing.TB, dir, prompt string, args ...string) *Proc {
	t.Helper()
	argv := append([]string{"--mode", "json", "--provider", "fakeoai", "--model", "fake-model"}, args...)
	argv = append(argv, "-p")
	return Start(t, Spec{Path: p.Bin, Args: argv, Dir: dir, Env: p.Env.With("PWD", dir), Stdin: prompt, Name: "pi"})
}

// Sessions returns pi's session files under the agent dir.
func (p *Pi) Sessions() []string {
	m, _ := filepath.Glob(filepath.Join(p.Home, ".pi", "agent", "sessions", "*", "*.jsonl"))
	return m
}

// PiSessionID returns the id of the header line (stdout line 1 in json mode).
func PiSessionID(stdout string) string {
	for _, l := range lines(stdout) {
		var v struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if json.Unmarshal([]byte(l), &v) == nil && v.Type == "session" {
			return v.ID
		}
	}
	return ""
}

// sharedCompileCache is the e2e cache's directory for Node's compile cache
// (NODE_COMPILE_CACHE), shared by the suite's Node agents; "" if unusable.
func sharedCompileCache(t testing.TB) string {
	cache, err := npm.CacheDir(os.Getenv)
	if err != nil {
		return ""
	}
	dir := filepath.Join(cache, "node-compile-cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("no shared compile cache: %v", err)
		return ""
	}
	return dir
}
