package meta

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The trust rule (issue 34 item 1): a state dir, or a file naming what to run,
// that is not the caller's or that others may write is not trusted. As root
// here, "another user" is uid 65534.
func TestStoreTrusted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown to another uid")
	}
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dir string) string // returns the state dir
		want    string                                // "" trusted, else the offending path's base and a reason fragment
	}{
		{"own 0700 dir and 0600 files", func(t *testing.T, d string) string { trustWrite(t, d, "fuses.json", 0o600); return d }, ""},
		{"missing dir", func(t *testing.T, d string) string { return filepath.Join(d, "none") }, ""},
		{"world-writable dir", func(t *testing.T, d string) string { trustChmod(t, d, 0o777); return d }, "state writable by others"},
		{"group-writable dir", func(t *testing.T, d string) string { trustChmod(t, d, 0o770); return d }, "state writable by others"},
		{"dir of another user", func(t *testing.T, d string) string { trustChown(t, d); return d }, "state owned by uid 65534"},
		{"link to another user's dir", func(t *testing.T, d string) string {
			trustChown(t, d)
			l := filepath.Join(t.TempDir(), "link")
			os.Symlink(d, l)
			return l
		}, "link owned by uid 65534"},
		{"writable fuses.json", func(t *testing.T, d string) string { trustWrite(t, d, "fuses.json", 0o666); return d }, "fuses.json writable by others"},
		{"config.json of another user", func(t *testing.T, d string) string { trustChown(t, trustWrite(t, d, ConfigFile, 0o600)); return d }, "config.json owned by uid 65534"},
		{"launches.json of another user", func(t *testing.T, d string) string { trustChown(t, trustWrite(t, d, LaunchesFile, 0o600)); return d }, "launches.json owned by uid 65534"},
		{"outbox.json group-writable", func(t *testing.T, d string) string { trustWrite(t, d, OutboxFile, 0o620); return d }, "outbox.json writable by others"},
		{"a file that names nothing to run", func(t *testing.T, d string) string { trustWrite(t, d, "notify.json", 0o666); return d }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			err := NewStore(tc.prepare(t, dir)).Trusted()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Trusted: %v, want nil", err)
				}
				return
			}
			var ue *UntrustedError
			if !errors.As(err, &ue) {
				t.Fatalf("Trusted: %v, want an *UntrustedError", err)
			}
			base, frag, _ := strings.Cut(tc.want, " ")
			if filepath.Base(ue.Path) != base || !strings.Contains(ue.Reason, frag) {
				t.Errorf("Trusted: %v; want %s %q", err, base, frag)
			}
			if strings.Contains(ue.Fix, "chown") {
				t.Errorf("the fix adopts another user's file: %q", ue.Fix)
			}
		})
	}
}

func trustWrite(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(`{"schema":1}`), mode); err != nil {
		t.Fatal(err)
	}
	trustChmod(t, p, mode)
	return p
}

func trustChmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func trustChown(t *testing.T, p string) {
	t.Helper()
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}
