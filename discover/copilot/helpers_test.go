package copilot

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

// fixtureHome is the real Copilot CLI 1.0.102 home recorded against the stub
// (shared fixtures, record-shared/copilot): five sessions, E killed by SIGKILL.
const fixtureHome = "testdata/home"

// Session ids of the fixture (manifest.json).
const (
	idE = "25b8f2cc-2c2b-47e4-9a1b-251991d10b57" // TUI, SIGKILLed: stale inuse.24788.lock
	idA = "fe1549e7-b886-48f7-88f2-2888ebd8414e"
	idB = "1bf0289c-f58d-494b-b294-93651e317769" // resumed, one tool call
	idC = "90c8d4e3-67bd-4487-a79f-2b9e38cd9699" // 429
	idD = "ca6f2674-233d-4b73-8971-04e0570fc298" // 401
)

// now is after every fixture timestamp (2026-12-01T22:30–22:33Z).
var now = time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)

// testEnv builds an Env over home with the given (available) process table.
func testEnv(t *testing.T, home string, procs proc.Table, vars map[string]string) (*discover.Env, *[]string) {
	return discovertest.NewWarnEnv(home, vars, procs, now)
}

func discoverAll(t *testing.T, env *discover.Env) map[string]discover.Session {
	t.Helper()
	return discovertest.DiscoverAll(t, New(), env)
}

// homeWith writes a one-session home whose events.jsonl is the given lines.
func homeWith(t *testing.T, id string, lines ...string) string {
	t.Helper()
	home := t.TempDir()
	discovertest.WriteLines(t, filepath.Join(home, ".copilot", "session-state", id, "events.jsonl"), lines...)
	return home
}

var ts = discovertest.Time
