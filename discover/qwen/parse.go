package qwen

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/jsonl"
)

// record is one line of a chat file (docs/agents/qwen.md §2). Every line
// carries the base fields; the rest depends on type and subtype.
type record struct {
	UUID          string          `json:"uuid"`
	SessionID     string          `json:"sessionId"`
	Timestamp     string          `json:"timestamp"`
	Type          string          `json:"type"`
	Subtype       string          `json:"subtype"`
	Provenance    *string         `json:"provenance"`
	Cwd           string          `json:"cwd"`
	Version       string          `json:"version"`
	GitBranch     string          `json:"gitBranch"`
	Model         string          `json:"model"`
	Message       *message        `json:"message"`
	SystemPayload json.RawMessage `json:"systemPayload"`
	ForkedFrom    json.RawMessage `json:"forkedFrom"`
}

type message struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

type part struct {
	Text             *string       `json:"text"`
	Thought          bool          `json:"thought"`
	FunctionCall     *functionCall `json:"functionCall"`
	FunctionResponse *functionResp `json:"functionResponse"`
}

type functionCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type functionResp struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// uiEvent is the telemetry a ui_telemetry record carries. Counts are decoded
// leniently (count): a damaged one leaves its response out of the totals.
type uiEvent struct {
	Name         string `json:"event.name"`
	ResponseID   string `json:"response_id"`
	Model        string `json:"model"`
	StatusCode   count  `json:"status_code"`
	Input        count  `json:"input_token_count"`
	Output       count  `json:"output_token_count"`
	Cached       count  `json:"cached_content_token_count"`
	ErrorMessage string `json:"error_message"`
	ErrorType    string `json:"error_type"`
	SubagentName string `json:"subagent_name"`
	// tool_call
	CallID   string `json:"call_id"`
	Function string `json:"function_name"`
	Status   string `json:"status"`
}

// count is a token count or status code: a JSON number holding an integer.
// Anything else (a string, a fraction, a huge value) decodes as bad, never as
// an error that would lose the rest of the record.
type count struct {
	N       int64
	Present bool
	Bad     bool
}

func (c *count) UnmarshalJSON(b []byte) error {
	c.Present = true
	if string(b) == "null" {
		c.Present = false
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil || f != float64(int64(f)) {
			c.Bad = true
			return nil
		}
		n = int64(f)
	}
	c.N = n
	return nil
}

// Turn outcomes, as the transcript tells (tail of the latest turn).
const (
	lastNone       = iota // no prompt yet
	lastPrompt            // a prompt, nothing answered yet
	lastToolCall          // the model asked for a tool; no result yet
	lastToolResult        // a tool answered; the model has not yet
	lastReply             // the model answered in text: the turn is done
)

// summary is what a chat file says about its session: the pure parse.
type summary struct {
	ID        string
	Cwd       string
	GitBranch string
	Version   string
	Model     string
	Models    []string
	Prompt    string
	Prompts   int
	Started   time.Time
	Activity  time.Time

	// Tokens sum every api_response once by response_id (FACTS §2 "Tokens"):
	// Main the session's own turns, Sub its background subagents' (the
	// memory extractor), Inherited what a fork copied from its source.
	Main, Sub, Inherited discover.Tokens
	Responses            int
	BadUsage             int
	Slots                discover.Slots
	// Seen holds a hash of every response_id counted (the parse index keeps
	// it, so that appended lines are deduplicated against the whole file).
	Seen map[uint64]bool

	// The latest turn: Last is the kind of its last conversation record, LastTS
	// when it was written; ErrAfter is the last main-turn api_error written after
	// it ("" when none), ErrStatus its HTTP status.
	Last        int
	LastTS      time.Time
	ErrAfter    string
	ErrStatus   int64
	PendingTool string // name of the tool of an unanswered call
}

// Tokens is the session's total: its own, its subagents' and what it inherited.
func (s *summary) Tokens() discover.Tokens {
	t := s.Main
	t.Add(s.Sub)
	return t
}

