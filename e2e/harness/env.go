package harness

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Env is a process environment built from scratch. Agents never inherit the
// developer's: their keys, config dirs and XDG paths would leak into the test.
type Env map[string]string

// BaseEnv is the minimum every agent needs: a fresh HOME and TMPDIR, a PATH with
// the given dirs first, then the system node's dir (npm shims run `node`), then
// the usual system dirs (git, sh).
func BaseEnv(home, tmp string, pathFirst ...string) Env {
	path := append([]string{}, pathFirst...)
	if node, err := exec.LookPath("node"); err == nil {
		path = append(path, filepath.Dir(node))
	}
	path = append(path, "/usr/local/bin", "/usr/bin", "/bin")
	env := Env{
		"HOME":   home,
		"TMPDIR": tmp,
		"PATH":   strings.Join(dedupe(path), ":"),
		"LANG":   "C.UTF-8",
		"TERM":   "dumb",
		"TZ":     "UTC",
		"USER":   "e2e",
	}
	// Agents phone home on their own (OpenCode looks up npm packages, OpenClaw
	// refreshes a model catalog). Point every proxy-aware client at a closed
	// local port so those attempts fail at once, and let only loopback — the
	// stub — through. Node honours these only with NODE_USE_ENV_PROXY (Node 24).
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
		env[k] = deadProxy
	}
	env["NO_PROXY"] = "127.0.0.1,localhost,::1"
	env["no_proxy"] = env["NO_PROXY"]
	env["NODE_USE_ENV_PROXY"] = "1"
	return env
}

// deadProxy is a loopback port nothing listens on (the discard port).
const deadProxy = "http://127.0.0.1:9"

// With returns a copy of e with k set to v.
func (e Env) With(k, v string) Env {
	c := make(Env, len(e)+1)
	for kk, vv := range e {
		c[kk] = vv
	}
	c[k] = v
	return c
}

// Merge returns a copy of e with every key of o set.
func (e Env) Merge(o Env) Env {
	c := e.With("", "")
	delete(c, "")
	for k, v := range o {
		c[k] = v
	}
	return c
}

// List is the KEY=value form exec.Cmd wants, sorted for readable logs.
func (e Env) List() []string {
	out := make([]string, 0, len(e))
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
