package remote

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHasControlPath(t *testing.T) {
	for _, c := range []struct {
		out  string
		want bool
	}{
		{"user me\nhostname 127.0.0.1\ncontrolmaster false\ncontrolpersist no\n", false},
		{"controlmaster auto\ncontrolpath /home/me/.ssh/cm-0744300aad6f\n", true},
		{"ControlPath none\n", false},
		{"", false},
	} {
		if got := HasControlPath(c.out); got != c.want {
			t.Errorf("HasControlPath(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}

// The socket directory is 0700 and this user's; a long state dir moves it
// under /tmp (a socket path is short); a loose one is refused.
func TestControlDir(t *testing.T) {
	state := t.TempDir()
	dir, err := ControlDir(state)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 || len(dir) > maxSocketDir {
		t.Fatalf("ControlDir(%s) = %s: %v %v", state, dir, fi.Mode(), err)
	}
	long := filepath.Join(state, strings.Repeat("x", 80))
	dir2, err := ControlDir(long)
	if err != nil || strings.HasPrefix(dir2, state) || len(dir2) > maxSocketDir {
		t.Errorf("ControlDir(long) = %q, %v; want a short directory elsewhere", dir2, err)
	}
	os.RemoveAll(dir2)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ControlDir(state); err == nil || !strings.Contains(err.Error(), "mode 755") {
		t.Errorf("ControlDir over a 0755 directory: %v; want refused", err)
	}
}
