package launch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// Pi launches pi in JSON print mode (docs/agents/pi.md §6–8): `pi --mode json
// [--model M] [--append-system-prompt T] -p` with the prompt on stdin from a
// file. Stdout line 1 is the session header, printed before any model traffic:
// its id is the session. A resume opens the session by the path of its file and
// must answer with the same header id.
type Pi struct{ local }

// PiConfirmTimeout: the header comes 0.1 s after spawn normally, up to ~4 s
// under load.
const PiConfirmTimeout = 20 * time.Second

func (Pi) Name() string { return "pi" }

// piSessionPath checks a resume target: pi treats anything without a slash as
// an id prefix, resolved first among the current cwd's sessions and then
// globally, with an interactive fork question that headless pi answers by
// exiting 0 having done nothing (docs/agents/pi.md §7). Only an absolute .jsonl path is safe.
func piSessionPath(req *Request, adapter string) (string, error) {
	p := req.SessionPath
	if p == "" || !filepath.IsAbs(p) || !strings.HasSuffix(p, ".jsonl") {
		return "", &InputError{fmt.Sprintf("%s resumes a session by the absolute path of its .jsonl file; agentctl found none for %s (is the session file still there? `agentctl status %s` shows its path)", adapter, req.SessionID, req.SessionID)}
	}
	return p, nil
}

// Plan builds the argv of docs/agents/pi.md §6 (launch) or §7 (resume). -p goes last: it
// swallows the next argument as a message.
func (Pi) Plan(req *Request) (*Plan, error) {
	if req.PermissionMode != "" {
		return nil, &InputError{"--permission-mode: pi has no permission modes (its tools run without asking)"}
	}
	bin, err := resolvePi(req)
	if err != nil {
		return nil, err
	}
	env := agentEnv(req, "pi")
	applyUserEnv(env, req.UserEnv)
	p := &Plan{Bin: bin, Env: env.vars, EnvNames: env.names(), ConfirmTimeout: PiConfirmTimeout}
	p.Args = []string{"--mode", "json"}
	if req.KeepOpen {
		if req.Kind == KindResume {
			return nil, &InputError{"--keep-open applies to launch only; resume a pi session with agentctl resume ID MESSAGE"}
		}
		// RPC mode (docs/agents/pi.md §13): commands on stdin, the prompt the
		// first of them (FirstInput), so no -p.
		p.Args, p.Input = []string{"--mode", "rpc"}, true
	}
	if req.Kind == KindResume {
		path, err := piSessionPath(req, "pi")
		if err != nil {
			return nil, err
		}
		// Never -c (the most recently modified file of the cwd) nor -r (a picker).
		p.Args = append(p.Args, "--session", path)
		p.SessionID = req.SessionID
	}
	if req.Model != "" {
		p.Args = append(p.Args, "--model", req.Model) // provider/model[:thinking], unchanged
	}
	if req.AppendSystemPrompt != "" {
		p.Args = append(p.Args, "--append-system-prompt", req.AppendSystemPrompt)
	}
	if !p.Input {
		p.Args = append(p.Args, "-p")
	}
	return p, nil
}

type piEvent struct {
	Type    string     `json:"type"`
	ID      string     `json:"id"`
	Message *piMessage `json:"message"`
	// RPC mode's responses (launch --keep-open).
	Command string       `json:"command"`
	Success *bool        `json:"success"`
	Error   string       `json:"error"`
	Data    *piStateData `json:"data"`
}

type piMessage struct {
	Role         string `json:"role"`
	StopReason   string `json:"stopReason"`
	ErrorMessage string `json:"errorMessage"`
	Model        string `json:"model"`
	Provider     string `json:"provider"`
}

func parsePiEvent(ln []byte) (piEvent, bool) {
	t := bytes.TrimSpace(ln)
	var e piEvent
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &e) != nil || e.Type == "" {
		return e, false
	}
	return e, true
}

// piConfirm takes the first line whose type is session (stderr may be merged
// into the same log, so not necessarily line 1).
func piConfirm(lines [][]byte) (string, bool) {
	for _, ln := range lines {
		if e, ok := parsePiEvent(ln); ok && e.Type == "session" && e.ID != "" {
			return e.ID, true
		}
	}
	return "", false
}

func (Pi) Confirm(lines [][]byte, want string) (string, *meta.InitInfo, bool) {
	if id, ok := piConfirm(lines); ok {
		return id, nil, ok
	}
	id, ok := piRPCConfirm(lines)
	return id, nil, ok
}

// StrictResume: the resumed file's header is the old one; another id means pi
// opened something else.
func (Pi) StrictResume() bool { return true }

