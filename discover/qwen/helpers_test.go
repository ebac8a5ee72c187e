package qwen

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

// fixtureHome is the real Qwen Code 0.24.4 home recorded against the stub
// (copied from the shared fixtures with its manifest.json).
const fixtureHome = "testdata/home"

// now is after every fixture timestamp (2026-12-01T22:28–22:31Z).
var now = time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)

// testEnv builds an Env over home with the given process table (nil: an
// empty but available one).
func testEnv(t *testing.T, home string, procs proc.Table, vars map[string]string) (*discover.Env, *[]string) {
	return discovertest.NewWarnEnv(home, vars, procs, now)
}

func discoverAll(t *testing.T, a *Adapter, env *discover.Env) map[string]discover.Session {
	t.Helper()
	return discovertest.DiscoverAll(t, a, env)
}

// writeChat writes a transcript for sid under home's default projects dir.
func writeChat(t *testing.T, home, cwd, sid string, lines ...string) string {
	t.Helper()
	p := filepath.Join(home, ".qwen", "projects", strings.ReplaceAll(cwd, "/", "-"), "chats", sid+".jsonl")
	discovertest.WriteLines(t, p, lines...)
	return p
}

var tsPtr = discovertest.TimePtr
