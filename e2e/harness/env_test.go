package harness

import (
	"strings"
	"testing"
	"time"
)

// Agents never see the developer's environment: only what BaseEnv and the test
// put there (plus the cleanup token).
func TestStartDoesNotInheritEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "developer-secret")
	t.Setenv("XDG_DATA_HOME", "/developer/data")
	dir := t.TempDir()
	p := Start(t, Spec{Path: "/usr/bin/env", Dir: dir, Env: BaseEnv(dir, dir).With("EXTRA", "1"), Stdin: "ignored"})
	if code := p.Wait(t, 10*time.Second); code != 0 {
		t.Fatalf("env exited %d", code)
	}
	out := p.Stdout()
	for _, bad := range []string{"developer-secret", "/developer/data"} {
		if strings.Contains(out, bad) {
			t.Errorf("child inherited %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"HOME=" + dir, "EXTRA=1", "NO_PROXY=127.0.0.1", tokenVar + "="} {
		if !strings.Contains(out, want) {
			t.Errorf("child env lacks %q:\n%s", want, out)
		}
	}
}

func TestStdinIsAFile(t *testing.T) {
	dir := t.TempDir()
	p := Start(t, Spec{Path: "/bin/sh", Args: []string{"-c", "readlink /proc/self/fd/0; cat"}, Dir: dir,
		Env: BaseEnv(dir, dir), Stdin: "the prompt\nline 2"})
	p.Wait(t, 10*time.Second)
	out := p.Stdout()
	if !strings.HasSuffix(out, "the prompt\nline 2") || strings.Contains(out, "pipe:") {
		t.Errorf("stdin should be a regular file holding the prompt verbatim; got:\n%s", out)
	}
}
