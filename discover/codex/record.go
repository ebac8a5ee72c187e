package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// record is one decoded rollout line. Codex writes an envelope
// {"timestamp","ordinal","type","payload"} and dispatches on type, then on
// payload.type for event_msg and response_item. Every field agentctl reads from any
// record kind lives in one flat payload struct: decoding is then a single pass, and
// fields a kind does not have stay zero.
type record struct {
	Timestamp string   `json:"timestamp"`
	Type      string   `json:"type"`
	Payload   *payload `json:"payload"`
}

type payload struct {
	Type string `json:"type"`

	// session_meta
	ID            string          `json:"id"`
	Timestamp     string          `json:"timestamp"`
	Cwd           string          `json:"cwd"`
	Originator    string          `json:"originator"`
	Source        json.RawMessage `json:"source"` // a string ("exec", "vscode"), an object for sub-agents
	CLIVersion    string          `json:"cli_version"`
	ModelProvider string          `json:"model_provider"`
	HistoryMode   string          `json:"history_mode"`
	Git           *struct {
		CommitHash    string `json:"commit_hash"`
		Branch        string `json:"branch"`
		RepositoryURL string `json:"repository_url"`
	} `json:"git"`

	// turn_context, task_started, task_complete, turn_aborted
	TurnID           string  `json:"turn_id"`
	Model            string  `json:"model"`
	ApprovalPolicy   string  `json:"approval_policy"`
	LastAgentMessage *string `json:"last_agent_message"`
	DurationMS       *int64  `json:"duration_ms"`
	Reason           string  `json:"reason"`

	// user_message, agent_message (legacy history mode), error
	Message string `json:"message"`

	// task_complete of a turn that failed (0.169: the provider's HTTP error after
	// retries, e.g. "exceeded retry limit, last status: 429 Too Many Requests")
	TurnError *struct {
		Message string `json:"message"`
	} `json:"error"`

	// thread_settings_applied
	ThreadSettings *struct {
		Model string `json:"model"`
		Cwd   string `json:"cwd"`
	} `json:"thread_settings"`

	// token_count (info is null on the first count of some versions)
	Info *struct {
		Total *usage `json:"total_token_usage"`
	} `json:"info"`

	// item_completed
	Item *item `json:"item"`

	// response_item: message, function_call(_output), custom_tool_call(_output),
	// local_shell_call, web_search_call
	Role      string          `json:"role"`
	Content   []part          `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Status    string          `json:"status"`
	Action    *struct {
		Type    string   `json:"type"`
		Command []string `json:"command"`
		Query   string   `json:"query"`
	} `json:"action"`
}

// usage is total_token_usage: cumulative for the whole thread.
type usage struct {
	Input      int64 `json:"input_tokens"`
	Cached     int64 `json:"cached_input_tokens"`
	CacheWrite int64 `json:"cache_write_input_tokens"`
	Output     int64 `json:"output_tokens"`
	Reasoning  int64 `json:"reasoning_output_tokens"`
	Total      int64 `json:"total_tokens"`
}

// maxCumulativeTokens bounds any count of a thread's cumulative usage: no thread
// reaches 10¹² tokens.
const maxCumulativeTokens = 1_000_000_000_000

// valid reports whether a cumulative count can be true: no count negative or over
// maxCumulativeTokens, and no part larger than its whole (cached and cache-write
// tokens are parts of input_tokens, reasoning tokens of output_tokens; see
// tokensOf). A damaged record fails it and is skipped, never clamped.
func (u *usage) valid() bool {
	for _, n := range []int64{u.Input, u.Cached, u.CacheWrite, u.Output, u.Reasoning, u.Total} {
		if n < 0 || n > maxCumulativeTokens {
			return false
		}
	}
	return u.Cached+u.CacheWrite <= u.Input && u.Reasoning <= u.Output
}

// item is the payload of item_completed. UserMessage/AgentMessage are verified on
// 0.169; the tool item shapes come from third-party reports and are read leniently.
type item struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Content []part          `json:"content"`
	Text    string          `json:"text"`
	Command json.RawMessage `json:"command"` // string or argv
	// CommandExecution
	ExitCode         *int   `json:"exit_code"`
	Status           string `json:"status"`
	AggregatedOutput string `json:"aggregated_output"`
	Output           string `json:"output"`
	// FileChange
	Changes json.RawMessage `json:"changes"`
	// McpToolCall
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (p part) isText() bool {
	switch strings.ToLower(p.Type) {
	case "text", "input_text", "output_text":
		return true
	}
	return false
}

func joinText(parts []part) string {
	var b strings.Builder
	for _, p := range parts {
		if !p.isText() || p.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// bareItemTypes are the response items very old rollouts wrote without an
// envelope, one per line.
var bareItemTypes = map[string]bool{
	"message": true, "function_call": true, "function_call_output": true,
	"reasoning": true, "local_shell_call": true, "custom_tool_call": true,
	"custom_tool_call_output": true, "web_search_call": true,
}

// decode parses one rollout line. A line that is not JSON (or not an object) is
// an error and the caller skips it. A field of an unexpected JSON type does not
// lose the rest of the line: encoding/json keeps decoding and we keep what it got.
func decode(line []byte) (record, error) {
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return record{}, err
		}
	}
	if r.Payload == nil {
		// Pre-envelope rollouts: a bare meta line {"id","timestamp",…} first, then
		// bare response items. Map them onto the envelope shape.
		var p payload
		if err := json.Unmarshal(line, &p); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				return record{}, err
			}
		}
		switch {
		case r.Type == "" && p.ID != "" && p.Timestamp != "":
			r.Type = "session_meta"
			r.Timestamp = p.Timestamp
		case bareItemTypes[r.Type]:
			r.Type = "response_item"
		default:
			return r, nil
		}
		r.Payload = &p
	}
	return r, nil
}

func (r record) sub() string {
	if r.Payload == nil {
		return ""
	}
	return r.Payload.Type
}

func (r record) time() time.Time { return parseTS(r.Timestamp) }

// parseTSBytes is parseTS(string(b)) without the copy: the form Codex writes
// (2026-11-23T11:24:30.501Z, UTC, up to nine fraction digits) is read here,
// and anything else, or a date that does not exist, is left to parseTS.
func parseTSBytes(b []byte) time.Time {
	n := len(b)
	if n < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[n-1] != 'Z' {
		return parseTS(string(b))
	}
	num := func(i, w int) int {
		v := 0
		for _, c := range b[i : i+w] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day, hour, minute, sec := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	nsec := 0
	switch frac := b[19 : n-1]; {
	case len(frac) == 0:
	case len(frac) >= 2 && len(frac) <= 10 && frac[0] == '.':
		if nsec = num(20, len(frac)-1); nsec < 0 {
			return parseTS(string(b))
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	default:
		return parseTS(string(b))
	}
	if year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || sec < 0 {
		return parseTS(string(b))
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Year() != year || int(t.Month()) != month || t.Day() != day || t.Hour() != hour || t.Minute() != minute || t.Second() != sec {
		return parseTS(string(b)) // out of range: time.Parse says how
	}
	return t
}

func parseTS(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// sniff reads the envelope type, the payload type and the timestamp of a line
// without decoding it, relying on the key order Codex writes
// ({"timestamp":…,"ordinal":…,"type":…,"payload":{"type":…). The strings it looks
// for cannot occur inside a JSON string value (quotes there are escaped), so a
// match is structural. ok is false when the layout is not the expected one; the
// caller then decodes the line.
//
// ts points into line (parseTSBytes reads it without a copy).
func sniff(line []byte) (typ, sub string, ts []byte, ok bool) {
	const tsKey = `{"timestamp":"`
	if !bytes.HasPrefix(line, []byte(tsKey)) {
		return "", "", nil, false
	}
	rest := line[len(tsKey):]
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return "", "", nil, false
	}
	ts, rest = rest[:i], rest[i:]
	const typeKey = `"type":"`
	j := bytes.Index(rest, []byte(typeKey))
	if j < 0 || j > 64 { // only "ordinal":N may sit between timestamp and type
		return "", "", nil, false
	}
	rest = rest[j+len(typeKey):]
	k := bytes.IndexByte(rest, '"')
	if k < 0 {
		return "", "", nil, false
	}
	typ, rest = sniffName(rest[:k]), rest[k+1:]
	if typ == "event_msg" || typ == "response_item" {
		const pKey = `,"payload":{"type":"`
		if !bytes.HasPrefix(rest, []byte(pKey)) {
			return "", "", nil, false
		}
		rest = rest[len(pKey):]
		k = bytes.IndexByte(rest, '"')
		if k < 0 {
			return "", "", nil, false
		}
		sub = sniffName(rest[:k])
	}
	return typ, sub, ts, true
}

