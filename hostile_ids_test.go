package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostilePi writes a Pi session under home (a copy of a recorded one) with the
// id and cwd given, in a file whose name says nothing of its id: its header
// alone names the session, as a renamed or planted file would.
func hostilePi(t *testing.T, home, name, id, cwd string) {
	t.Helper()
	const piID = "01a1faf0-7eef-715d-8e3d-80e07b008804"
	dir := filepath.Join(home, ".pi/agent/sessions/--home-dev-api-server--")
	b, err := os.ReadFile(filepath.Join(dir, "2026-11-20T21-50-27-567Z_"+piID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	jid, _ := json.Marshal(id)
	jcwd, _ := json.Marshal(cwd)
	s := strings.Replace(string(b), `"id":"`+piID+`"`, `"id":`+string(jid), 1)
	s = strings.Replace(s, `"cwd":"/home/dev/api-server"`, `"cwd":`+string(jcwd), 1)
	if s == string(b) {
		t.Fatal("premise: the fixture's header changed")
	}
	p := filepath.Join(dir, "2026-11-20T21-50-27-567Z_"+name+".jsonl")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Tab completion offers only ids a shell reads back as themselves: a $(…) or
// `…` in an id would run when the shell expands the candidates or the line.
// Descriptions are one line, escaped.
func TestCompleteOffersOnlyShellSafeIDs(t *testing.T) {
	env := map[string]string{"AGENTCTL_HOME": t.TempDir(), "NO_COLOR": "1", "TZ": "UTC"}
	home := hostileHome(t)
	hostilePi(t, home, "dollar", "01a1fabc-$(touch pwned)", "/home/dev/api-server")
	hostilePi(t, home, "tick", "01a1fabc-`touch pwned`", "/home/dev/api-server")
	hostilePi(t, home, "space", "01a1fabc-a b", "/home/dev/api-server")
	hostilePi(t, home, "safe", "01a1fabc-0000-4000-8000-000000000001", "/srv/x\n01a1fabc-forged\t\x1b[2J")
	out, errOut, code := runCLI(t, env, "--home", home, "__complete", "--", "peek", "01a1fabc")
	if code != 0 {
		t.Fatalf("__complete: exit %d: %s", code, errOut)
	}
	id, desc, _ := strings.Cut(out, "\t")
	if id != "01a1fabc-0000-4000-8000-000000000001" || !strings.HasPrefix(desc, "pi ") ||
		!strings.HasSuffix(desc, " /srv/x\\n01a1fabc-forged\\t\\x1b[2J\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("__complete -- peek 01a1fabc: want only the safe id, its description escaped: %q", out)
	}
}

// resume --print-command prints a line to paste into a shell: a start
// directory with escape sequences is quoted as $'…' with \xNN escapes, so no
// control byte reaches the terminal and the shell still reads the same path.
func TestResumePrintCommandQuotesControls(t *testing.T) {
	bash := needShell(t, "bash")
	env := map[string]string{"AGENTCTL_HOME": t.TempDir(), "NO_COLOR": "1", "TZ": "UTC"}
	t.Setenv("AGENTCTL_PI_BIN", "/bin/true") // the launcher reads the process environment
	home := hostileHome(t)
	dir := filepath.Join(t.TempDir(), "a\x1b]0;pwned\x07b'c\u202e\n")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const id = "01a1fabc-0000-4000-8000-000000000002"
	hostilePi(t, home, id, id, dir)
	out, errOut, code := runCLI(t, env, "--home", home, "resume", "--print-command", id, "-")
	if code != 0 {
		t.Fatalf("resume --print-command: exit %d: %s", code, errOut)
	}
	assertNoRawControls(t, "resume --print-command", strings.TrimSuffix(out, "\n"))
	cd, _, ok := strings.Cut(out, " && ")
	if !ok {
		t.Fatalf("resume --print-command: %q", out)
	}
	got, err := exec.Command(bash, "--norc", "-c", cd+` && printf %s "$PWD"`).Output()
	if err != nil {
		t.Fatalf("%s: %v", cd, err)
	}
	if string(got) != dir {
		t.Errorf("%s: went to %q, want %q", cd, got, dir)
	}
}
