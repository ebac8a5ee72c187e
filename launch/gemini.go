package launch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/meta"
)

// Gemini launches Gemini CLI (docs/agents/gemini.md, "Launch"): `gemini -o stream-json
// --skip-trust [--approval-mode M] [-m MODEL] [--resume UUID]` with the prompt on stdin
// (a piped stdin is the prompt of a headless run). The first stdout line,
// {"type":"init","session_id":…}, comes before any model call: that id is the session.
type Gemini struct{ local }

// GeminiConfirmTimeout: init is printed ~2 s after spawn when idle (node start and
// settings load), longer on a loaded machine.
const GeminiConfirmTimeout = 45 * time.Second

func (Gemini) Name() string { return "gemini" }

// geminiModes are Gemini CLI's own --approval-mode values, and agentctl's common
// names (Claude Code's) where one means the same: bypassPermissions "run every
// tool without asking" (yolo), acceptEdits "edit files without asking" (auto_edit).
var geminiModes = map[string]string{"default": "default", "auto_edit": "auto_edit", "yolo": "yolo", "plan": "plan",
	"bypassPermissions": "yolo", "acceptEdits": "auto_edit"}

func (Gemini) Plan(req *Request) (*Plan, error) {
	// --skip-trust: a headless run in an untrusted folder exits 55 without it; the user
	// chose the directory by launching there.
	return nodeAgentPlan(req, nodeAgent{name: "gemini", modes: geminiModes, confirm: GeminiConfirmTimeout,
		modeNames: "default, auto_edit, yolo, plan, acceptEdits or bypassPermissions", instructions: "GEMINI.md",
		args: []string{"-o", "stream-json", "--skip-trust"}})
}

// nodeAgent is what differs between the Gemini CLI and Qwen Code launches (Qwen
// Code is a fork of Gemini CLI and kept its command line).
type nodeAgent struct {
	name         string
	modes        map[string]string // agentctl's --permission-mode → the CLI's --approval-mode
	modeNames    string
	instructions string // the file the CLI reads standing instructions from
	args         []string
	confirm      time.Duration
}

// nodeAgentPlan builds `<bin> <args> [--approval-mode M] [-m MODEL] [--resume UUID]`
// with the prompt on stdin (a piped stdin is the prompt of a headless run).
func nodeAgentPlan(req *Request, a nodeAgent) (*Plan, error) {
	if req.AppendSystemPrompt != "" {
		return nil, &InputError{fmt.Sprintf("--append-system-prompt is not supported for %s; put the instructions in the prompt or %s", a.name, a.instructions)}
	}
	var mode string
	if req.PermissionMode != "" {
		m, ok := a.modes[req.PermissionMode]
		if !ok {
			return nil, &InputError{fmt.Sprintf("--permission-mode %q: %s takes %s", req.PermissionMode, a.name, a.modeNames)}
		}
		mode = m
	}
	bin, err := resolveAgentBin(req, agents.Get(a.name))
	if err != nil {
		return nil, err
	}
	env := agentEnv(req, a.name)
	applyUserEnv(env, req.UserEnv)
	p := &Plan{Bin: bin, Env: env.vars, EnvNames: env.names(), ConfirmTimeout: a.confirm, Args: append([]string(nil), a.args...)}
	if mode != "" {
		p.Args = append(p.Args, "--approval-mode", mode)
	}
	if req.Model != "" {
		p.Args = append(p.Args, "-m", req.Model)
	}
	if req.Kind == KindResume {
		// Only the full id: both also take "latest" and an index, which name
		// whatever is newest in the directory by then.
		if !uuidRE().MatchString(req.SessionID) {
			return nil, &InputError{fmt.Sprintf("%s resumes only a full session id, not %q", a.name, req.SessionID)}
		}
		p.Args = append(p.Args, "--resume", req.SessionID)
		p.SessionID = req.SessionID
	}
	return p, nil
}

