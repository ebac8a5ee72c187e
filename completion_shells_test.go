package main

import (
	"fmt"
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

// A session id is data, never shell text: on Tab, no shell runs a $(…) or `…`
// in an id, whether __complete offers it (a stub agentctl that does) or not
// (the real one, over a home with such ids, offers only safe ids).
func TestCompletionHostileIDsInRealShells(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real shells")
	}
	home := hostileHome(t)
	hostilePi(t, home, "dollar", "01a1fabc-$(touch pwned-dollar)", "/home/dev/api-server")
	hostilePi(t, home, "tick", "01a1fabc-`touch pwned-tick`", "/home/dev/api-server")
	hostilePi(t, home, "safe", "01a1fabc-0000-4000-8000-000000000001", "/home/dev/api-server")
	// The stub prints hostile candidates as a compromised or older agentctl
	// would; the scripts must not expand them either.
	stub := t.TempDir()
	if err := os.WriteFile(filepath.Join(stub, "agentctl"), []byte("#!/bin/sh\n"+
		`printf '%s\tpi running\n' '01a1fabc-$(touch pwned-stub)' '01a1fabc-`+"`touch pwned-stubtick`"+`' '01a1fabc-safe'`+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
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
	for _, viaStub := range []bool{false, true} {
		run := func(t *testing.T, name string, args ...string) string {
			t.Helper()
			dir := t.TempDir()
			cmd := exec.Command(name, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "HOME="+home, "AGENTCTL_HOME="+filepath.Join(t.TempDir(), "state"))
			if viaStub {
				cmd.Env = append(cmd.Env, "PATH="+stub+string(os.PathListSeparator)+os.Getenv("PATH"))
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s %q: %v\n%s", name, args, err, out)
			}
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				t.Errorf("completing ran a command from an id: %s created %s\n%s", name, ents[0].Name(), out)
			}
			if !strings.Contains(string(out), "01a1fabc-") {
				t.Errorf("%s: no candidate offered:\n%s", name, out)
			}
			if !viaStub && (strings.Contains(string(out), "$(") || strings.Contains(string(out), "`")) {
				t.Errorf("%s: a hostile id was offered:\n%s", name, out)
			}
			return string(out)
		}
		t.Run(fmt.Sprintf("bash/stub=%v", viaStub), func(t *testing.T) {
			bash := needShell(t, "bash")
			got := run(t, bash, "--norc", "-c", `source `+script(t, "bash")+`; COMP_WORDS=(agentctl peek 01a1fabc); COMP_CWORD=2; `+
				`_agentctl agentctl 01a1fabc peek; printf '%s\n' "${COMPREPLY[@]}"`)
			// What bash would insert reads back as the candidate itself.
			if viaStub && !strings.Contains(got, `01a1fabc-\$\(touch\ pwned-stub\)`) {
				t.Errorf("bash: the candidate is not quoted for the command line:\n%s", got)
			}
		})
		t.Run(fmt.Sprintf("zsh/stub=%v", viaStub), func(t *testing.T) {
			zsh := needShell(t, "zsh")
			stubs := `compdef(){}; _describe(){ print -l -- "${cands[@]}" }; _files(){ print FILES }; source ` + script(t, "zsh") + `; `
			run(t, zsh, "-f", "-c", stubs+`words=(agentctl peek 01a1fabc); CURRENT=3; _agentctl`)
		})
		t.Run(fmt.Sprintf("fish/stub=%v", viaStub), func(t *testing.T) {
			fish := needShell(t, "fish")
			run(t, fish, "--no-config", "-c", "source "+script(t, "fish")+"; complete -C 'agentctl peek 01a1fabc'")
		})
	}
}