// clone copies a summary so that the index's copy is never mutated.
func (s summary) clone() summary {
	s.Models = append([]string(nil), s.Models...)
	s.Slots = s.Slots.Clone()
	seen := make(map[uint64]bool, len(s.Seen))
	for k := range s.Seen {
		seen[k] = true
	}
	s.Seen = seen
	return s
}

// parse reads a whole chat file. A line that does not parse is skipped; a final
// line without its newline is still being written and is left for later.
func parse(r io.Reader) (*summary, error) {
	s := &summary{}
	_, _, err := jsonl.Read(r, 0, func(line []byte, _ int64) error {
		s.feed(line)
		return nil
	})
	return s, err
}

// feed adds one line. It never panics and ignores what it cannot read.
func (s *summary) feed(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		if _, ok := err.(*json.UnmarshalTypeError); !ok {
			return
		}
		// A field of an unexpected type: keep what did decode.
	}
	ts, tsOK := parseTS(r.Timestamp)
	if tsOK {
		if s.Started.IsZero() || ts.Before(s.Started) {
			s.Started = ts
		}
		if ts.After(s.Activity) {
			s.Activity = ts
		}
	}
	if s.ID == "" && r.SessionID != "" {
		s.ID = r.SessionID
	}
	if s.Cwd == "" && r.Cwd != "" {
		s.Cwd = r.Cwd
	}
	if r.GitBranch != "" {
		s.GitBranch = r.GitBranch
	}
	if r.Version != "" {
		s.Version = r.Version
	}
	switch r.Type {
	case "user":
		if !realPrompt(&r) {
			return
		}
		s.Prompts++
		if s.Prompt == "" {
			s.Prompt = promptText(&r)
		}
		s.turn(lastPrompt, ts)
	case "assistant":
		if r.Model != "" {
			s.useModel(r.Model)
		}
		kind := lastReply
		if r.Message != nil {
			for _, p := range r.Message.Parts {
				if p.FunctionCall != nil {
					kind = lastToolCall
					s.PendingTool = p.FunctionCall.Name
				}
			}
		}
		s.turn(kind, ts)
	case "tool_result":
		s.turn(lastToolResult, ts)
	case "system":
		if r.Subtype == "ui_telemetry" {
			s.telemetry(&r, ts)
		}
	}
}

// turn notes a conversation record of the latest turn.
func (s *summary) turn(kind int, ts time.Time) {
	s.Last, s.LastTS, s.ErrAfter, s.ErrStatus = kind, ts, "", 0
	if kind != lastToolCall {
		s.PendingTool = ""
	}
}

func (s *summary) useModel(m string) {
	s.Model = m
	for _, x := range s.Models {
		if x == m {
			return
		}
	}
	s.Models = append(s.Models, m)
}

