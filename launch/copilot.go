package launch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/meta"
)

// Copilot launches GitHub Copilot CLI (docs/agents/copilot.md, "Launch"): `copilot
// --allow-all-tools --output-format json [--model M] (--session-id UUID | --resume
// UUID)` with the prompt on stdin. agentctl picks the id of a new session itself:
// Copilot prints its id only in the last line, so the launch is confirmed from
// Copilot's own store instead, when session-state/<id>/events.jsonl opens with the
// session.start (a resume: a session.resume) of that id.
type Copilot struct{ local }

// CopilotConfirmTimeout: the first start unpacks Copilot's runtime (6–8 s).
const CopilotConfirmTimeout = 60 * time.Second

func (Copilot) Name() string { return "copilot" }

func (Copilot) Plan(req *Request) (*Plan, error) {
	if req.AppendSystemPrompt != "" {
		return nil, &InputError{"--append-system-prompt is not supported for copilot; put the instructions in the prompt or AGENTS.md"}
	}
	// Copilot runs without a terminal only with every tool allowed: there is no
	// narrower headless mode to map agentctl's permission modes onto.
	switch req.PermissionMode {
	case "", "bypassPermissions":
	default:
		return nil, &InputError{fmt.Sprintf("--permission-mode %q: copilot runs headless only with --allow-all-tools; use bypassPermissions or leave it out", req.PermissionMode)}
	}
	bin, err := resolveAgentBin(req, agents.Get("copilot"))
	if err != nil {
		return nil, err
	}
	env := agentEnv(req, "copilot")
	applyUserEnv(env, req.UserEnv)
	p := &Plan{Bin: bin, Env: env.vars, EnvNames: env.names(), ConfirmTimeout: CopilotConfirmTimeout,
		Args: []string{"--allow-all-tools", "--output-format", "json"}}
	if req.Model != "" {
		p.Args = append(p.Args, "--model", req.Model)
	}
	if req.Kind == KindResume {
		if !uuidRE().MatchString(req.SessionID) {
			return nil, &InputError{fmt.Sprintf("copilot resumes only a full session id, not %q", req.SessionID)}
		}
		p.Args = append(p.Args, "--resume", req.SessionID)
		p.SessionID = req.SessionID
	} else {
		p.SessionID = NewUUID4()
		p.Args = append(p.Args, "--session-id", p.SessionID)
	}
	return p, nil
}

// Confirm takes the id from the closing result line (a run shorter than a probe).
func (Copilot) Confirm(lines [][]byte, want string) (string, *meta.InitInfo, bool) {
	for _, ln := range lines {
		var l struct {
			Type      string `json:"type"`
			SessionID string `json:"sessionId"`
		}
		if len(ln) > 0 && ln[0] == '{' && json.Unmarshal(ln, &l) == nil && l.Type == "result" && uuidRE().MatchString(l.SessionID) {
			return l.SessionID, nil, true
		}
	}
	return "", nil, false
}

func (Copilot) StrictResume() bool { return true }

// copilotDir is $COPILOT_HOME, else $HOME/.copilot, in the agent's environment.
func copilotDir(environ []string) string {
	if v, ok := lookupEnv(environ, "COPILOT_HOME"); ok && v != "" {
		return v
	}
	home, _ := lookupEnv(environ, "HOME")
	return filepath.Join(home, ".copilot")
}

// Probe confirms from the session's own events.jsonl: its session.start names the
// id (a launch), or a session.resume written since the spawn (a resume).
func (Copilot) Probe(p *Probe) (string, bool) {
	if !uuidRE().MatchString(p.Want) {
		return "", false
	}
	f, err := os.Open(filepath.Join(copilotDir(p.Environ), "session-state", p.Want, "events.jsonl"))
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	since := p.Spawned.Add(-2 * time.Second)
	for n := 0; sc.Scan() && n < 10000; n++ {
		var e struct {
			Type string `json:"type"`
			Data struct {
				SessionID  string    `json:"sessionId"`
				ResumeTime time.Time `json:"resumeTime"`
			} `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch {
		case p.Kind != KindResume && e.Type == "session.start":
			return p.Want, e.Data.SessionID == p.Want
		case p.Kind == KindResume && e.Type == "session.resume" && !e.Data.ResumeTime.Before(since):
			return p.Want, true
		}
	}
	return "", false
}

// Classify: the last line is {"type":"result","exitCode":N}; a failed model call is a
// session.error event ({"errorType","message","statusCode"}) before it.
func (Copilot) Classify(lines [][]byte, exitCode int, stopRequested bool) Outcome {
	result, started := false, false
	resultCode := -1
	var failure string
	var text []string
	for _, ln := range lines {
		var e struct {
			Type     string `json:"type"`
			ExitCode *int   `json:"exitCode"`
			Data     struct {
				Message string `json:"message"`
			} `json:"data"`
		}
		if len(ln) == 0 || ln[0] != '{' || json.Unmarshal(ln, &e) != nil || e.Type == "" {
			if s := string(ln); s != "" && !ignorableStderr(s) {
				text = append(text, s)
			}
			continue
		}
		started = true
		switch e.Type {
		case "session.error":
			failure = e.Data.Message
		case "result":
			result = true
			if e.ExitCode != nil {
				resultCode = *e.ExitCode
			}
		}
	}
	tail := ""
	if n := len(text); n > 0 {
		tail = oneLine(text[n-1], 200)
	}
	switch {
	case stopRequested:
		return Outcome{}
	case failure != "":
		return Outcome{Class: "error", Message: oneLine(failure, 200)}
	case result && resultCode == 0 && exitCode <= 0:
		return Outcome{}
	case !started:
		return Outcome{Class: "startup-failed", Message: fmt.Sprintf("copilot exited (%s) before starting a session%s", codeText(exitCode), prefixed(tail))}
	case exitCode > 128:
		return Outcome{Class: "killed", Message: fmt.Sprintf("copilot was killed (%s)", codeText(exitCode))}
	}
	return Outcome{Class: "crashed", Message: fmt.Sprintf("copilot exited (%s) without a final result%s", codeText(exitCode), prefixed(tail))}
}
