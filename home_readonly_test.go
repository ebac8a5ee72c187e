package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// snapshotTree is every entry under root (root included): its path, mode,
// mtime and, for a file, a hash of its contents.
func snapshotTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := fmt.Sprintf("%s %v %s", rel, fi.Mode(), fi.ModTime().UTC().Format("2006-01-02T15:04:05.000000000"))
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// `--home DIR` only reads DIR: the reading commands leave it byte for byte as
// it was (agentctl's state, the parse indexes among it, is the caller's own,
// never DIR/.agentctl), and over a read-only DIR they warn about nothing there
// (run as nobody when the test runs as root, whom modes do not stop).
func TestHomeFlagOnlyReads(t *testing.T) {
	fixtures, err := filepath.Abs("testdata/home")
	if err != nil {
		t.Fatal(err)
	}
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("read-only=%v", readOnly), func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "alice")
			if err := os.CopyFS(home, os.DirFS(fixtures)); err != nil {
				t.Fatal(err)
			}
			if readOnly {
				if err := os.Chmod(home, 0o555); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Chmod(home, 0o755) })
			}
			caller := t.TempDir()
			// No AGENTCTL_HOME: the state dir is the caller's ~/.agentctl.
			env := map[string]string{"HOME": caller, "AGENTCTL_HOME": "", "NO_COLOR": "1", "TZ": "UTC"}
			runCLI := runCLI
			if readOnly && os.Geteuid() == 0 {
				// Modes do not stop root: run agentctl as nobody instead.
				runCLI = runAsNobody(t, home, caller)
			}
			before := snapshotTree(t, home)
			for _, args := range [][]string{
				{"list"},
				{"list", "-a", "--since", "3650d", "--json"},
				{"status", "75098152-d081-42b6-b9b6-e7787f9a8747"},
				{"usage", "--since", "3650d"},
				{"metrics", "--since", "3650d"},
				{"doctor"},
			} {
				_, stderr, code := runCLI(t, env, append([]string{"--home", home}, args...)...)
				if code != 0 && args[0] != "doctor" { // doctor's exit says what is installed here
					t.Errorf("%s: exit %d\n%s", strings.Join(args, " "), code, stderr)
				}
				if strings.Contains(stderr, home) {
					t.Errorf("%s: a warning names a file under --home:\n%s", strings.Join(args, " "), stderr)
				}
			}
			if diff := cmp.Diff(before, snapshotTree(t, home)); diff != "" {
				t.Errorf("--home DIR changed under the reading commands (-before +after):\n%s", diff)
			}
			if _, err := os.Stat(filepath.Join(caller, ".agentctl")); err != nil {
				t.Errorf("the caller's state dir: %v", err)
			}
		})
	}
}

// runAsNobody is runCLI for a test running as root: the agentctl on PATH
// (TestMain's), copied where nobody may run it, run as nobody (uid 65534)
// with env alone, after opening the dirs of home and caller to it (caller
// writable: it is nobody's own home).
func runAsNobody(t *testing.T, home, caller string) func(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	bin, err := exec.LookPath("agentctl")
	if err != nil {
		t.Fatalf("agentctl not on PATH (TestMain sets it up): %v", err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	nb := filepath.Join(dir, "agentctl")
	if err := os.WriteFile(nb, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir), filepath.Dir(home), filepath.Dir(filepath.Dir(home)), filepath.Dir(caller)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(caller, 0o777); err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T, env map[string]string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(nb, args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		for k, v := range env {
			if v != "" {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return o.String(), e.String(), 0
		case errors.As(err, &ee):
			return o.String(), e.String(), ee.ExitCode()
		}
		t.Fatalf("agentctl %v as nobody: %v", args, err)
		return "", "", -1
	}
}
