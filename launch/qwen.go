package launch

import (
	"time"

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

// qwenModes are Qwen Code's own --approval-mode values, and agentctl's common
// names where one means the same (geminiModes).
var qwenModes = map[string]string{"default": "default", "auto-edit": "auto-edit", "yolo": "yolo", "plan": "plan",
	"bypassPermissions": "yolo", "acceptEdits": "auto-edit"}

func (Qwen) Plan(req *Request) (*Plan, error) {
	return nodeAgentPlan(req, nodeAgent{name: "qwen-code", modes: qwenModes, confirm: QwenConfirmTimeout,
		modeNames: "default, auto-edit, yolo, plan, acceptEdits or bypassPermissions", instructions: "QWEN.md",
		args: []string{"-o", "stream-json"}})
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
