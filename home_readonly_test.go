package main

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
// never DIR/.agentctl), and over a read-only DIR they warn about nothing there.
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
				if os.Geteuid() == 0 {
					t.Log("running as root: modes do not stop writes, so only the byte-for-byte check binds")
				}
				if err := os.Chmod(home, 0o555); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Chmod(home, 0o755) })
			}
			caller := t.TempDir()
			// No AGENTCTL_HOME: the state dir is the caller's ~/.agentctl.
			env := map[string]string{"HOME": caller, "AGENTCTL_HOME": "", "NO_COLOR": "1", "TZ": "UTC"}
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