// telemetry handles a ui_telemetry record: api_response usage (each response
// once by response_id; FACTS §2) and api_error (the latest turn's failure).
func (s *summary) telemetry(r *record, ts time.Time) {
	var p struct {
		UIEvent *uiEvent `json:"uiEvent"`
	}
	if len(r.SystemPayload) == 0 {
		return
	}
	if err := json.Unmarshal(r.SystemPayload, &p); err != nil {
		if _, ok := err.(*json.UnmarshalTypeError); !ok {
			return
		}
	}
	if p.UIEvent == nil {
		return
	}
	e := p.UIEvent
	switch e.Name {
	case "qwen-code.api_response":
		if e.ResponseID != "" {
			h := fnv.New64a()
			h.Write([]byte(e.ResponseID))
			k := h.Sum64()
			if s.Seen[k] {
				return
			}
			if s.Seen == nil {
				s.Seen = map[uint64]bool{}
			}
			s.Seen[k] = true
		}
		if e.Input.Bad || e.Output.Bad || e.Cached.Bad || !discover.UsageOK(e.Input.N, e.Output.N, e.Cached.N) || e.Cached.N > e.Input.N {
			s.BadUsage++
			return
		}
		// prompt_tokens includes the cached ones; completion_tokens the reasoning.
		t := discover.Tokens{Input: e.Input.N - e.Cached.N, Output: e.Output.N, CacheRead: e.Cached.N}
		s.Responses++
		if e.SubagentName != "" {
			s.Sub.Add(t)
		} else {
			s.Main.Add(t)
			if e.Model != "" && len(r.ForkedFrom) == 0 {
				s.useModel(e.Model)
			}
		}
		if len(r.ForkedFrom) > 0 && string(r.ForkedFrom) != "null" {
			s.Inherited.Add(t)
		}
		if !ts.IsZero() {
			s.Slots.Add(discover.SlotOfTime(ts), t)
		}
	case "qwen-code.api_error":
		if e.SubagentName != "" || s.Last == lastNone || s.Last == lastReply {
			// A background call's failure, or one after the turn was answered,
			// says nothing about whether the turn succeeded.
			return
		}
		msg := strings.TrimSpace(e.ErrorMessage)
		if msg == "" {
			msg = e.ErrorType
		}
		if msg == "" {
			msg = "API error"
		}
		s.ErrAfter, s.ErrStatus = msg, e.StatusCode.N
	}
}

// realPrompt reports whether a user record is something the user typed: the
// CLI stamps those provenance real_user (older files have no provenance), and
// keeps notifications, cron prompts and goal messages apart by subtype.
func realPrompt(r *record) bool {
	if r.Provenance != nil && *r.Provenance != "real_user" {
		return false
	}
	return r.Subtype == "" || r.Subtype == "mid_turn_user_message"
}

// hookOpen starts the context a UserPromptSubmit hook appends to a prompt as
// its last part; it is not what the user typed.
const hookOpen = "<qwen:user-prompt-submit-context>"

// promptText is what the user typed: the display text the CLI kept beside an
// expanded prompt, else the text parts without a trailing hook context.
func promptText(r *record) string {
	var p struct {
		DisplayText *string `json:"displayText"`
	}
	if len(r.SystemPayload) > 0 && json.Unmarshal(r.SystemPayload, &p) == nil && p.DisplayText != nil {
		return strings.TrimSpace(*p.DisplayText)
	}
	if r.Message == nil {
		return ""
	}
	parts := r.Message.Parts
	if n := len(parts); n > 1 && parts[n-1].Text != nil && strings.HasPrefix(strings.TrimSpace(*parts[n-1].Text), hookOpen) {
		parts = parts[:n-1]
	}
	var texts []string
	for _, p := range parts {
		if p.Text != nil && !p.Thought {
			texts = append(texts, *p.Text)
		}
	}
	return strings.TrimSpace(strings.Join(texts, "\n"))
}

func parseTS(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// outcome is how the latest turn stands for a session no live process hosts.
func (s *summary) outcome() (discover.Outcome, string) {
	switch {
	case s.Last == lastNone:
		return discover.OutcomeNone, "no prompt"
	case s.Last == lastReply:
		return discover.OutcomeDone, "last turn answered"
	case s.ErrAfter != "":
		return discover.OutcomeError, s.ErrAfter
	}
	return discover.OutcomeOpen, "ends mid-turn (" + s.lastName() + ")"
}

func (s *summary) lastName() string {
	switch s.Last {
	case lastPrompt:
		return "prompt unanswered"
	case lastToolCall:
		return "tool call " + s.PendingTool + " unanswered"
	case lastToolResult:
		return "tool result not yet answered"
	}
	return "no prompt"
}

// blocked is the blocked reason of a turn that ended in an API error: by the
// HTTP status Qwen recorded, else by the message.
func (s *summary) blocked() string {
	switch s.ErrStatus {
	case 429:
		return discover.BlockedQuota
	case 401, 403:
		return discover.BlockedAuth
	}
	return discover.BlockedBy(s.ErrAfter)
}
