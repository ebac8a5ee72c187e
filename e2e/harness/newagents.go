package harness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/e2e/stub"
)

// NewAgent is one of the agents added by issue 33 (Gemini CLI, Qwen Code, Copilot
// CLI), installed at its pinned version and pointed at a stub in a fresh HOME
// (docs/agents/{gemini,qwen,copilot}.md, "Pointing it at a stub").
type NewAgent struct {
	Name string // the adapter name agentctl reports
	Bin  string
	Home string
	Env  Env
	// BinVar is the variable that points agentctl's launch at Bin.
	BinVar string
	// Args go before the prompt-reading flags of every run by hand.
	Args []string
}

// NewGemini: GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL name the stub, and
// settings.json selects API-key auth (without it 0.61 picks "gateway" auth and
// rejects it, exit 41). Turns go to :streamGenerateContent, the model router's
// side call to :generateContent.
func NewGemini(t testing.TB, srv *stub.Server) *NewAgent {
	t.Helper()
	a := newAgentHome(t, "gemini", "AGENTCTL_GEMINI_BIN")
	writeFile(t, filepath.Join(a.Home, ".gemini", "settings.json"), `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`)
	a.Env = a.Env.Merge(Env{"GEMINI_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": srv.URL()})
	a.Args = []string{"-o", "stream-json", "--skip-trust"}
	return a
}

// NewQwen: the OpenAI surface of the stub, auth type and model from settings.json
// (as a user's own setup would have them), and Node 24 first on PATH (qwen
// declares node >= 22).
func NewQwen(t testing.TB, srv *stub.Server) *NewAgent {
	t.Helper()
	a := newAgentHome(t, "qwen", "AGENTCTL_QWEN_BIN")
	a.Name = "qwen-code"
	writeFile(t, filepath.Join(a.Home, ".qwen", "settings.json"), `{"security":{"auth":{"selectedType":"openai"}},"model":{"name":"qwen3-coder-plus"}}`)
	node := filepath.Dir(Tool(t, "node24"))
	a.Env = BaseEnv(a.Home, a.Env["TMPDIR"], node).Merge(Env{"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": srv.URL() + "/v1"})
	a.Args = []string{"-o", "stream-json"}
	return a
}

// NewCopilot: bring-your-own-key mode on the stub's OpenAI surface, offline (no
// GitHub traffic, no update check).
func NewCopilot(t testing.TB, srv *stub.Server) *NewAgent {
	t.Helper()
	a := newAgentHome(t, "copilot", "AGENTCTL_COPILOT_BIN")
	a.Env = a.Env.Merge(Env{"COPILOT_PROVIDER_BASE_URL": srv.URL() + "/v1", "COPILOT_PROVIDER_TYPE": "openai",
		"COPILOT_PROVIDER_API_KEY": "test", "COPILOT_MODEL": "gpt-4.1", "COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false"})
	a.Args = []string{"--allow-all-tools", "--output-format", "json"}
	return a
}

func newAgentHome(t testing.TB, tool, binVar string) *NewAgent {
	bin := Tool(t, tool)
	root := TempDir(t)
	home, tmp := filepath.Join(root, "home"), filepath.Join(root, "tmp")
	mkdirs(t, home, tmp)
	return &NewAgent{Name: tool, Bin: bin, Home: home, Env: BaseEnv(home, tmp), BinVar: binVar}
}

func writeFile(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Run starts one headless run by hand (as a user would, outside agentctl) in dir
// with the prompt on stdin; extra flags (--resume ID) go after the agent's own.
func (a *NewAgent) Run(t testing.TB, dir, prompt string, extra ...string) *Proc {
	t.Helper()
	args := append(append([]string{}, a.Args...), extra...)
	return Start(t, Spec{Path: a.Bin, Args: args, Dir: dir, Env: a.Env.With("PWD", dir), Stdin: prompt, Name: a.Name})
}
