package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Another user's state dir, or one anyone may write, runs nothing as the
// caller (issue 34 item 1, like git's safe.directory): an expired fuse's
// script stays unfired on a read, which warns once; sweep, launch and notify
// refuse; doctor names the file and the safe fix (never chown to the caller)
// and does not run the adapter binary the config names.
func TestUntrustedStateDirRunsNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		root   bool // needs root to chown to another uid
		spoil  func(t *testing.T, state string)
		reason string // in the warning
		fix    string // doctor's fix
	}{
		{"world-writable state dir", false, func(t *testing.T, state string) { os.Chmod(state, 0o777) },
			"is writable by others (mode 0777)", "chmod 700 "},
		{"group-writable fuses.json", false, func(t *testing.T, state string) { os.Chmod(filepath.Join(state, "fuses.json"), 0o660) },
			"is writable by others (mode 0660)", "chmod 600 "},
		{"state dir of another user", true, func(t *testing.T, state string) { trustMust(t, os.Chown(state, 65534, 65534)) },
			"is owned by uid 65534", "set AGENTCTL_HOME to a directory of your own"},
		{"fuses.json of another user", true, func(t *testing.T, state string) {
			trustMust(t, os.Chown(filepath.Join(state, "fuses.json"), 65534, 65534))
		},
			"is owned by uid 65534", "replace it with a copy of your own"},
		{"config.json of another user", true, func(t *testing.T, state string) {
			trustMust(t, os.Chown(filepath.Join(state, "config.json"), 65534, 65534))
		},
			"is owned by uid 65534", "replace it with a copy of your own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("needs root to chown to another uid")
			}
			c := newCLI(t)
			proj := mkdir(t, "proj")
			fired := filepath.Join(t.TempDir(), "fired")
			ranBin := filepath.Join(t.TempDir(), "ran-binary")
			c.ok("fuse", "set", proj, "--ttl", "1s", "--script", "touch "+fired)
			bin := filepath.Join(t.TempDir(), "codex")
			trustMust(t, os.WriteFile(bin, []byte("#!/bin/sh\ntouch "+ranBin+"\necho codex-cli 0.1.0\n"), 0o755))
			trustMust(t, os.WriteFile(filepath.Join(c.state, "config.json"), []byte(`{"schema":1,"adapters":{"codex":{"binary":"`+bin+`"}}}`), 0o600))
			tc.spoil(t, c.state)
			time.Sleep(1100 * time.Millisecond) // the fuse is due

			_, errOut, code := c.run("list", "-a")
			if code != 0 || strings.Count(errOut, tc.reason) != 1 || !strings.Contains(errOut, "reading it only") {
				t.Errorf("list over an untrusted state dir: exit %d, stderr %q; want 0 and one warning saying %q", code, errOut, tc.reason)
			}
			_, errOut, code = c.run("sweep")
			if code != 1 || !strings.Contains(errOut, "sweep refused") || !strings.Contains(errOut, tc.reason) {
				t.Errorf("sweep: exit %d, stderr %q; want 1, refused", code, errOut)
			}
			_, errOut, code = c.run("launch", "--cwd", proj, "-p", "hi")
			if code != 1 || !strings.Contains(errOut, "launch refused") {
				t.Errorf("launch: exit %d, stderr %q; want 1, refused", code, errOut)
			}
			out, errOut, code := c.run("doctor", "--adapter", "codex")
			if code != 1 || !strings.Contains(out+errOut, tc.reason) || !strings.Contains(out+errOut, tc.fix) || strings.Contains(out+errOut, "chown") {
				t.Errorf("doctor: exit %d\n%s%s\nwant 1, naming %q with the fix %q, never chown", code, out, errOut, tc.reason, tc.fix)
			}
			time.Sleep(300 * time.Millisecond) // a detached fuse firer would have run by now
			for _, p := range []string{fired, ranBin} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s ran from an untrusted state dir", filepath.Base(p))
				}
			}
		})
	}
}

func trustMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
