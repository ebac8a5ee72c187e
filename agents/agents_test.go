package agents

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRegistry(t *testing.T) {
	if diff := cmp.Diff([]string{"claude-code", "codex", "opencode", "pi", "pi-rust", "openclaw", "gemini", "qwen-code", "copilot"}, Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"claude-code", "codex", "opencode", "pi", "openclaw", "gemini", "qwen-code", "copilot"}, Readers()); diff != "" {
		t.Errorf("readers (-want +got):\n%s", diff)
	}
	if got := SubsOf("pi"); len(got) != 1 || got[0] != "pi-rust" {
		t.Errorf("SubsOf(pi) = %v", got)
	}
	if ReaderOf("pi-rust") != "pi" || Known("aider") || !Known("openclaw") {
		t.Error("ReaderOf/Known")
	}
	if got, want := UnknownError("x").Error(), `unknown adapter "x"; known adapters: claude-code, codex, opencode, pi, pi-rust, openclaw, gemini, qwen-code, copilot`; got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
}

// The rows are facts other layers act on (which variable names a binary, who
// can fork): a change here is a change of behaviour, so each row is pinned.
func TestRows(t *testing.T) {
	want := []Agent{
		{Name: "claude-code", Reader: "claude-code", Doc: "claude-code", Label: "claude", Short: "cc",
			BinEnv: "AGENTCTL_CLAUDE_BIN", Binary: "claude", Install: "install Claude Code (npm i -g @anthropic-ai/claude-code)",
			TestedOldest: "2.1.197", TestedNewest: "2.1.332",
			Launch: true, Resume: true, Fork: true, Background: true, Send: true},
		{Name: "codex", Reader: "codex", Doc: "codex", Label: "codex", Short: "codex",
			BinEnv: "AGENTCTL_CODEX_BIN", Binary: "codex", Install: "install it (npm i -g @openai/codex)",
			TestedOldest: "0.169.0", TestedNewest: "0.171.0", Launch: true, Resume: true, Send: true},
		{Name: "opencode", Reader: "opencode", Doc: "opencode", Label: "opencode", Short: "opencode",
			BinEnv: "AGENTCTL_OPENCODE_BIN", Binary: "opencode", Install: "install it (npm i -g opencode-ai)",
			TestedOldest: "1.18.33", TestedNewest: "1.18.33", Launch: true, Resume: true, Send: true},
		{Name: "pi", Reader: "pi", Doc: "pi", Label: "pi", Short: "pi",
			BinEnv: "AGENTCTL_PI_BIN", Binary: "pi", Install: "install it (npm i -g @earendil-works/pi-coding-agent)",
			TestedOldest: "0.73.1", TestedNewest: "1.6.0", Launch: true, Resume: true, KeepOpen: true, Send: true},
		{Name: "pi-rust", Reader: "pi", Doc: "pi", Label: "pi", Short: "pi-rs",
			BinEnv: "AGENTCTL_PI_RUST_BIN", Binary: "pi-rust", Install: "install pi-rust (as pi-rust on $PATH)", Launch: true, Resume: true},
		{Name: "openclaw", Reader: "openclaw", Doc: "openclaw", Label: "openclaw", Short: "openclaw",
			TestedOldest: "2026.9.6", TestedNewest: "2026.9.6", Gateway: true, Launch: true, Resume: true},
		{Name: "gemini", Reader: "gemini", Doc: "gemini", Label: "gemini", Short: "gemini",
			BinEnv: "AGENTCTL_GEMINI_BIN", Binary: "gemini", Install: "install it (npm i -g @google/gemini-cli)",
			TestedOldest: "0.61.0", TestedNewest: "0.61.0", Launch: true, Resume: true, Send: true},
		{Name: "qwen-code", Reader: "qwen-code", Doc: "qwen", Label: "qwen", Short: "qwen",
			BinEnv: "AGENTCTL_QWEN_BIN", Binary: "qwen", Install: "install it (npm i -g @qwen-code/qwen-code)",
			TestedOldest: "0.24.4", TestedNewest: "0.24.4", Launch: true, Resume: true, Send: true},
		{Name: "copilot", Reader: "copilot", Doc: "copilot", Label: "copilot", Short: "copilot",
			BinEnv: "AGENTCTL_COPILOT_BIN", Binary: "copilot", Install: "install it (npm i -g @github/copilot)",
			TestedOldest: "1.0.102", TestedNewest: "1.0.102", Launch: true, Resume: true, Send: true},
	}
	if diff := cmp.Diff(want, All()); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if got := Get("pi-rust"); got.Reader != "pi" || !got.Resume || got.Fork {
		t.Errorf("Get(pi-rust) = %+v", got)
	}
	if got := Get("aider"); got != (Agent{}) {
		t.Errorf("Get(unknown) = %+v, want the zero row", got)
	}
	for _, a := range All() {
		if a.Name == "" || a.Reader == "" || a.Doc == "" || a.Label == "" || a.Short == "" {
			t.Errorf("%s: a name field is empty: %+v", a.Name, a)
		}
		if (a.BinEnv == "") != (a.Binary == "") || (a.BinEnv == "") != (a.Install == "") {
			t.Errorf("%s: BinEnv, Binary and Install go together: %+v", a.Name, a)
		}
	}
}
