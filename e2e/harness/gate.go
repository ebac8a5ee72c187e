// Package harness runs the real agent CLIs, and agentctl itself, for end-to-end
// tests: pinned installs (e2e/npm), fresh homes, environments built from scratch,
// prompts on stdin from files, and process groups that die with the test.
package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/npm"
)

// EnvRequire is the variable that turns missing tools from a skip into a failure
// (CI sets AGENTCTL_E2E=require so a broken machine cannot pass by skipping).
const EnvRequire = "AGENTCTL_E2E"

// Require skips the test when it cannot run here: -short, or no node/npm on PATH.
// With AGENTCTL_E2E=require missing tools fail the test instead.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped with -short")
	}
	var missing []string
	for _, b := range []string{"node", "npm"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("end-to-end test needs %s on PATH to install the pinned agent CLIs", strings.Join(missing, " and "))
	if os.Getenv(EnvRequire) == "require" {
		t.Fatalf("%s (%s=require)", msg, EnvRequire)
	}
	t.Skipf("%s; install Node.js, or set %s=require to make this a failure", msg, EnvRequire)
}

// Tool returns the path of a pinned tool (see npm.Tools), installing its project
// into the cache on first use. Install output goes to a log file that is shown
// only when the install fails.
func Tool(t testing.TB, name string) string {
	t.Helper()
	Require(t)
	cache, err := npm.CacheDir(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	in := &npm.Installer{Cache: cache, Log: &log}
	// The first install of everything takes about a minute; leave room.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	p, err := in.Tool(ctx, name)
	if err != nil {
		t.Fatalf("install %s: %v\n%s", name, err, Tail(log.String(), 40))
	}
	if log.Len() > 0 {
		t.Logf("installed %s for e2e tests in %s (cache %s)", name, time.Since(start).Round(100*time.Millisecond), cache)
	}
	return p
}

// tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