// Classify (docs/agents/pi.md §4.2, §4.3): a --mode json run exits 0 even when its last
// assistant message is an error, so the outcome is the last assistant
// message's stopReason (stop/length: done), never the exit code alone. No header
// means pi failed before opening a session (its stderr says why: no models,
// unknown option, …).
func (Pi) Classify(lines [][]byte, exitCode int, stopRequested bool) Outcome {
	return piClassify("pi", lines, exitCode, stopRequested)
}

func piClassify(name string, lines [][]byte, exitCode int, stopRequested bool) Outcome {
	header := false
	var last *piMessage
	var text []string
	for _, ln := range lines {
		e, ok := parsePiEvent(ln)
		if !ok {
			if s := strings.TrimSpace(string(ln)); s != "" && !strings.HasPrefix(s, "agentctl:") {
				text = append(text, s)
			}
			continue
		}
		switch {
		case e.Type == "session":
			header = true
		case e.Type == "response" && e.Command == "get_state" && e.Data != nil && e.Data.SessionID != "":
			header = true // RPC mode (launch --keep-open): no header, the state names the session
		case e.Type == "message_end" && e.Message != nil && e.Message.Role == "assistant":
			last = e.Message
		}
	}
	tail := ""
	if n := len(text); n > 0 {
		tail = ": " + oneLine(text[n-1], 200)
		for _, l := range text {
			if strings.HasPrefix(l, "Error") || strings.Contains(l, "No models") {
				tail = ": " + oneLine(l, 200)
				break
			}
		}
	}
	switch {
	case stopRequested:
		return Outcome{}
	case !header:
		return Outcome{Class: "startup-failed", Message: fmt.Sprintf("%s exited (%s) before opening a session%s", name, codeText(exitCode), tail)}
	case last != nil && last.StopReason == "error":
		msg := last.ErrorMessage
		if msg == "" {
			msg = "the model call failed"
		}
		return Outcome{Class: "error", Message: oneLine(msg, 200)}
	case last != nil && last.StopReason == "aborted":
		return Outcome{Class: "aborted", Message: "the run was aborted"}
	case last != nil && (last.StopReason == "stop" || last.StopReason == "length") && exitCode <= 0:
		return Outcome{}
	case exitCode > 128:
		return Outcome{Class: "killed", Message: fmt.Sprintf("%s was killed (%s)", name, codeText(exitCode))}
	case last == nil:
		return Outcome{Class: "crashed", Message: fmt.Sprintf("%s exited (%s) before its first reply%s", name, codeText(exitCode), tail)}
	}
	return Outcome{Class: "crashed", Message: fmt.Sprintf("%s exited (%s) without a final reply%s", name, codeText(exitCode), tail)}
}

// PiRust launches pi-rust (docs/agents/pi.md §9, from its source only: no binary was
// available to verify it): `--print` is a boolean, the prompt comes on stdin,
// provider/model is split into --provider/--model, and a resume opens the
// session file by path.
type PiRust struct{ local }

func (PiRust) Name() string { return "pi-rust" }

func (PiRust) Plan(req *Request) (*Plan, error) {
	if req.PermissionMode != "" {
		return nil, &InputError{"--permission-mode: pi-rust has no permission modes"}
	}
	bin, err := resolvePiRust(req)
	if err != nil {
		return nil, err
	}
	env := agentEnv(req, "pi-rust")
	applyUserEnv(env, req.UserEnv)
	p := &Plan{Bin: bin, Env: env.vars, EnvNames: env.names(), ConfirmTimeout: PiConfirmTimeout}
	if req.Kind == KindResume {
		path, err := piSessionPath(req, "pi-rust")
		if err != nil {
			return nil, err
		}
		// Not `--print -p <msg>`: the same boolean twice, which clap rejects.
		p.Args = []string{"--session", path, "--mode", "json", "--print"}
		p.SessionID = req.SessionID
	} else {
		p.Args = []string{"--mode", "json", "--print"}
	}
	if req.Model != "" {
		if prov, model, ok := strings.Cut(req.Model, "/"); ok && prov != "" && model != "" {
			p.Args = append(p.Args, "--provider", prov, "--model", model)
		} else {
			p.Args = append(p.Args, "--model", req.Model)
		}
	}
	if req.AppendSystemPrompt != "" {
		p.Args = append(p.Args, "--append-system-prompt", req.AppendSystemPrompt)
	}
	return p, nil
}

func (PiRust) Confirm(lines [][]byte, want string) (string, *meta.InitInfo, bool) {
	id, ok := piConfirm(lines)
	return id, nil, ok
}

func (PiRust) StrictResume() bool { return true }

func (PiRust) Classify(lines [][]byte, exitCode int, stopRequested bool) Outcome {
	return piClassify("pi-rust", lines, exitCode, stopRequested)
}
