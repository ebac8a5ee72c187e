package launch

import (
	"strings"
	"testing"
)

// agentctl's own secrets never reach the agent (issue 34 item 3): a launched
// agent's tools can read its environment. The launch record carries the
// webhook secret to the supervisor; the agent's environment does not.
func TestAgentEnvHasNoAgentctlSecret(t *testing.T) {
	environ := []string{"PATH=/usr/bin", "HOME=/h", "AGENTCTL_WEBHOOK_SECRET=topsecret",
		"AGENTCTL_CLAUDE_BIN=" + execBin(t, "claude"), "AGENTCTL_CODEX_BIN=" + execBin(t, "codex"),
		"AGENTCTL_OPENCODE_BIN=" + execBin(t, "opencode"), "AGENTCTL_PI_BIN=" + execBin(t, "pi"),
		"AGENTCTL_PI_RUST_BIN=" + execBin(t, "pi-rust"), "AGENTCTL_GEMINI_BIN=" + execBin(t, "gemini"),
		"AGENTCTL_QWEN_BIN=" + execBin(t, "qwen"), "AGENTCTL_COPILOT_BIN=" + execBin(t, "copilot")}
	for _, d := range drivers() {
		req := &Request{Kind: KindLaunch, Cwd: "/w", LaunchID: "l-0123456789ab", Prompt: "hi", Environ: environ}
		p, err := d.Plan(req)
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		for _, kv := range p.Env {
			if strings.HasPrefix(kv, "AGENTCTL_WEBHOOK_SECRET=") {
				t.Errorf("%s: the agent's environment holds %s", d.Name(), kv)
			}
		}
		if v := envOf(p, "PATH"); v != "/usr/bin" {
			t.Errorf("%s: PATH %q, want the launcher's", d.Name(), v)
		}
	}
	// The user's own --env is the user's word.
	e := ClaudeEnv(environ, nil, "", []string{"AGENTCTL_WEBHOOK_SECRET=mine"})
	if v, _ := e.get("AGENTCTL_WEBHOOK_SECRET"); v != "mine" {
		t.Errorf("--env AGENTCTL_WEBHOOK_SECRET=mine: got %q", v)
	}
	// Stopping a background Claude job runs the agent's binary too.
	if v, ok := ClaudeEnv(environ, nil, "/h", nil).get("AGENTCTL_WEBHOOK_SECRET"); ok {
		t.Errorf("ClaudeEnv keeps the secret: %q", v)
	}
}