// streamLine is one line of Gemini's (and Qwen's) stream-json output.
type streamLine struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	Status    string          `json:"status"`
	IsError   bool            `json:"is_error"`
	Error     json.RawMessage `json:"error"`
	Result    string          `json:"result"`
}

func parseStreamLine(ln []byte) (streamLine, bool) {
	t := bytes.TrimSpace(ln)
	var l streamLine
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &l) != nil || l.Type == "" {
		return l, false
	}
	return l, true
}

func (Gemini) Confirm(lines [][]byte, want string) (string, *meta.InitInfo, bool) {
	for _, ln := range lines {
		if l, ok := parseStreamLine(ln); ok && l.Type == "init" && uuidRE().MatchString(l.SessionID) {
			return l.SessionID, nil, true
		}
	}
	return "", nil, false
}

// StrictResume: a resume must answer with the resumed id.
func (Gemini) StrictResume() bool { return true }

// Classify: the last line is {"type":"result","status":"success"|"error",…}; an API
// failure exits 1 with the error on stderr (Gemini writes nothing about it to the
// session file).
func (Gemini) Classify(lines [][]byte, exitCode int, stopRequested bool) Outcome {
	return streamClassify("gemini", lines, exitCode, stopRequested, func(l streamLine) (bool, bool) {
		return l.Type == "init", l.Type == "result" && l.Status == "success"
	})
}

// streamClassify is the outcome of a stream-json run: started says a line opened the
// session, success that a result line closed it well; other text (stderr) explains
// a failure.
func streamClassify(name string, lines [][]byte, exitCode int, stopRequested bool, judge func(streamLine) (started, success bool)) Outcome {
	started, success := false, false
	var failure string
	var text []string
	for _, ln := range lines {
		l, ok := parseStreamLine(ln)
		if !ok {
			if s := strings.TrimSpace(string(ln)); s != "" && !strings.HasPrefix(s, "agentctl:") && !ignorableStderr(s) {
				text = append(text, s)
			}
			continue
		}
		st, su := judge(l)
		started = started || st
		success = success || su
		if l.Type == "result" && !su {
			failure = resultError(l)
		}
	}
	tail := ""
	for i := len(text) - 1; i >= 0; i-- {
		if strings.Contains(strings.ToLower(text[i]), "error") {
			tail = oneLine(text[i], 200)
			break
		}
	}
	if tail == "" && len(text) > 0 {
		tail = oneLine(text[len(text)-1], 200)
	}
	switch {
	case stopRequested:
		return Outcome{}
	case success && exitCode <= 0:
		return Outcome{}
	case !started:
		return Outcome{Class: "startup-failed", Message: fmt.Sprintf("%s exited (%s) before starting a session%s", name, codeText(exitCode), prefixed(tail))}
	case failure != "":
		// Gemini exits 173 (its relaunched child's code) with a result line that
		// says why: the line, not the code, is the outcome.
		return Outcome{Class: "error", Message: oneLine(failure, 200)}
	case exitCode > 128:
		return Outcome{Class: "killed", Message: fmt.Sprintf("%s was killed (%s)", name, codeText(exitCode))}
	case tail != "":
		return Outcome{Class: "error", Message: tail}
	}
	return Outcome{Class: "crashed", Message: fmt.Sprintf("%s exited (%s) without a final result", name, codeText(exitCode))}
}

// ignorableStderr drops the start-up notes node CLIs print on every run.
func ignorableStderr(s string) bool {
	for _, p := range []string{"Warning: 256-color", "Ripgrep ", "Ripgrep is not available", "Loaded cached credentials"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// resultError reads the error of a failed result line (an object with a message, or
// a string), falling back to its result text.
func resultError(l streamLine) string {
	var e struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(l.Error, &e) == nil && e.Message != "" {
		return e.Message
	}
	var s string
	if json.Unmarshal(l.Error, &s) == nil && s != "" {
		return s
	}
	if l.Result != "" {
		return l.Result
	}
	if l.Subtype != "" {
		return l.Subtype
	}
	return "the run failed"
}
