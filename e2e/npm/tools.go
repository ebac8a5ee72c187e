package npm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// tool says where one executable lives inside an installed project.
type tool struct {
	project string
	// paths relative to the project's node_modules, first existing one wins.
	paths func() []string
}

// npmArch maps GOARCH to the arch suffix npm platform packages use.
func npmArch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x64"
	}
	return runtime.GOARCH
}

func claudeTool(project string) tool {
	return tool{project, func() []string {
		// .bin/claude links to bin/claude.exe, which postinstall hard-links to the
		// native binary. When scripts were blocked it is a small stub, so fall back
		// to the platform package's binary (docs/agents/claude-code.md §10.1).
		return []string{
			".bin/claude",
			fmt.Sprintf("@anthropic-ai/claude-code-%s-%s/claude", runtime.GOOS, npmArch()),
		}
	}}
}

var tools = map[string]tool{
	"claude-2.1.197": claudeTool(Claude197),
	"claude-2.1.332": claudeTool(Claude332),
	"codex-0.169.0":  {Agents, func() []string { return []string{".bin/codex"} }},
	"codex-0.171.0":  {Codex171, func() []string { return []string{".bin/codex"} }},
	"opencode":       {Agents, func() []string { return []string{".bin/opencode"} }},
	"pi-0.73.1":      {Agents, func() []string { return []string{".bin/pi"} }},
	// Pi 1.6's bin is a node script: run it with node24's bin dir first on PATH.
	"pi-1.6.0": {Pi16, func() []string { return []string{".bin/pi"} }},
	// The native just needs no node, so CI can call it before anything else.
	"just": {Agents, func() []string {
		return []string{fmt.Sprintf("rust-just-%s-%s/bin/just", runtime.GOOS, npmArch()), ".bin/just"}
	}},
	"node24": {Node24, func() []string { return []string{".bin/node"} }},
	// OpenClaw is run as `node24 openclaw.mjs …` (docs/agents/openclaw.md §8).
	"openclaw": {OpenClaw, func() []string { return []string{"openclaw/openclaw.mjs"} }},
	// ccusage needs Node >= 22 at run time: run it as `node24 ccusage.js …`.
	"ccusage": {CCUsage, func() []string { return []string{"ccusage/dist/index.js"} }},
	// Gemini CLI and Qwen Code are node bundles; qwen declares node >= 22, so the harness
	// runs it with node24 first on PATH. Copilot's .bin/copilot is a node loader that
	// starts the platform package's native binary.
	"gemini":  {NewAgents, func() []string { return []string{".bin/gemini"} }},
	"qwen":    {NewAgents, func() []string { return []string{".bin/qwen"} }},
	"copilot": {NewAgents, func() []string { return []string{".bin/copilot"} }},
	// ccusage 20 is a native binary per platform behind a small node launcher,
	// which makes the binary executable on its first run (npm does not).
	"ccusage20": {CCUsage20, func() []string { return []string{".bin/ccusage"} }},
}

// Tools lists the tool names Tool understands.
func Tools() []string {
	return []string{"claude-2.1.197", "claude-2.1.332", "codex-0.169.0", "codex-0.171.0", "opencode", "pi-0.73.1", "pi-1.6.0", "just", "node24", "openclaw", "ccusage", "gemini", "qwen", "copilot", "ccusage20"}
}

// Tool installs the project holding tool if needed and returns the tool's path.
func (in *Installer) Tool(ctx context.Context, name string) (string, error) {
	t, ok := tools[name]
	if !ok {
		return "", fmt.Errorf("unknown e2e tool %q; known: %s", name, strings.Join(Tools(), ", "))
	}
	dir, err := in.Ensure(ctx, t.project)
	if err != nil {
		return "", err
	}
	var tried []string
	for _, rel := range t.paths() {
		p := filepath.Join(dir, "node_modules", filepath.FromSlash(rel))
		st, err := os.Stat(p)
		if err == nil && st.Mode().IsRegular() && !stubClaude(rel, st.Size()) {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("%s: not found after installing %s (looked at %s); delete %s and run again",
		name, t.project, strings.Join(tried, ", "), dir)
}

// stubClaude spots the placeholder bin/claude.exe left when postinstall did not run:
// the real binary is hundreds of MB.
func stubClaude(rel string, size int64) bool {
	return rel == ".bin/claude" && size < 1<<20
}
