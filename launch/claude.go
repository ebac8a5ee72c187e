package launch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
)

// Claude launches Claude Code (docs/agents/claude-code.md §6–8): `-p` with stream-json
// output, a pre-assigned --session-id confirmed by the system/init line, the
// prompt on stdin from a file.
type Claude struct{ local }

// ClaudeConfirmTimeout is claude.launch_timeout's default (docs/agents/claude-code.md §6.6): init normally
// arrives within 0.5 s, hooks and MCP servers can add seconds.
const ClaudeConfirmTimeout = 30 * time.Second

func (Claude) Name() string { return "claude-code" }

// claudeStrip are the variables a parent Claude gives its tool children (docs/agents/claude-code.md §6.2);
// agentctl may itself run inside Claude's Bash tool.
var claudeStrip = []string{
	"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_CHILD_SESSION",
	"CLAUDE_CODE_EXECPATH", "CLAUDE_PID", "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_CODE_MESSAGING_TOKEN",
	"CLAUDE_CODE_SESSION_ATTENDED", "CLAUDE_CODE_CHILD_NOTES_DIR", "CLAUDE_CODE_SSE_PORT",
}

// ClaudeEnv applies the environment policy of docs/agents/claude-code.md §6.2 to base: strip the variables a
// parent Claude sets and agentctl's own secrets (ownSecrets), keep everything else (ANTHROPIC_BASE_URL included — never
// dropped implicitly), then config env, then --env.
func ClaudeEnv(base []string, configEnv map[string]string, home string, userEnv []string) *envSet {
	e := agentBase(base)
	for _, k := range claudeStrip {
		e.unset(k)
	}
	keys := make([]string, 0, len(configEnv))
	for k := range configEnv {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, k := range keys {
		e.set(k, configEnv[k])
	}
	if home != "" {
		e.set("HOME", home)
	}
	for _, kv := range userEnv {
		k, v, _ := strings.Cut(kv, "=")
		e.set(k, v)
	}
	return e
}

// resolveClaude finds the binary (docs/agents/claude-code.md §6.1): env AGENTCTL_CLAUDE_BIN, config
// adapters.claude-code.binary, $PATH, then the usual install locations. The path
// is used as found, not its realpath: self-update retargets the symlink.
func resolveClaude(req *Request) (string, error) {
	if v := req.getenv("AGENTCTL_CLAUDE_BIN"); v != "" {
		if !executable(v) {
			return "", fmt.Errorf("AGENTCTL_CLAUDE_BIN=%s is not an executable file; fix or unset it", v)
		}
		return v, nil
	}
	if v := req.adapterConfig("claude-code").Binary; v != "" {
		if !executable(v) {
			return "", fmt.Errorf("config adapters.claude-code.binary %s is not an executable file; fix it in config.json", v)
		}
		return v, nil
	}
	look := req.LookPath
	if look == nil {
		look = exec.LookPath
	}
	if p, err := look("claude"); err == nil {
		return p, nil
	}
	home := req.getenv("HOME")
	var tried []string
	for _, p := range []string{
		filepath.Join(home, ".local/bin/claude"), filepath.Join(home, ".claude/local/claude"),
		"/usr/local/bin/claude", "/opt/homebrew/bin/claude", filepath.Join(home, ".npm-global/bin/claude"),
	} {
		if home == "" && !filepath.IsAbs(p) {
			continue
		}
		if executable(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("claude binary not found on $PATH or in %s; install Claude Code (npm i -g @anthropic-ai/claude-code) or set AGENTCTL_CLAUDE_BIN or config adapters.claude-code.binary", strings.Join(tried, ", "))
}

// Plan builds the exact argv of docs/agents/claude-code.md §6.3 (launch) or §7 (resume).
func (c Claude) Plan(req *Request) (*Plan, error) {
	bin, err := resolveClaude(req)
	if err != nil {
		return nil, err
	}
	cfg := req.adapterConfig("claude-code")
	env := ClaudeEnv(req.Environ, cfg.Env, req.Home, req.UserEnv)
	bypass := req.PermissionMode == "bypassPermissions"
	if bypass && req.Euid == 0 {
		if v, _ := env.get("IS_SANDBOX"); v != "1" {
			if !req.Sandbox && !cfg.IsSandbox {
				return nil, &InputError{"--permission-mode bypassPermissions as root: claude refuses it unless IS_SANDBOX=1; if this machine is a sandbox pass --sandbox (or set adapters.claude-code.is_sandbox in config), otherwise choose another --permission-mode"}
			}
			env.set("IS_SANDBOX", "1")
		}
	}
	p := &Plan{Bin: bin, ConfirmTimeout: ClaudeConfirmTimeout}
	if v := cfg.LaunchTimeout; v != "" {
		d, err := meta.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("config adapters.claude-code.launch_timeout %q: want a duration such as 30s", v)
		}
		p.ConfirmTimeout = d
	}
	p.Args = []string{"-p", "--output-format", "stream-json", "--verbose"}
	if req.Background {
		// `claude --bg` reads the prompt on stdin and prints the short id;
		// Claude's daemon picks the session id (docs/agents/claude-code.md §4.5).
		p.Args = []string{"--bg"}
	}
	switch {
	case req.Background:
	case req.Kind == KindResume:
		if req.SessionID == "" {
			return nil, errors.New("resume needs a session id")
		}
		// Never --continue <id> (a boolean flag: the id would become the prompt),
		// never --session-id together with --resume (docs/agents/claude-code.md §7).
		p.Args = append(p.Args, "--resume", req.SessionID)
		if req.Fork {
			// A copy of the history under a new id (docs/agents/claude-code.md
			// §1.4); the new id arrives in the init line.
			p.Args = append(p.Args, "--fork-session")
		}
		p.SessionID = req.SessionID
	default:
		p.SessionID = freshClaudeID(claudeRoot(env), NewUUID4)
		p.Args = append(p.Args, "--session-id", p.SessionID)
	}
	if req.Model != "" {
		p.Args = append(p.Args, "--model", req.Model)
	}
	if req.PermissionMode != "" {
		p.Args = append(p.Args, "--permission-mode", req.PermissionMode)
	}
	if req.AppendSystemPrompt != "" {
		p.Args = append(p.Args, "--append-system-prompt", req.AppendSystemPrompt)
	}
	p.Env = env.vars
	p.EnvNames = env.names()
	return p, nil
}

// claudeRoot is the agent's config root as the child will see it.
func claudeRoot(e *envSet) string {
	if v, _ := e.get("CLAUDE_CONFIG_DIR"); v != "" {
		return v
	}
	if h, _ := e.get("HOME"); h != "" {
		return filepath.Join(h, ".claude")
	}
	return ""
}

// freshClaudeID draws a UUIDv4 that no transcript uses yet (docs/agents/claude-code.md §6.3).
func freshClaudeID(root string, gen func() string) string {
	for {
		id := gen()
		if root == "" {
			return id
		}
		if m, _ := filepath.Glob(filepath.Join(root, "projects", "*", id+".jsonl")); len(m) == 0 {
			return id
		}
	}
}

type claudeLine struct {
	Type           string   `json:"type"`
	Subtype        string   `json:"subtype"`
	SessionID      string   `json:"session_id"`
	Model          string   `json:"model"`
	PermissionMode string   `json:"permissionMode"`
	APIKeySource   string   `json:"apiKeySource"`
	Version        string   `json:"claude_code_version"`
	IsError        bool     `json:"is_error"`
	APIErrorStatus int      `json:"api_error_status"`
	NumTurns       int      `json:"num_turns"`
	TotalCostUSD   *float64 `json:"total_cost_usd"`
	TerminalReason string   `json:"terminal_reason"`
	Result         string   `json:"result"`
	Error          string   `json:"error"`
}

// Confirm accepts only the snake_case session_id of a system/init line (docs/agents/claude-code.md §6.6): a
// prior tool polled for camelCase sessionId, which stream-json never emits.
func (Claude) Confirm(lines [][]byte, want string) (string, *meta.InitInfo, bool) {
	for _, ln := range lines {
		if len(ln) == 0 || ln[0] != '{' {
			continue
		}
		var l claudeLine
		if json.Unmarshal(ln, &l) != nil || l.Type != "system" || l.Subtype != "init" || l.SessionID == "" {
			continue
		}
		init := &meta.InitInfo{Model: l.Model, PermissionMode: l.PermissionMode, APIKeySource: l.APIKeySource, Version: l.Version}
		return l.SessionID, init, true
	}
	return "", nil, false
}

// claudeStderr maps stderr lines to failure classes (docs/agents/claude-code.md §6.6), first match wins.
var claudeStderr = []struct{ pattern, class, hint string }{
	{"cannot be used with root/sudo privileges", "root-guard", "pass --sandbox (adds IS_SANDBOX=1) if this machine is a sandbox, or use another --permission-mode"},
	{"is already in use", "session-in-use", "another process uses this session id; retry the launch"},
	{"No conversation found with session ID", "not-found", "claude only resumes a session from its start directory"},
	{"error: unknown option", "bad-flag", "check --model/--permission-mode and your claude version"},
	{"requires --verbose", "bad-flag", "an agentctl bug; please report it"},
	{"Invalid session ID", "bad-flag", "an agentctl bug; please report it"},
	{"--session-id can only be used with", "bad-flag", "an agentctl bug; please report it"},
	{"Input must be provided either through stdin", "no-prompt", "the prompt did not reach claude's stdin; an agentctl bug"},
	{"cannot be launched inside another Claude Code session", "nested", "run agentctl outside Claude Code, or unset CLAUDECODE"},
	{"Workspace not trusted", "untrusted", "`claude --bg` refuses a workspace not trusted in Claude's config (docs/agents/claude-code.md §4.5)"},
	{"Invalid API key", "auth", "set ANTHROPIC_API_KEY or run `claude /login`"},
	{"Missing API key", "auth", "set ANTHROPIC_API_KEY or run `claude /login`"},
	{"Failed to authenticate", "auth", "set ANTHROPIC_API_KEY or run `claude /login`"},
}

// Classify explains a finished run from its output (docs/agents/claude-code.md §6.6). API failures keep
// subtype "success" and show only is_error, so is_error is what counts; a run
// without a result line that agentctl did not stop "exited without result" (a
// SIGINT from someone else makes -p exit 0 without one, so rc 0 proves nothing).
func (Claude) Classify(lines [][]byte, exitCode int, stopRequested bool) Outcome {
	var res *claudeLine
	var text []string
	authFlag := false
	for _, ln := range lines {
		t := bytes.TrimSpace(ln)
		if len(t) == 0 {
			continue
		}
		if t[0] == '{' {
			var l claudeLine
			if json.Unmarshal(t, &l) == nil && l.Type != "" {
				switch l.Type {
				case "result":
					l := l
					res = &l
				case "assistant":
					if l.Error == "authentication_failed" {
						authFlag = true
					}
				}
				continue
			}
		}
		text = append(text, string(t))
	}
	var out Outcome
	if res != nil {
		out.Result = &meta.ResultInfo{Subtype: res.Subtype, IsError: res.IsError, APIErrorStatus: res.APIErrorStatus,
			NumTurns: res.NumTurns, TotalCostUSD: res.TotalCostUSD, TerminalReason: res.TerminalReason, Text: oneLine(res.Result, 300)}
	}
	for _, ln := range text {
		for _, p := range claudeStderr {
			if strings.Contains(ln, p.pattern) {
				out.Class, out.Message = p.class, oneLine(ln, 200)+"; "+p.hint
				return out
			}
		}
	}
	if res != nil {
		msg := oneLine(res.Result, 200)
		authText := strings.Contains(res.Result, "Invalid API key") || strings.Contains(res.Result, "Missing API key") || strings.Contains(res.Result, "/login")
		switch {
		case res.IsError && (res.APIErrorStatus == 401 || res.APIErrorStatus == 403 || authFlag || authText):
			out.Class, out.Message = "auth", msg+"; set ANTHROPIC_API_KEY or run `claude /login`"
		case res.IsError && res.APIErrorStatus != 0:
			// The one classification status uses (discover.BlockedBy): a 429 is
			// quota here too, a 5xx the API error loop; other API errors stay
			// api-error.
			out.Class, out.Message = discover.BlockedBy(fmt.Sprintf("API Error: %d %s", res.APIErrorStatus, res.Result)), msg
			if out.Class == "" {
				out.Class = discover.BlockedAPIErrors
			}
		case res.Subtype == "error_max_turns":
			out.Class, out.Message = "max-turns", "the run hit --max-turns"
		case res.IsError || (res.Subtype != "" && res.Subtype != "success"):
			if msg == "" {
				msg = "subtype " + res.Subtype
			}
			out.Class, out.Message = "error", msg
		}
		return out
	}
	if stopRequested {
		return out
	}
	code := fmt.Sprintf("code %d", exitCode)
	if exitCode < 0 {
		code = "exit code unknown"
	}
	msg := fmt.Sprintf("claude exited (%s) without a result", code)
	if n := len(text); n > 0 {
		msg += ": " + oneLine(text[n-1], 200)
	}
	out.Class, out.Message = "crashed", msg
	return out
}

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
