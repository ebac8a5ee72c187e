package launch

import "fmt"

// binaryEnv is each launchable adapter's binary override variable.
var binaryEnv = map[string]string{
	"claude-code": "AGENTCTL_CLAUDE_BIN",
	"codex":       "AGENTCTL_CODEX_BIN",
	"opencode":    "AGENTCTL_OPENCODE_BIN",
	"pi":          "AGENTCTL_PI_BIN",
	"pi-rust":     "AGENTCTL_PI_RUST_BIN",
}

// FindBinary resolves an adapter's binary exactly as a launch would (its
// override variable, config adapters.<name>.binary, $PATH, the agent's usual
// install places), so `doctor` reports what a launch would run. configured is
// true when the user named the binary (variable or config): then a miss is a
// mistake to fix, not an agent that is simply not installed.
func FindBinary(adapter string, req *Request) (path string, configured bool, err error) {
	env, ok := binaryEnv[adapter]
	if !ok {
		return "", false, fmt.Errorf("%s is not started from a local binary", adapter)
	}
	configured = req.getenv(env) != "" || req.adapterConfig(adapter).Binary != ""
	switch adapter {
	case "claude-code":
		path, err = resolveClaude(req)
	case "codex":
		path, err = resolveCodex(req)
	case "opencode":
		path, err = resolveOpenCode(req)
	case "pi":
		path, err = resolvePi(req)
	case "pi-rust":
		path, err = resolvePiRust(req)
	}
	return path, configured, err
}

func resolveOpenCode(req *Request) (string, error) {
	return resolveBin(req, "opencode", binaryEnv["opencode"], "opencode", "install it (npm i -g opencode-ai)")
}

func resolvePi(req *Request) (string, error) {
	return resolveBin(req, "pi", binaryEnv["pi"], "pi", "install it (npm i -g @mariozechner/pi-coding-agent)")
}

// resolvePiRust looks for pi-rust by that name only: upstream builds the binary
// as `pi` too, which would find the TypeScript pi.
func resolvePiRust(req *Request) (string, error) {
	return resolveBin(req, "pi-rust", binaryEnv["pi-rust"], "pi-rust", "install pi-rust (as pi-rust on $PATH)")
}
