package stub

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reply is the scripted answer to one model request.
type Reply struct {
	// Text is the assistant's text. Empty with no Tool means the default text.
	Text string
	// Thinking adds a thinking block before the text (Anthropic only): a reply
	// with several blocks is written as one transcript line per block, which is
	// what token de-duplication has to cope with.
	Thinking string
	// Tool asks the agent to run a shell command (its Bash/bash/shell tool).
	Tool *ToolCall
	// Status, when not 0 or 200, answers with that HTTP status and an error body;
	// ErrorText, when set, is that body's message.
	Status    int
	ErrorText string
	// Delay waits before the response headers; Stall waits after the first
	// streamed event, with the response open (a turn in progress).
	Delay, Stall time.Duration
	// Hold, when set, parks the request before the headers until Release(Hold)
	// is called, the client goes away or the server closes: "busy" on demand.
	Hold string
	// Usage overrides the token counts the server would pick.
	Usage *Usage
}

// ToolCall is a request to run one shell command.
type ToolCall struct {
	Command string
	// Escalate asks to run outside the sandbox (Codex's sandbox_permissions
	// "require_escalated"), which an approval policy other than never must ask
	// the user about.
	Escalate bool
	// Name and Input, when Name is set, make another tool call than Bash
	// (Anthropic only): e.g. Claude Code's Agent tool.
	Name  string
	Input map[string]any
}

// Usage is what the stub reports for one response. Input excludes the cache
// classes (Anthropic semantics); OpenAI-style APIs add CacheRead into their
// prompt/input total and report it as cached.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Add adds u to t.
func (t *Usage) Add(u Usage) {
	t.Input += u.Input
	t.Output += u.Output
	t.CacheRead += u.CacheRead
	t.CacheWrite += u.CacheWrite
}

// Script decides the reply from the request (in practice from its last user
// message: see Request.LastUser and Request.ToolResult).
type Script func(r *Request) Reply

// Keywords is the default Script. It reads instructions from the LAST user
// message only (an earlier harness matched anywhere in the conversation and so
// re-ran tools on every resumed turn). The words are those the recorded fixtures
// use:
//
//	SLEEP=2 | SLEEP=500ms   delay before the response headers
//	STALL=3                 delay inside the stream, after the first event
//	HOLD=name               park the request until Release("name")
//	STATUS=500              answer with that HTTP error
//	HARDQUOTA               the error says the quota is exhausted until a reset time
//	                        (Qwen Code fails fast on that wording instead of retrying
//	                        for 40 minutes)
//	TOOLCMD: echo x         tool call running the rest of that line
//	TOOLTEST | TOOL         tool call running `echo hello-from-tool`
//	ESCALATE                the tool call asks to leave the sandbox (Codex)
//	AGENT: do x             Claude Code Agent (older: Task) tool call whose subagent
//	                        prompt is the rest of that line
//	THINK                   add a thinking block (Anthropic)
//	WORDS=n                 reply with n words
//
// When the last user message carries a tool result the reply is
// "tool said: <first line of the result>".
func Keywords(r *Request) Reply {
	if r.ToolResult {
		return Reply{Text: "tool said: " + firstLine(toolOutput(r.ToolOutput))}
	}
	p := r.LastUser
	var rep Reply
	if m := kwDur.FindStringSubmatch(p); m != nil {
		rep.Delay = parseDur(m[1])
	}
	if m := kwStall.FindStringSubmatch(p); m != nil {
		rep.Stall = parseDur(m[1])
	}
	if m := kwHold.FindStringSubmatch(p); m != nil {
		rep.Hold = m[1]
	}
	if m := kwStatus.FindStringSubmatch(p); m != nil {
		rep.Status, _ = strconv.Atoi(m[1])
		if strings.Contains(p, "HARDQUOTA") {
			rep.ErrorText = HardQuotaText
		}
	}
	if m := kwAgent.FindStringSubmatch(p); m != nil {
		name := "Task"
		if slices.Contains(r.Tools, "Agent") {
			name = "Agent"
		}
		rep.Tool = &ToolCall{Name: name, Input: map[string]any{"description": "e2e subagent",
			"prompt": strings.TrimSpace(m[1]), "subagent_type": "general-purpose"}}
	} else if m := kwToolCmd.FindStringSubmatch(p); m != nil {
		rep.Tool = &ToolCall{Command: strings.TrimSpace(m[1])}
	} else if kwTool.MatchString(p) {
		rep.Tool = &ToolCall{Command: "echo hello-from-tool"}
	}
	if rep.Tool != nil && strings.Contains(p, "ESCALATE") {
		rep.Tool.Escalate = true
	}
	if strings.Contains(p, "THINK") {
		rep.Thinking = "Thinking about: " + firstLine(p)
		if rep.Tool != nil {
			// thinking + text + tool_use: three transcript lines for one message.
			rep.Text = "Running it now."
		}
	}
	if m := kwWords.FindStringSubmatch(p); m != nil {
		n, _ := strconv.Atoi(m[1])
		rep.Text = Words(n)
	}
	return rep
}

var (
	kwDur     = regexp.MustCompile(`\bSLEEP=(\d+(?:\.\d+)?(?:ms|s)?)`)
	kwStall   = regexp.MustCompile(`\bSTALL=(\d+(?:\.\d+)?(?:ms|s)?)`)
	kwHold    = regexp.MustCompile(`\bHOLD=([A-Za-z0-9_.-]+)`)
	kwStatus  = regexp.MustCompile(`\bSTATUS=(\d{3})\b`)
	kwToolCmd = regexp.MustCompile(`TOOLCMD:([^\n]*)`)
	kwAgent   = regexp.MustCompile(`AGENT:([^\n]*)`)
	kwTool    = regexp.MustCompile(`\bTOOL(TEST)?\b`)
	kwWords   = regexp.MustCompile(`\bWORDS=(\d+)\b`)
)

// HardQuotaText is the error message of a HARDQUOTA reply.
const HardQuotaText = "You exceeded your current quota, please check your plan and billing details. Your quota will reset at 2030-01-01T00:00:00Z."

// parseDur reads "2" (seconds), "2.5s" or "300ms".
func parseDur(s string) time.Duration {
	if d, err := time.ParseDuration(s); err == nil {
		return d
	}
	f, _ := strconv.ParseFloat(s, 64)
	return time.Duration(f * float64(time.Second))
}

// Words returns a reply of n words ("FAKE-REPLY w2 w3 …").
func Words(n int) string {
	if n <= 0 {
		return ""
	}
	w := make([]string, n)
	w[0] = "FAKE-REPLY"
	for i := 1; i < n; i++ {
		w[i] = fmt.Sprintf("w%d", i+1)
	}
	return strings.Join(w, " ")
}

// DefaultText is the reply text when the script names none.
func DefaultText(prompt string) string {
	p := firstLine(prompt)
	if len(p) > 40 {
		p = p[:40]
	}
	return "FAKE-REPLY to: " + p
}

// toolOutput drops the header Codex puts before a command's output
// ("Chunk ID: …\nWall time: …\nOutput:\n<output>").
func toolOutput(s string) string {
	if _, after, ok := strings.Cut(s, "\nOutput:\n"); ok {
		return after
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
