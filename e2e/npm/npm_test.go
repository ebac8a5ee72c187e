package npm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The pinned versions docs/agents/*.md describe; a lock file that
// drifted from them would test other versions than the notes describe.
var wantPins = map[string]map[string]string{
	Claude197: {"@anthropic-ai/claude-code": "2.1.197"},
	Claude332: {"@anthropic-ai/claude-code": "2.1.332"},
	Agents: {"@openai/codex": "0.169.0", "opencode-ai": "1.18.33",
		"@mariozechner/pi-coding-agent": "0.73.1", "rust-just": "1.57.0"},
	Codex171: {"@openai/codex": "0.171.0"},
	Pi16:     {"@earendil-works/pi-coding-agent": "1.6.0"},
	Node24:   {"node": "24.21.0"},
	OpenClaw: {"openclaw": "2026.9.6"},
	CCUsage:  {"ccusage": "18.0.11"},
	NewAgents: {"@google/gemini-cli": "0.61.0", "@qwen-code/qwen-code": "0.24.4",
		"@github/copilot": "1.0.102"},
	CCUsage20: {"ccusage": "20.0.24"},
}

func TestLockFilesPinTheSpecVersionsAndNoDownloadHosts(t *testing.T) {
	for _, name := range Projects() {
		var pkg struct{ Dependencies map[string]string }
		b, err := projects.ReadFile(name + "/package.json")
		if err != nil || json.Unmarshal(b, &pkg) != nil {
			t.Fatalf("%s/package.json: %v", name, err)
		}
		lock, err := projects.ReadFile(name + "/package-lock.json")
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			Packages map[string]struct {
				Version  string `json:"version"`
				Resolved string `json:"resolved"`
			} `json:"packages"`
		}
		if err := json.Unmarshal(lock, &l); err != nil {
			t.Fatalf("%s/package-lock.json: %v", name, err)
		}
		for dep, v := range wantPins[name] {
			if pkg.Dependencies[dep] != v {
				t.Errorf("%s/package.json pins %s@%q, want exactly %s", name, dep, pkg.Dependencies[dep], v)
			}
			if got := l.Packages["node_modules/"+dep].Version; got != v {
				t.Errorf("%s/package-lock.json locks %s@%q, want %s (regenerate the lock)", name, dep, got, v)
			}
		}
		// Which registry a machine uses is its npm config's business, never the
		// repository's: locks are generated with --omit-lockfile-registry-resolved.
		for p, e := range l.Packages {
			if e.Resolved != "" {
				t.Errorf("%s/package-lock.json records a download address for %s; regenerate with --omit-lockfile-registry-resolved", name, p)
			}
		}
	}
}

func TestCacheDir(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AGENTCTL_E2E_CACHE": "/c", "XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/c"},
		{map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/agentctl-e2e"},
		{map[string]string{"HOME": "/h"}, "/h/.cache/agentctl-e2e"},
	}
	for _, tt := range tests {
		if got, err := CacheDir(env(tt.env)); err != nil || got != tt.want {
			t.Errorf("CacheDir(%v) = %q, %v; want %q", tt.env, got, err, tt.want)
		}
	}
	if _, err := CacheDir(env(nil)); err == nil {
		t.Error("CacheDir without HOME: want an error that names AGENTCTL_E2E_CACHE")
	}
}

// fakeNPM puts an `npm` on PATH that logs each call and creates what a real
// install of the agents project would.
func fakeNPM(t *testing.T) (calls string) {
	bin := t.TempDir()
	calls = filepath.Join(t.TempDir(), "calls")
	script := `#!/bin/sh
echo "$PWD $*" >> ` + calls + `
sleep 0.2
mkdir -p node_modules/.bin && : > node_modules/.bin/codex && chmod +x node_modules/.bin/codex
`
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return calls
}

// Parallel callers install once; later callers reuse the stamped install; a
// changed lock file (another stamp) reinstalls.
func TestEnsureInstallsOnceAndReuses(t *testing.T) {
	calls := fakeNPM(t)
	in := &Installer{Cache: t.TempDir()}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := (&Installer{Cache: in.Cache}).Tool(context.Background(), "codex-0.169.0"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	p, err := in.Tool(context.Background(), "codex-0.169.0")
	if err != nil || p != filepath.Join(in.Cache, Agents, "node_modules", ".bin", "codex") {
		t.Fatalf("Tool(codex-0.169.0) = %q, %v", p, err)
	}
	if n := strings.Count(read(t, calls), "\n"); n != 1 {
		t.Fatalf("npm ran %d times, want once:\n%s", n, read(t, calls))
	}
	if args := read(t, calls); !strings.Contains(args, "--cache "+filepath.Join(in.Cache, "npm-cache")) || !strings.Contains(args, "install") {
		t.Errorf("npm args %q: want an install with the cache inside the e2e cache dir", args)
	}

	os.WriteFile(filepath.Join(in.Dir(Agents), stampName), []byte("old lock\n"), 0o644)
	if _, err := in.Ensure(context.Background(), Agents); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(read(t, calls), "\n"); n != 2 {
		t.Errorf("a stale stamp should reinstall; npm ran %d times", n)
	}
}

func TestToolUnknown(t *testing.T) {
	_, err := (&Installer{Cache: t.TempDir()}).Tool(context.Background(), "nope")
	if err == nil || !strings.Contains(err.Error(), "claude-2.1.197") {
		t.Errorf("unknown tool: %v; want an error listing the known tools", err)
	}
}

func read(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
