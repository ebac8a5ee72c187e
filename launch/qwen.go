package launch

import (
	"fmt"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/meta"
)

// Qwen launches Qwen Code (docs/agents/qwen.md, "Launch"): `qwen -o stream-json
// [--approval-mode M] [-m MODEL] [--resume UUID]` with the prompt on stdin. The first
// stdout line, {"type":"system","subtype":"init","session_id":…}, names the session
// before any model call. Auth (--auth-type, keys, base URL) comes from the user's own
// settings and environment, as for a run by hand.
type Qwen struct{ local }

// QwenConfirmTimeout: init comes ~3 s after spawn when idle.
const QwenConfirmTimeout = 45 * time.Second

func (Qwen) Name() string { return "qwen-code" }

// qwenModes are Qwen Code's own --approval-mode values.
var qwenModes = map[string]string{"default": "default", "auto-edit": "auto-edit", "yolo": "yolo", "plan": "plan", "bypassPermissions": "yolo"}

func (Qwen) Plan(req *Request) (*Plan, error) {
	if req.AppendSystemPrompt != "" {
		return nil, &InputError{"--append-system-prompt is not supported for qwen-code; put the instructions in the prompt or QWEN.md"}
	}
	var mode string
	if req.PermissionMode != "" {
		m, ok := qwenModes[req.PermissionMode]
		if !ok {
			return nil, &InputError{fmt.Sprintf("--permission-mode %q: qwen-code takes default, auto-edit, yolo, plan or bypassPermissions", req.PermissionMode)}
		}
		mode = m
	}
	bin, err := resolveAgentBin(req, agents.Get("qwen-code"))
	if err != nil {
		return nil, err
	}
	env := agentEnv(req, "qwen-code")
	applyUserEnv(env, req.UserEnv)
	p := &Plan{Bin: bin, Env: env.vars, EnvNames: env.names(), ConfirmTimeout: QwenConfirmTimeout,
		Args: []string{"-o", "stream-json"}}
	if mode != "" {
		p.Args = append(p.Args, "--approval-mode", mode)
	}
	if req.Model != "" {
		p.Args = append(p.Args, "-m", req.Model)
	}
	if req.Kind == KindResume {
		if !uuidRE().MatchString(req.SessionID) {
			return nil, &InputError{fmt.Sprintf("qwen-code resumes only a full session id, not %q", req.SessionID)}
		}
		p.Args = append(p.Args, "--resume", req.SessionID)
		p.SessionID = req.SessionID
	}
	return p, nil
}

func (Qwen) Confirm(lines [][]byte, want string) (string, *meta.InitInfo, bool) {
	for _, ln := range lines {
		if l, ok := parseStreamLine(ln); ok && l.Type == "system" && l.Subtype == "init" && uuidRE().MatchString(l.SessionID) {
			return l.SessionID, nil, true
		}
	}
	return "", nil, false
}

func (Qwen) StrictResume() bool { return true }

// Classify: the last line is {"type":"result","subtype":"success"|…,"is_error":…}.
func (Qwen) Classify(lines [][]byte, exitCode int, stopRequested bool) Outcome {
	return streamClassify("qwen-code", lines, exitCode, stopRequested, func(l streamLine) (bool, bool) {
		return l.Type == "system" && l.Subtype == "init", l.Type == "result" && l.Subtype == "success" && !l.IsError
	})
}