// sniffName is string(b) without an allocation for the record and payload
// types a rollout repeats on most of its lines (sniff runs on every line of a
// rollout indexed from its start).
func sniffName(b []byte) string {
	switch string(b) {
	case "event_msg":
		return "event_msg"
	case "response_item":
		return "response_item"
	case "turn_context":
		return "turn_context"
	case "token_count":
		return "token_count"
	case "function_call":
		return "function_call"
	case "function_call_output":
		return "function_call_output"
	case "custom_tool_call":
		return "custom_tool_call"
	case "custom_tool_call_output":
		return "custom_tool_call_output"
	case "message":
		return "message"
	case "reasoning":
		return "reasoning"
	case "agent_message":
		return "agent_message"
	case "agent_reasoning":
		return "agent_reasoning"
	case "user_message":
		return "user_message"
	case "item_completed":
		return "item_completed"
	case "task_started":
		return "task_started"
	case "task_complete":
		return "task_complete"
	case "thread_settings_applied":
		return "thread_settings_applied"
	case "exec_command_end":
		return "exec_command_end"
	case "session_meta":
		return "session_meta"
	case "world_state":
		return "world_state"
	case "token_usage_record":
		return "token_usage_record"
	}
	return string(b)
}

// injectedUser reports whether a response_item user message is context Codex
// injected rather than something the user typed.
func injectedUser(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range []string{"<environment_context>", "<user_instructions>", "<turn_aborted>", "<INSTRUCTIONS>", "# AGENTS.md instructions", "<user_shell_command>", "<subagent_notification>"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// rawString returns a JSON string's value, or the raw JSON for any other kind.
func rawString(b json.RawMessage) string {
	if len(b) == 0 || string(b) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	return string(b)
}

// shrinkJSON returns line with every string literal longer than max bytes
// replaced by "" — still valid JSON, with the same structure. session_meta carries
// ~20 KB of base_instructions nobody lists; skipping a string with IndexByte is far
// cheaper than encoding/json scanning it. A line it cannot follow is returned as is.
func shrinkJSON(line []byte, max int) []byte {
	out := make([]byte, 0, 1024)
	i := 0
	for {
		j := bytes.IndexByte(line[i:], '"')
		if j < 0 {
			return append(out, line[i:]...)
		}
		j += i
		k := j + 1 // find the closing quote: one not preceded by an odd run of '\'
		for {
			q := bytes.IndexByte(line[k:], '"')
			if q < 0 {
				return line
			}
			k += q
			bs := 0
			for p := k - 1; p > j && line[p] == '\\'; p-- {
				bs++
			}
			if bs%2 == 0 {
				break
			}
			k++
		}
		out = append(out, line[i:j]...)
		if k-j-1 > max {
			out = append(out, '"', '"')
		} else {
			out = append(out, line[j:k+1]...)
		}
		i = k + 1
	}
}
