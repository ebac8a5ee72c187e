package launch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// Codex launches the Codex CLI (docs/agents/codex.md §6–8): `codex exec --json` with
// the prompt on stdin ("-"); the thread id is learnt from the first stdout line,
// thread.started, never invented.
type Codex struct{ local }

// CodexConfirmTimeout: thread.started arrives before any model call (docs/agents/codex.md §6).
const CodexConfirmTimeout = 15 * time.Second

func (Codex) Name() string { return "codex" }

var uuidRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
})

func resolveCodex(req *Request) (string, error) {
	if v := req.getenv("AGENTCTL_CODEX_BIN"); v != "" {
		if !executable(v) {
			return "", fmt.Errorf("AGENTCTL_CODEX_BIN=%s is not an executable file; fix or unset it", v)
		}
		return v, nil
	}
	if v := req.adapterConfig("codex").Binary; v != "" {
		if !executable(v) {
			return "", fmt.Errorf("config adapters.codex.binary %s is not an executable file; fix it in config.json", v)
		}
		return v, nil
	}
	look := req.LookPath
	if look == nil {
		look = exec.LookPath
	}
	p, err := look("codex")
	if err != nil {
		return "", fmt.Errorf("codex binary not found on $PATH; install it (npm i -g @openai/codex) or set AGENTCTL_CODEX_BIN or config adapters.codex.binary")
	}
	return p, nil
}

// Plan builds `codex exec --json --skip-git-repo-check -C <cwd> <approvals> [-m M] -`
// or, for a resume, `codex exec -C <cwd> resume --json --skip-git-repo-check
// [<approvals>] [-m M] <FULL-UUID> -` (-C belongs to exec, before resume).
func (Codex) Plan(req *Request) (*Plan, error) {
	if req.AppendSystemPrompt != "" {
		return nil, &InputError{"--append-system-prompt is not supported for codex; put the instructions in the prompt"}
	}
	bin, err := resolveCodex(req)
	if err != nil {
		return nil, err
	}
	var approvals []string
	switch req.PermissionMode {
	case "bypassPermissions", "danger-full-access":
		approvals = []string{"--dangerously-bypass-approvals-and-sandbox"}
	case "":
		approvals = []string{"-s", "workspace-write"}
	case "read-only", "workspace-write":
		approvals = []string{"-s", req.PermissionMode}
	default:
		return nil, &InputError{fmt.Sprintf("--permission-mode %q: codex takes read-only, workspace-write, danger-full-access or bypassPermissions", req.PermissionMode)}
	}
	env := agentEnv(req, "codex")
	applyUserEnv(env, req.UserEnv)
	p := &Plan{Bin: bin, Env: env.vars, EnvNames: env.names(), ConfirmTimeout: CodexConfirmTimeout}
	model := []string{}
	if req.Model != "" {
		model = []string{"-m", req.Model}
	}
	switch req.Kind {
	case KindResume:
		// A prefix or name is taken as a thread *name*: codex silently starts a new
		// thread (docs/agents/codex.md §7). Only the canonical id goes through.
		if !uuidRE().MatchString(req.SessionID) {
			return nil, &InputError{fmt.Sprintf("codex resumes only a full thread id, not %q", req.SessionID)}
		}
		// resume takes only the bypass flag (-s belongs to a new thread).
		p.Args = []string{"exec", "-C", req.Cwd, "resume", "--json", "--skip-git-repo-check"}
		if approvals[0] == "--dangerously-bypass-approvals-and-sandbox" {
			p.Args = append(p.Args, approvals...)
		}
		p.Args = append(append(p.Args, model...), req.SessionID, "-")
		p.SessionID = req.SessionID
	default:
		p.Args = append([]string{"exec", "--json", "--skip-git-repo-check", "-C", req.Cwd}, approvals...)
		p.Args = append(append(p.Args, model...), "-")
	}
	return p, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}

type codexLine struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Confirm takes the thread id from the thread.started line.
func (Codex) Confirm(lines [][]byte, want string) (string, *meta.InitInfo, bool) {
	for _, ln := range lines {
		var l codexLine
		if len(ln) == 0 || ln[0] != '{' || json.Unmarshal(ln, &l) != nil {
			continue
		}
		if l.Type == "thread.started" && l.ThreadID != "" {
			return l.ThreadID, nil, true
		}
	}
	return "", nil, false
}

// StrictResume: codex answering a resume under another thread id is a failure
// (resume_mismatch, docs/agents/codex.md §7), not a new id to report.
func (Codex) StrictResume() bool { return true }

// Classify (docs/agents/codex.md §6): turn.failed or a top-level error event is an error (an
// item.completed of type error is only a warning); no thread.started means the
// start failed; a run that did not complete its turn and was not stopped by
// agentctl was killed or crashed.
func (Codex) Classify(lines [][]byte, exitCode int, stopRequested bool) Outcome {
	started, completed := false, false
	var failure string
	var stderr []string
	for _, ln := range lines {
		t := bytes.TrimSpace(ln)
		if len(t) == 0 {
			continue
		}
		var l codexLine
		if t[0] == '{' && json.Unmarshal(t, &l) == nil && l.Type != "" {
			switch l.Type {
			case "thread.started":
				started = true
			case "turn.completed":
				completed = true
			case "turn.failed":
				if l.Error != nil {
					failure = l.Error.Message
				} else {
					failure = "turn failed"
				}
			case "error":
				failure = l.Message
			}
			continue
		}
		if s := string(t); !strings.HasPrefix(s, "WARNING: proceeding") && !strings.HasPrefix(s, "agentctl:") {
			stderr = append(stderr, s)
		}
	}
	last := func() string {
		if len(stderr) == 0 {
			return ""
		}
		// clap prints "error: …" first and a "--help" hint last: the error says more.
		for _, l := range stderr {
			if strings.HasPrefix(strings.ToLower(l), "error") {
				return ": " + oneLine(l, 200)
			}
		}
		return ": " + oneLine(stderr[len(stderr)-1], 200)
	}
	switch {
	case !started && !stopRequested:
		return Outcome{Class: "startup-failed", Message: fmt.Sprintf("codex exited (%s) before starting a thread%s", codeText(exitCode), last())}
	case failure != "":
		return Outcome{Class: "error", Message: oneLine(failure, 200)}
	case completed && (exitCode == 0 || exitCode < 0):
		return Outcome{}
	case stopRequested:
		return Outcome{}
	case exitCode > 128:
		return Outcome{Class: "killed", Message: fmt.Sprintf("codex was killed (%s)", codeText(exitCode))}
	}
	return Outcome{Class: "crashed", Message: fmt.Sprintf("codex exited (%s) without completing its turn%s", codeText(exitCode), last())}
}

func codeText(code int) string {
	if code < 0 {
		return "exit code unknown"
	}
	return fmt.Sprintf("code %d", code)
}
