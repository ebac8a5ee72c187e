package discover

import (
	"testing"

	"github.com/agentctl/agentctl/meta"
)

// A session of a `launch --home DIR` run is read under DIR whatever home the
// command reads; any other session under the command's own.
func TestEnvForUsesTheRecordsHome(t *testing.T) {
	env := &Env{Home: "/caller", Getenv: func(k string) string {
		return map[string]string{"HOME": "/caller", "XDG_DATA_HOME": "/caller/.data"}[k]
	},
		Launches: []meta.Launch{{ID: "l-other", Home: "/other"}, {ID: "l-same", Home: "/caller"}, {ID: "l-none"}}}
	for _, c := range []struct {
		name    string
		s       Session
		home    string
		xdgData string
		sameEnv bool
	}{
		{"launched under another home", Session{LaunchID: "l-other"}, "/other", "", false},
		{"launched under this home", Session{LaunchID: "l-same"}, "/caller", "/caller/.data", true},
		{"record without a home", Session{LaunchID: "l-none"}, "/caller", "/caller/.data", true},
		{"not launched", Session{}, "/caller", "/caller/.data", true},
		{"record gone", Session{LaunchID: "l-gone"}, "/caller", "/caller/.data", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := env.For(c.s)
			if got.Home != c.home || got.Getenv("HOME") != c.home || got.Getenv("XDG_DATA_HOME") != c.xdgData {
				t.Errorf("Home %q, $HOME %q, $XDG_DATA_HOME %q; want %q, %q", got.Home, got.Getenv("HOME"), got.Getenv("XDG_DATA_HOME"), c.home, c.xdgData)
			}
			if (got == env) != c.sameEnv {
				t.Errorf("same Env: %v, want %v", got == env, c.sameEnv)
			}
		})
	}
}
