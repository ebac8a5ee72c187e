package launch

import (
	"fmt"

	"github.com/agentctl/agentctl/agents"
)

// FindBinary resolves an adapter's binary exactly as a launch would (its
// override variable, config adapters.<name>.binary, $PATH, the agent's usual
// install places), so `doctor` reports what a launch would run. configured is
// true when the user named the binary (variable or config): then a miss is a
// mistake to fix, not an agent that is simply not installed.
func FindBinary(adapter string, req *Request) (path string, configured bool, err error) {
	a := agents.Get(adapter)
	if a.BinEnv == "" {
		return "", false, fmt.Errorf("%s is not started from a local binary", adapter)
	}
	configured = req.getenv(a.BinEnv) != "" || req.adapterConfig(adapter).Binary != ""
	// Claude Code and Codex have resolvers of their own (install places
	// besides $PATH, their own wording); the others are their row.
	switch adapter {
	case "claude-code":
		path, err = resolveClaude(req)
	case "codex":
		path, err = resolveCodex(req)
	default:
		path, err = resolveAgentBin(req, a)
	}
	return path, configured, err
}

// resolveAgentBin finds an agent's binary from its row: its variable, its
// config, its name on $PATH.
func resolveAgentBin(req *Request, a agents.Agent) (string, error) {
	return resolveBin(req, a.Name, a.BinEnv, a.Binary, a.Install)
}

func resolveOpenCode(req *Request) (string, error) {
	return resolveAgentBin(req, agents.Get("opencode"))
}

func resolvePi(req *Request) (string, error) {
	return resolveAgentBin(req, agents.Get("pi"))
}

// resolvePiRust looks for pi-rust by that name only (its row's Binary).
func resolvePiRust(req *Request) (string, error) {
	return resolveAgentBin(req, agents.Get("pi-rust"))
}
