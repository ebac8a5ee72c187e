package pi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/agentctl/agentctl/discover"
)

// Pi retries a provider error by itself (docs/agents/pi.md §4.2): it writes the
// failed attempt's assistant message (stopReason "error") to the session, waits
// retry.baseDelayMs·2^(n-1) and tries again, up to retry.maxRetries times
// (settings.json; defaults enabled, 3), only for errors its own pattern calls
// retryable. Nothing marks the retry in the file, so a live pi whose file ends
// with k such errors in a row, k ≤ maxRetries, is retrying (running); past
// that it gave up (idle, blocked).

// piRetryable is pi 0.73.1's own pattern (agent-session.js _isRetryableError).
var piRetryable = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay`)
})

// retrySettings is the retry block of pi's settings: the agent dir's
// settings.json, overridden by the project's .pi/settings.json.
type retrySettings struct {
	Enabled    bool
	MaxRetries int
}

func readRetry(agentDir, cwd string) retrySettings {
	rs := retrySettings{Enabled: true, MaxRetries: 3}
	paths := []string{filepath.Join(agentDir, "settings.json")}
	if filepath.IsAbs(cwd) {
		paths = append(paths, filepath.Join(cwd, ".pi", "settings.json"))
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var v struct {
			Retry *struct {
				Enabled    *bool `json:"enabled"`
				MaxRetries *int  `json:"maxRetries"`
			} `json:"retry"`
		}
		if json.Unmarshal(b, &v) != nil || v.Retry == nil {
			continue
		}
		if v.Retry.Enabled != nil {
			rs.Enabled = *v.Retry.Enabled
		}
		if v.Retry.MaxRetries != nil {
			rs.MaxRetries = *v.Retry.MaxRetries
		}
	}
	return rs
}

// retrying says whether a live pi whose file ends with streak provider errors
// (the last one msg) is retrying, and how it stands.
func retrying(rs retrySettings, streak int, msg string) (string, bool) {
	if !rs.Enabled || streak < 1 || streak > rs.MaxRetries || !piRetryable().MatchString(msg) {
		return "", false
	}
	return fmt.Sprintf("pi retries the provider: %d of %d attempts failed, last %q (settings retry.maxRetries %d)",
		streak, rs.MaxRetries+1, discover.OneLine(msg, 120), rs.MaxRetries), true
}
