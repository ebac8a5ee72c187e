package gateway

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/meta"
)

// DefaultURL is where OpenClaw's gateway listens unless told otherwise.
const DefaultURL = "ws://127.0.0.1:18789"

// adapterName is the key of the gateway's settings in agentctl's config.
const adapterName = "openclaw"

// Endpoint is the gateway to ask and how to authenticate (docs/agents/openclaw.md §2.1). The
// *Source fields name where a value came from, so a warning can say what to fix.
type Endpoint struct {
	url, urlSource     string
	token, tokenSource string
	password           string
	// configured: the user set any of the above. An unconfigured user with
	// nothing listening on the default URL does not use OpenClaw: no warning.
	configured bool
}

// URL is the gateway's WebSocket URL.
func (e Endpoint) URL() string { return e.url }

// Configured reports whether the user set any gateway setting. An unconfigured
// user with nothing listening on the default URL does not use OpenClaw.
func (e Endpoint) Configured() bool { return e.configured }

// Settings are where an endpoint comes from: the environment of the command (or
// of a launch, for its supervisor), the home directory, and agentctl's config.
type Settings struct {
	Getenv func(string) string
	Home   string
	Config *meta.Config
	// Warn receives problems that do not stop the resolution (an unreadable
	// OpenClaw config file).
	Warn func(string)
}

func (s Settings) env(k string) string {
	if s.Getenv == nil {
		return ""
	}
	return s.Getenv(k)
}

func (s Settings) expandHome(p string) string {
	if p == "~" {
		return s.Home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(s.Home, p[2:])
	}
	return p
}

// Resolve applies the "first wins" tables of docs/agents/openclaw.md §2.1. It reads
// OpenClaw's own config file only for gateway.auth.token (and gateway.port), and
// never writes anything.
func Resolve(env Settings, defaultURL string) (Endpoint, error) {
	var ep Endpoint
	var acfg struct{ url, token string }
	var cfgEnv map[string]string
	if env.Config != nil {
		if c, ok := env.Config.Adapters[adapterName]; ok {
			acfg.url, acfg.token, cfgEnv = strings.TrimSpace(c.URL), strings.TrimSpace(c.Token), c.Env
		}
	}
	fromEnv := func(k string) (string, string) {
		if v := strings.TrimSpace(env.env(k)); v != "" {
			return v, k
		}
		return "", ""
	}
	fromCfgEnv := func(k string) (string, string) {
		if v := strings.TrimSpace(cfgEnv[k]); v != "" {
			return v, "config adapters.openclaw.env." + k
		}
		return "", ""
	}

	// Token: OpenClaw's own variable, then the name a prior tool used, then ours.
	for _, get := range []func() (string, string){
		func() (string, string) { return fromEnv("OPENCLAW_GATEWAY_TOKEN") },
		func() (string, string) { return fromEnv("OPENCLAW_WEBHOOK_TOKEN") },
		func() (string, string) {
			if acfg.token != "" {
				return acfg.token, "config adapters.openclaw.token"
			}
			return "", ""
		},
		func() (string, string) { return fromCfgEnv("OPENCLAW_GATEWAY_TOKEN") },
	} {
		if v, src := get(); v != "" {
			ep.token, ep.tokenSource = v, src
			break
		}
	}
	if ep.password, _ = fromEnv("OPENCLAW_GATEWAY_PASSWORD"); ep.password == "" {
		ep.password, _ = fromCfgEnv("OPENCLAW_GATEWAY_PASSWORD")
	}

	raw, src := acfg.url, "config adapters.openclaw.url"
	if raw == "" {
		raw, src = fromEnv("OPENCLAW_GATEWAY_URL")
	}
	if raw == "" {
		if p, k := fromEnv("OPENCLAW_GATEWAY_PORT"); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return ep, fmt.Errorf("%s=%q is not a port number; fix or unset it", k, p)
			}
			raw, src = fmt.Sprintf("ws://127.0.0.1:%d", n), k
		}
	}

	// OpenClaw's own config: the token the gateway checks (a string only; any
	// other value is a secret reference agentctl cannot resolve), and its port.
	// The port alone does not make the gateway "configured" (docs/agents/openclaw.md §2.1).
	var portURL, portSrc string
	if ep.token == "" || raw == "" {
		path, gw, err := readOpenClawConfig(env)
		switch {
		case err != nil:
			if env.Warn != nil {
				env.Warn(fmt.Sprintf("%v (ignored)", err))
			}
		case gw != nil:
			if tok := configToken(gw); ep.token == "" && tok != "" {
				ep.token, ep.tokenSource = tok, path+" gateway.auth.token"
			}
			if port, ok := gw["port"].(float64); ok && port >= 1 && port <= 65535 && port == float64(int(port)) {
				portURL, portSrc = fmt.Sprintf("ws://127.0.0.1:%d", int(port)), path+" gateway.port"
			}
		}
	}

	ep.configured = raw != "" || ep.token != "" || ep.password != ""
	if raw == "" {
		raw, src = portURL, portSrc
	}
	if raw == "" {
		raw, src = defaultURL, "default"
	}
	u, err := normaliseURL(raw)
	if err != nil {
		return ep, fmt.Errorf("gateway URL %q (from %s): %v", raw, src, err)
	}
	ep.url, ep.urlSource = u, src
	return ep, nil
}

// normaliseURL accepts ws(s):// and http(s):// (rewritten to ws(s)://).
func normaliseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return "", errors.New("want ws://host:port or wss://host:port")
	}
	if u.Host == "" {
		return "", errors.New("no host; want ws://host:port")
	}
	return u.String(), nil
}

// ConfigPath is where OpenClaw keeps its config (JSON5).
func ConfigPath(env Settings) string {
	if p := env.env("OPENCLAW_CONFIG_PATH"); p != "" {
		return env.expandHome(p)
	}
	if d := env.env("OPENCLAW_STATE_DIR"); d != "" {
		return filepath.Join(env.expandHome(d), "openclaw.json")
	}
	if env.Home == "" {
		return ""
	}
	return filepath.Join(env.Home, ".openclaw", "openclaw.json")
}

// readOpenClawConfig returns the config's "gateway" object, or nil when the file
// or the object is absent.
func readOpenClawConfig(env Settings) (string, map[string]any, error) {
	path := ConfigPath(env)
	if path == "" {
		return "", nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil, nil
	}
	if err != nil {
		return path, nil, fmt.Errorf("read %s: %w", path, err)
	}
	v, err := parseJSON5(string(b))
	if err != nil {
		return path, nil, fmt.Errorf("%s: %v", path, err)
	}
	root, _ := v.(map[string]any)
	gw, _ := root["gateway"].(map[string]any)
	return path, gw, nil
}

func configToken(gw map[string]any) string {
	auth, _ := gw["auth"].(map[string]any)
	tok, _ := auth["token"].(string)
	return strings.TrimSpace(tok)
}
