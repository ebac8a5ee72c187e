package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
)

// ConfigFile is agentctl's config in the state dir.
const ConfigFile = "config.json"

// Price is USD per million tokens for one model (or model-id prefix).
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read,omitempty"`
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// AdapterConfig is config.adapters.<name>.
type AdapterConfig struct {
	Binary string            `json:"binary,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	// Gateway settings (openclaw): URL and token.
	URL   string `json:"url,omitempty"`
	Token string `json:"token,omitempty"`
	// IsSandbox lets a launch as root add IS_SANDBOX=1 for bypass permission mode
	// (claude-code; the same as `launch --sandbox`).
	IsSandbox bool `json:"is_sandbox,omitempty"`
	// LaunchTimeout bounds how long a launch waits for the agent to confirm its
	// session id (Go duration; default per adapter).
	LaunchTimeout string `json:"launch_timeout,omitempty"`
}

// Config is config.json (README "Files").
type Config struct {
	Schema        int                      `json:"schema,omitempty"`
	Adapter       string                   `json:"adapter,omitempty"`
	Model         string                   `json:"model,omitempty"`
	Cwd           string                   `json:"cwd,omitempty"`
	Timeout       string                   `json:"timeout,omitempty"`
	LaunchTTL     string                   `json:"launch_ttl,omitempty"`
	WebhookURL    string                   `json:"webhook_url,omitempty"`
	WebhookSecret string                   `json:"webhook_secret,omitempty"`
	Adapters      map[string]AdapterConfig `json:"adapters,omitempty"`
	Prices        map[string]Price         `json:"prices,omitempty"`
	Hosts         []HostEntry              `json:"hosts,omitempty"` // §11, hosts.go
	// Budget holds the default limits of launch and resume (see Budget).
	Budget *Budget `json:"budget,omitempty"`
	// Notify rules are applied by each launch's supervisor to its own session
	// (README "Notifications").
	Notify []NotifyRule `json:"notify,omitempty"`
}

// NotifyRule is one config notify rule: the flags of `agentctl notify`.
type NotifyRule struct {
	Name    string `json:"name,omitempty"`
	On      string `json:"on"`
	Exec    string `json:"exec,omitempty"`
	Desktop bool   `json:"desktop,omitempty"`
	Webhook string `json:"webhook,omitempty"`
}

var knownConfigKeys = map[string]bool{
	"schema": true, "adapter": true, "model": true, "cwd": true, "timeout": true, "launch_ttl": true,
	"webhook_url": true, "webhook_secret": true, "adapters": true, "prices": true, "hosts": true,
	"budget": true,
	"notify": true,
}

// LoadConfig reads config.json. A missing file is an empty config; a malformed one
// is an error naming line and column; unknown keys are returned as warnings.
func (s *Store) LoadConfig() (*Config, []string, error) {
	path := s.Path(ConfigFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return ParseConfig(path, b)
}

// ParseConfig decodes a config file's bytes (path is only for messages).
func ParseConfig(path string, b []byte) (*Config, []string, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, nil, fmt.Errorf("%s: %s; fix the file or move it aside", path, describeJSONError(b, err))
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(b, &raw)
	var warns []string
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !knownConfigKeys[k] {
			warns = append(warns, fmt.Sprintf("%s: unknown key %q (ignored)", path, k))
		}
	}
	return &c, warns, nil
}

// describeJSONError turns a decode error into "line L, column C: msg".
func describeJSONError(b []byte, err error) string {
	off := int64(-2)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1 // Offset counts the offending byte too
	case errors.As(err, &te):
		off = te.Offset
	}
	if off == -2 {
		return err.Error()
	}
	if off < 0 {
		off = 0
	}
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(b[:off], '\n')
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}
