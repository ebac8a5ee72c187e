package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needShell finds a shell for the completion tests: missing, it is a skip — or a
// failure when AGENTCTL_E2E=require (CI installs bash, zsh and fish).
func needShell(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("AGENTCTL_E2E") == "require" {
			t.Fatalf("%s not on PATH (AGENTCTL_E2E=require); install Debian's %s package", name, name)
		}
		t.Skipf("%s not on PATH; install it, or set AGENTCTL_E2E=require to make this a failure", name)
	}
	return p
}

// The scripts `agentctl completion SHELL` prints, loaded into the real shell and
// asked to complete: command names with their descriptions, then flags.
func TestCompletionInRealShells(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real shells")
	}
	home := t.TempDir()
	script := func(t *testing.T, shell string) string {
		out, err := exec.Command("agentctl", "completion", shell).Output()
		if err != nil {
			t.Fatalf("agentctl completion %s: %v", shell, err)
		}
		p := filepath.Join(t.TempDir(), "agentctl."+shell)
		if err := os.WriteFile(p, out, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(t *testing.T, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "AGENTCTL_HOME="+filepath.Join(home, "state"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	want := func(t *testing.T, got string, parts ...string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(got, p) {
				t.Errorf("completion output lacks %q:\n%s", p, got)
			}
		}
	}
	t.Run("fish", func(t *testing.T) {
		fish := needShell(t, "fish")
		f := script(t, "fish")
		want(t, run(t, fish, "--no-config", "-c", "source "+f+"; complete -C 'agentctl li'"), "list\tlist agent sessions")
		want(t, run(t, fish, "--no-config", "-c", "source "+f+"; complete -C 'agentctl list --st'"), "--status", "--strict")
	})
	t.Run("zsh", func(t *testing.T) {
		zsh := needShell(t, "zsh")
		f := script(t, "zsh")
		run(t, zsh, "-n", f)
		// The completion system's own functions stubbed to print what the
		// script hands them.
		stub := `compdef(){}; _describe(){ print -l -- "${cands[@]}" }; _files(){ print FILES }; source ` + f + `; `
		want(t, run(t, zsh, "-f", "-c", stub+`words=(agentctl li); CURRENT=2; _agentctl`), "list:list agent sessions")
		want(t, run(t, zsh, "-f", "-c", stub+`words=(agentctl list --st); CURRENT=3; _agentctl`), "--status", "--strict")
	})
	t.Run("bash", func(t *testing.T) {
		bash := needShell(t, "bash")
		f := script(t, "bash")
		got := run(t, bash, "--norc", "-c", `source `+f+`; COMP_WORDS=(agentctl list --st); COMP_CWORD=2; COMP_LINE="agentctl list --st"; COMP_POINT=${#COMP_LINE}; `+
			`fn=$(complete -p agentctl | sed -E 's/.*-F ([^ ]+).*/\1/'); $fn agentctl --st list; printf '%s\n' "${COMPREPLY[@]}"`)
		want(t, got, "--status", "--strict")
	})
}
