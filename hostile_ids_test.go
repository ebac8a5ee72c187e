package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/remote"
	"github.com/agentctl/agentctl/remote/fleet"
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

// list -q prints ids one per line for scripts (`list -q | xargs agentctl
// stop`): an id with a newline must not put another session's id on a line
// of its own. Such an id is left out, with a warning (and --strict fails).
func TestListQuietLeavesOutControlIDs(t *testing.T) {
	env := map[string]string{"AGENTCTL_HOME": t.TempDir(), "NO_COLOR": "1", "TZ": "UTC"}
	home := hostileHome(t)
	const claudeID = "7e3394de-1ab5-4927-b7d8-0b4531418047"
	hostilePi(t, home, "forged", "x\n"+claudeID, "/home/dev/api-server")
	hostilePi(t, home, "escape", "01a1fabc-\x1b]0;pwned\x07", "/home/dev/api-server")
	out, errOut, code := runCLI(t, env, "--home", home, "--adapter", "pi", "list", "-a", "--since", "3650d", "-q")
	if code != 0 {
		t.Fatalf("list -q: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		if l == claudeID || !strings.HasPrefix(l, "01a1fa") {
			t.Errorf("list -q --adapter pi printed the line %q:\n%s", l, out)
		}
	}
	if !strings.Contains(out, "01a1faf0-7eef-715d-8e3d-80e07b008804\n") {
		t.Errorf("list -q lost a clean session:\n%s", out)
	}
	assertNoRawControls(t, "list -q", out)
	assertNoRawControls(t, "list -q stderr", errOut)
	for _, w := range []string{`pi session x\n` + claudeID + ` left out: its id has control characters`, `pi session 01a1fabc-\x1b]0;pwned\x07 left out`} {
		if !strings.Contains(errOut, w) {
			t.Errorf("no warning %q:\n%s", w, errOut)
		}
	}
	if _, _, code := runCLI(t, env, "--home", home, "--adapter", "pi", "list", "-a", "--since", "3650d", "-q", "--strict"); code != 1 {
		t.Errorf("list -q --strict with an id left out: exit %d, want 1", code)
	}

	// Across hosts: each host:id on its own line, the same rule.
	outs := []fleet.Answer{{Host: remote.Host{Name: "gpu"}, Out: []byte(`[{"id":"g1","adapter":"codex","status":"running"},{"id":"x\ngpu:` + claudeID + `","adapter":"codex","status":"running"}]`)}}
	var o, e strings.Builder
	failed := false
	if err := printRemoteList(streamsHost(&o, &e), listAcrossOptions{quiet: true}, outs, &failed); err != nil {
		t.Fatal(err)
	}
	if o.String() != "gpu:g1\n" || !failed || !strings.Contains(e.String(), `gpu: codex session x\ngpu:`+claudeID+` left out`) {
		t.Errorf("list -q across hosts: failed=%v %q\n%s", failed, o.String(), e.String())
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
