package copilot

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/agentctl/agentctl/discover"
)

// TestLiveHome lists a real Copilot home with the machine's process table:
// COPILOT_LIVE_HOME=/path/to/home go test -run TestLiveHome -v ./discover/copilot/
// (how docs/agents/copilot.md's liveness facts were checked against a running CLI).
func TestLiveHome(t *testing.T) {
	home := os.Getenv("COPILOT_LIVE_HOME")
	if home == "" {
		t.Skip("COPILOT_LIVE_HOME not set")
	}
	env := discover.DefaultEnv(home, "")
	env.Getenv = func(string) string { return "" }
	ss, err := New().Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		b, _ := json.Marshal(s)
		t.Logf("%s", b)
	}
}
