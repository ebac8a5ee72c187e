package launch

import (
	"fmt"
	"os/exec"
	"strings"
)

// resolveBin finds an agent binary: env envVar, then config
// adapters.<adapter>.binary, then name on $PATH. install says how to get it.
func resolveBin(req *Request, adapter, envVar, name, install string) (string, error) {
	if v := req.getenv(envVar); v != "" {
		if !executable(v) {
			return "", fmt.Errorf("%s=%s is not an executable file; fix or unset it", envVar, v)
		}
		return v, nil
	}
	if v := req.adapterConfig(adapter).Binary; v != "" {
		if !executable(v) {
			return "", fmt.Errorf("config adapters.%s.binary %s is not an executable file; fix it in config.json", adapter, v)
		}
		return v, nil
	}
	look := req.LookPath
	if look == nil {
		look = exec.LookPath
	}
	p, err := look(name)
	if err != nil {
		return "", fmt.Errorf("%s binary not found on $PATH; %s, or set %s or config adapters.%s.binary", name, install, envVar, adapter)
	}
	return p, nil
}

// agentEnv is the environment policy shared by the agents that keep the
// launcher's environment (codex, opencode, pi): everything inherited, then
// config env, HOME for --home, PWD = the cwd (OpenCode and pi trust $PWD over
// the real cwd), then --env.
func agentEnv(req *Request, adapter string) *envSet {
	env := configEnv(req, adapter)
	if req.Cwd != "" {
		env.set("PWD", req.Cwd)
	}
	return env
}

// configEnv is the launcher's environment, less agentctl's own secrets, with config
// adapters.<adapter>.env set over it, and HOME for --home.
func configEnv(req *Request, adapter string) *envSet {
	env := agentBase(req.Environ)
	cfg := req.adapterConfig(adapter)
	for _, k := range sortedKeys(cfg.Env) {
		env.set(k, cfg.Env[k])
	}
	if req.Home != "" {
		env.set("HOME", req.Home)
	}
	return env
}

// applyUserEnv applies --env last: the user's word wins.
func applyUserEnv(env *envSet, userEnv []string) {
	for _, kv := range userEnv {
		k, v, _ := strings.Cut(kv, "=")
		env.set(k, v)
	}
}
