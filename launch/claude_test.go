package launch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
)

func fakeBin(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("testdata/fake-claude")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func planReq(t *testing.T) *Request {
	return &Request{Kind: KindLaunch, Cwd: "/w", Environ: []string{"AGENTCTL_CLAUDE_BIN=" + fakeBin(t), "HOME=" + t.TempDir(), "PATH=/usr/bin"}, Euid: 1000}
}

// Golden argv (docs/agents/claude-code.md §6.3, §7): never the prompt, never --continue, never
// --session-id together with --resume.
func TestClaudePlanArgv(t *testing.T) {
	r := planReq(t)
	r.Model, r.PermissionMode, r.AppendSystemPrompt = "claude-sonnet-4-5", "acceptEdits", "be terse"
	p, err := Claude{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-p", "--output-format", "stream-json", "--verbose", "--session-id", p.SessionID,
		"--model", "claude-sonnet-4-5", "--permission-mode", "acceptEdits", "--append-system-prompt", "be terse"}
	if diff := cmp.Diff(want, p.Args); diff != "" {
		t.Errorf("launch argv (-want +got):\n%s", diff)
	}
	if len(p.SessionID) != 36 || p.SessionID[14] != '4' || strings.ToLower(p.SessionID) != p.SessionID {
		t.Errorf("session id %q is not a lowercase UUIDv4", p.SessionID)
	}
	if p.Bin != fakeBin(t) {
		t.Errorf("bin = %s", p.Bin)
	}

	r = planReq(t)
	r.Kind, r.SessionID = KindResume, "491a4bda-0000-4000-8000-000000000000"
	p, err = Claude{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"-p", "--output-format", "stream-json", "--verbose", "--resume", r.SessionID}
	if diff := cmp.Diff(want, p.Args); diff != "" {
		t.Errorf("resume argv (-want +got):\n%s", diff)
	}
	for _, a := range p.Args {
		if a == "--continue" || a == "--session-id" {
			t.Errorf("resume argv contains %s", a)
		}
	}
}

func TestClaudeFreshIDAvoidsExistingTranscripts(t *testing.T) {
	root := t.TempDir()
	taken := NewUUID4()
	os.MkdirAll(filepath.Join(root, "projects", "-w"), 0o700)
	os.WriteFile(filepath.Join(root, "projects", "-w", taken+".jsonl"), nil, 0o600)
	ids := []string{taken, "fresh"}
	got := freshClaudeID(root, func() string { id := ids[0]; ids = ids[1:]; return id })
	if got != "fresh" {
		t.Errorf("freshClaudeID = %q; it must skip an id whose transcript exists", got)
	}
}

// Env policy (docs/agents/claude-code.md §6.2): strip what a parent Claude sets, keep ANTHROPIC_BASE_URL
// and the credentials, config env, then --env last; only names are recorded.
func TestClaudeEnvPolicy(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/home/dev", "CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli", "CLAUDE_CODE_SESSION_ID=x",
		"CLAUDE_PID=4", "CLAUDE_CODE_SSE_PORT=1", "ANTHROPIC_BASE_URL=http://127.0.0.1:9", "ANTHROPIC_API_KEY=sk-test",
		"CLAUDE_CONFIG_DIR=/cfg", "IS_SANDBOX=1", "KEEP=me"}
	e := ClaudeEnv(base, map[string]string{"FROM_CONFIG": "c", "KEEP": "config"}, "", []string{"KEEP=user", "NO_PROXY=a,b"})
	got := map[string]string{}
	for _, kv := range e.vars {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s set twice", k)
		}
		got[k] = v
	}
	for _, k := range []string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PID", "CLAUDE_CODE_SSE_PORT"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s was not stripped", k)
		}
	}
	for k, v := range map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "sk-test", "CLAUDE_CONFIG_DIR": "/cfg",
		"IS_SANDBOX": "1", "HOME": "/home/dev", "FROM_CONFIG": "c", "KEEP": "user", "NO_PROXY": "a,b"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	names := e.names()
	for _, n := range names {
		if strings.Contains(n, "=") {
			t.Errorf("recorded env name %q carries a value", n)
		}
	}
	if !contains(names, "CLAUDECODE") || !contains(names, "KEEP") || contains(names, "ANTHROPIC_API_KEY") {
		t.Errorf("changed names = %v", names)
	}
	if h := ClaudeEnv(base, nil, "/demo", nil); !contains(h.vars, "HOME=/demo") {
		t.Error("--home did not set the agent's HOME")
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Root guard (docs/agents/claude-code.md §6.2): as root, bypass needs IS_SANDBOX=1 — present already, or
// added because the user said --sandbox (or config); never silently.
func TestClaudeRootGuard(t *testing.T) {
	cases := []struct {
		name     string
		euid     int
		mode     string
		sandbox  bool
		cfg      bool
		env      string
		wantErr  bool
		wantSbox bool
	}{
		{"root bypass refused", 0, "bypassPermissions", false, false, "", true, false},
		{"root bypass --sandbox", 0, "bypassPermissions", true, false, "", false, true},
		{"root bypass config", 0, "bypassPermissions", false, true, "", false, true},
		{"root bypass IS_SANDBOX present", 0, "bypassPermissions", false, false, "IS_SANDBOX=1", false, true},
		{"root default mode", 0, "default", false, false, "", false, false},
		{"user bypass", 1000, "bypassPermissions", false, false, "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := planReq(t)
			r.Euid, r.PermissionMode, r.Sandbox = c.euid, c.mode, c.sandbox
			if c.env != "" {
				r.Environ = append(r.Environ, c.env)
			}
			if c.cfg {
				r.Config = &meta.Config{Adapters: map[string]meta.AdapterConfig{"claude-code": {IsSandbox: true}}}
			}
			p, err := Claude{}.Plan(r)
			if c.wantErr {
				var ie *InputError
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), "--sandbox") || !strings.Contains(err.Error(), "IS_SANDBOX=1") {
					t.Fatalf("err = %v, want an input error naming --sandbox and IS_SANDBOX=1", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := contains(p.Env, "IS_SANDBOX=1"); got != c.wantSbox {
				t.Errorf("IS_SANDBOX=1 in env = %v, want %v", got, c.wantSbox)
			}
		})
	}
}

func TestResolveClaude(t *testing.T) {
	bin := fakeBin(t)
	home := t.TempDir()
	notFound := func(string) (string, error) { return "", errors.New("not found") }
	r := &Request{Environ: []string{"HOME=" + home}, LookPath: notFound}
	if _, err := resolveClaude(r); err == nil || !strings.Contains(err.Error(), "AGENTCTL_CLAUDE_BIN") {
		t.Errorf("missing binary: %v", err)
	}
	r.Config = &meta.Config{Adapters: map[string]meta.AdapterConfig{"claude-code": {Binary: bin}}}
	if got, err := resolveClaude(r); err != nil || got != bin {
		t.Errorf("config binary: %q %v", got, err)
	}
	r.Environ = append(r.Environ, "AGENTCTL_CLAUDE_BIN=/nope/claude")
	if _, err := resolveClaude(r); err == nil || !strings.Contains(err.Error(), "/nope/claude") {
		t.Errorf("env wins, and a bad one is named: %v", err)
	}
	r = &Request{Environ: []string{"HOME=" + home}, LookPath: func(string) (string, error) { return "/usr/bin/claude", nil }}
	if got, _ := resolveClaude(r); got != "/usr/bin/claude" {
		t.Errorf("PATH: %q", got)
	}
	os.MkdirAll(filepath.Join(home, ".local/bin"), 0o755)
	os.Symlink(bin, filepath.Join(home, ".local/bin/claude"))
	r = &Request{Environ: []string{"HOME=" + home}, LookPath: notFound}
	if got, _ := resolveClaude(r); got != filepath.Join(home, ".local/bin/claude") {
		t.Errorf("fallback: %q (the path as found, not its realpath)", got)
	}
}

// Only the snake_case session_id of system/init confirms (pitfall #3).
func TestClaudeConfirm(t *testing.T) {
	c := Claude{}
	lines := func(s ...string) [][]byte {
		var out [][]byte
		for _, x := range s {
			out = append(out, []byte(x))
		}
		return out
	}
	if _, _, ok := c.Confirm(lines(`{"type":"system","subtype":"init","sessionId":"abc"}`, `not json`, `{"type":"system","subtype":"hook_started","session_id":"abc"}`), "abc"); ok {
		t.Error("confirmed from camelCase sessionId or a hook line")
	}
	sid, init, ok := c.Confirm(lines(`warning: something`, `{"model":"m1","type":"system","session_id":"abc","subtype":"init","claude_code_version":"2.1.197","apiKeySource":"ANTHROPIC_API_KEY"}`), "abc")
	if !ok || sid != "abc" || init.Model != "m1" || init.Version != "2.1.197" || init.APIKeySource != "ANTHROPIC_API_KEY" {
		t.Errorf("Confirm = %q %+v %v", sid, init, ok)
	}
	if sid, _, ok := c.Confirm(lines(`{"type":"system","subtype":"init","session_id":"other"}`), "abc"); !ok || sid != "other" {
		t.Errorf("an agent answering under another id: %q %v", sid, ok)
	}
}

func TestClaudeClassify(t *testing.T) {
	cases := []struct {
		name    string
		lines   []string
		code    int
		stopped bool
		class   string
	}{
		{"success", []string{`{"type":"result","subtype":"success","is_error":false}`}, 0, false, ""},
		{"root guard", []string{`--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons`}, 1, false, "root-guard"},
		{"unknown flag", []string{`error: unknown option '--bogus'`}, 1, false, "bad-flag"},
		{"requires verbose", []string{`Error: When using --print, --output-format=stream-json requires --verbose`}, 1, false, "bad-flag"},
		{"invalid id", []string{`Error: Invalid session ID. Must be a valid UUID.`}, 1, false, "bad-flag"},
		{"in use", []string{`Error: Session ID 1 is already in use.`}, 1, false, "session-in-use"},
		{"not found", []string{`No conversation found with session ID: x`}, 1, false, "not-found"},
		{"no prompt", []string{`Error: Input must be provided either through stdin or as a prompt argument when using --print`}, 1, false, "no-prompt"},
		{"nested", []string{`Error: Claude Code cannot be launched inside another Claude Code session.`}, 1, false, "nested"},
		{"auth 401", []string{`{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Failed to authenticate. API Error: 401"}`}, 1, false, "auth"},
		{"auth flag", []string{`{"type":"assistant","error":"authentication_failed"}`, `{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"result":"x"}`}, 1, false, "auth"},
		{"auth text", []string{`{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login"}`}, 1, false, "auth"},
		{"api 400", []string{`{"duration_api_ms":3,"type":"result","subtype":"success","is_error":true,"api_error_status":400,"result":"API Error: 400 bad"}`}, 1, false, "api-error"},
		{"quota 429", []string{`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429) · stub error 429 (scripted)"}`}, 1, false, "quota"},
		{"quota by text", []string{`{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"result":"Claude AI usage limit reached"}`}, 1, false, "quota"},
		{"api 529 overloaded", []string{`{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"result":"API Error: Repeated 529 Overloaded errors"}`}, 1, false, "api-error"},
		{"max turns", []string{`{"type":"result","subtype":"error_max_turns","is_error":true}`}, 1, false, "max-turns"},
		{"error subtype", []string{`{"type":"result","subtype":"error_during_execution","is_error":false}`}, 1, false, "error"},
		{"no result, not stopped", []string{`{"type":"system","subtype":"init","session_id":"a"}`}, 0, false, "crashed"},
		{"no result, stopped by agentctl", []string{`{"type":"system","subtype":"init","session_id":"a"}`}, 130, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ls [][]byte
			for _, l := range c.lines {
				ls = append(ls, []byte(l))
			}
			o := Claude{}.Classify(ls, c.code, c.stopped)
			if o.Class != c.class {
				t.Errorf("class = %q (%s), want %q", o.Class, o.Message, c.class)
			}
			if o.Class != "" && (o.Message == "" || strings.Contains(o.Message, "\n")) {
				t.Errorf("message %q: want one non-empty line", o.Message)
			}
		})
	}
}
