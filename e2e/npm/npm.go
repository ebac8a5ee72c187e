// Package npm installs the pinned agent CLIs the end-to-end tests drive.
//
// Each sub-directory here is one tiny npm project (package.json plus the
// package-lock.json npm generated for it). npm holds only one version of a package
// per tree, so each pinned version of an agent gets a directory of its own: the newest
// pin of Codex and Pi next to the older one in agents, two Claude Code versions. The files are
// embedded, copied into a cache directory outside the repository and installed there
// with `npm ci`, so a checkout never grows a node_modules and every run, local or CI,
// gets exactly the locked versions.
//
// An install is reused while a stamp file holds the hash of its lock file; a flock
// per directory makes parallel test binaries install it once.
package npm

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

//go:embed */package.json */package-lock.json
var projects embed.FS

// Project names (directories of this package).
const (
	Claude197 = "claude-2.1.197" // the oldest Claude Code pin
	Claude332 = "claude-2.1.332" // the newest Claude Code pin
	Agents    = "agents"         // codex 0.169.0 and pi 0.73.1 (the older pins), opencode, just
	Codex171  = "codex-0.171.0"  // the newest Codex pin
	Pi16      = "pi-1.6.0"       // the newest Pi pin, @earendil-works/pi-coding-agent; runs on Node24
	Node24    = "node24"         // Node >= 24.16 for the OpenClaw gateway, >= 22.19 for Pi 1.6
	OpenClaw  = "openclaw"       // installed and run with Node24 first on PATH
	CCUsage   = "ccusage"        // an independent reader of Claude transcripts: the token oracle
	NewAgents = "newagents"      // gemini, qwen, copilot; qwen runs on Node24
	CCUsage20 = "ccusage20"      // ccusage 20 (native): the token oracle for gemini, qwen, copilot
)

// Projects lists every project, in a sensible install order.
func Projects() []string {
	return []string{Claude197, Claude332, Agents, Codex171, Node24, Pi16, OpenClaw, CCUsage, NewAgents, CCUsage20}
}

// needs names the project whose node must run another project's install scripts
// (openclaw's preinstall refuses Node < 24.16) or the project itself (Pi 1.6 wants
// Node >= 22.19, which the machine's node need not be).
var needs = map[string]string{OpenClaw: Node24, Pi16: Node24}

// CacheDir is where installs live: $AGENTCTL_E2E_CACHE, else
// $XDG_CACHE_HOME/agentctl-e2e, else ~/.cache/agentctl-e2e. It is outside the
// repository on purpose: hundreds of MB that CI keeps between runs.
func CacheDir(getenv func(string) string) (string, error) {
	if d := getenv("AGENTCTL_E2E_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "agentctl-e2e"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("cannot place the e2e tool cache: set AGENTCTL_E2E_CACHE or HOME")
	}
	return filepath.Join(home, ".cache", "agentctl-e2e"), nil
}

// Installer installs projects under Cache with the npm found on PATH.
type Installer struct {
	Cache string
	// Log receives npm's output and one line per install with its duration.
	Log io.Writer
	// Environ is the environment npm runs with (the machine's npm config, proxies
	// and HOME must reach it); nil means os.Environ().
	Environ []string
}

// Dir returns where a project is (or will be) installed.
func (in *Installer) Dir(name string) string { return filepath.Join(in.Cache, name) }

// Hash identifies a project's pinned content; the stamp file records it.
func Hash(name string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := projects.ReadFile(name + "/" + f)
		if err != nil {
			return "", fmt.Errorf("unknown e2e npm project %q: %w", name, err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

const stampName = ".agentctl-e2e-stamp"

// Installed reports whether name is installed with the current lock file.
func (in *Installer) Installed(name string) bool {
	want, err := Hash(name)
	if err != nil {
		return false
	}
	got, err := os.ReadFile(filepath.Join(in.Dir(name), stampName))
	return err == nil && strings.TrimSpace(string(got)) == want
}

// Ensure installs name (and what its install needs) unless the stamp shows the
// current lock file is already installed. It returns the project directory.
func (in *Installer) Ensure(ctx context.Context, name string) (string, error) {
	if dep, ok := needs[name]; ok {
		if _, err := in.Ensure(ctx, dep); err != nil {
			return "", err
		}
	}
	dir := in.Dir(name)
	if in.Installed(name) {
		return dir, nil
	}
	if err := os.MkdirAll(in.Cache, 0o755); err != nil {
		return "", fmt.Errorf("create e2e cache %s: %w (set AGENTCTL_E2E_CACHE to a writable directory)", in.Cache, err)
	}
	// One lock per project: a test binary that needs only Claude does not wait for
	// OpenClaw's install, and two binaries needing Claude install it once.
	lock := flock.New(filepath.Join(in.Cache, name+".lock"))
	if _, err := lock.TryLockContext(ctx, 200*time.Millisecond); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Path(), err)
	}
	defer lock.Unlock()
	if in.Installed(name) { // someone else installed it while we waited
		return dir, nil
	}
	return dir, in.install(ctx, name)
}

func (in *Installer) install(ctx context.Context, name string) error {
	dir := in.Dir(name)
	npmBin, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("npm not found on PATH: install Node.js and npm to run the e2e tests")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	os.Remove(filepath.Join(dir, stampName))
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := projects.ReadFile(name + "/" + f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	env := in.Environ
	if env == nil {
		env = os.Environ()
	}
	if dep, ok := needs[name]; ok {
		env = withPathFirst(env, filepath.Join(in.Dir(dep), "node_modules", ".bin"))
	}
	start := time.Now()
	// `npm install` with the lock file present installs the locked versions. Not
	// `npm ci`: it rejects a lock file that lacks an optional platform package, and a
	// registry mirror that carries only some platforms produces exactly such locks.
	// Optional dependencies stay on: they carry the native binaries (Claude, Codex,
	// OpenCode, just). --no-save keeps package.json and the lock file as committed.
	cmd := exec.CommandContext(ctx, npmBin, "install", "--no-save", "--no-audit", "--no-fund",
		"--include=optional", "--omit-lockfile-registry-resolved",
		"--cache", filepath.Join(in.Cache, "npm-cache"))
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = in.logw(), in.logw()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm ci in %s: %w (see the npm output above; delete %s to start over)", dir, err, dir)
	}
	h, _ := Hash(name)
	if err := os.WriteFile(filepath.Join(dir, stampName), []byte(h+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(in.logw(), "e2e: installed %s in %s (%s)\n", name, dir, time.Since(start).Round(100*time.Millisecond))
	return nil
}

func (in *Installer) logw() io.Writer {
	if in.Log == nil {
		return io.Discard
	}
	return in.Log
}

// withPathFirst returns env with dir prepended to PATH.
func withPathFirst(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			kv = "PATH=" + dir + string(os.PathListSeparator) + v
			found = true
		}
		out = append(out, kv)
	}
	if !found {
		out = append(out, "PATH="+dir)
	}
	return out
}
