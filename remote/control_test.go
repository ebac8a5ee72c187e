package remote

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// While agentctl's own socket for a host is there, the host's calls share it
// without asking ssh again (ssh -G, a process per host and command); without
// it, an ssh that cannot say (here: no such program) gets no options.
func TestControlOptionsReuseOwnSocket(t *testing.T) {
	dir, err := ControlDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{SSH: []string{filepath.Join(t.TempDir(), "no-ssh-here")}, ControlDir: dir}
	if o := r.controlOptions(context.Background(), "gpu"); o != nil {
		t.Fatalf("no socket, ssh -G fails: options %q, want none", o)
	}
	sock := filepath.Join(dir, SocketName(r.SSH, "build"))
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := []string{"-o", "ControlMaster=auto", "-o", "ControlPersist=600", "-o", "ControlPath=" + sock}
	if d := cmp.Diff(want, r.controlOptions(context.Background(), "build")); d != "" {
		t.Errorf("own socket there: options (-want +got):\n%s", d)
	}
	if SocketName([]string{"ssh"}, "build") == SocketName([]string{"ssh", "-F", "other"}, "build") {
		t.Errorf("another ssh command line must get another socket")
	}
}
