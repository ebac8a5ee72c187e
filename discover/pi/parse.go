package pi

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// header is line 1 of a session file, the only line without id/parentId.
type header struct {
	Type          string `json:"type"`
	Version       int    `json:"version,omitempty"`
	ID            string `json:"id"`
	Timestamp     string `json:"timestamp"`
	Cwd           string `json:"cwd"`
	ParentSession string `json:"parentSession,omitempty"`
	// pi-rust only (docs/agents/pi.md §9): model fields in the header and an alias of parentSession.
	BranchedFrom  string `json:"branchedFrom,omitempty"`
	Provider      string `json:"provider,omitempty"`
	ModelID       string `json:"modelId,omitempty"`
	ThinkingLevel string `json:"thinkingLevel,omitempty"`
}

// usage is an assistant message's usage; cost may be an object or a bare number.
type usage struct {
	Input      int64     `json:"input"`
	Output     int64     `json:"output"`
	CacheRead  int64     `json:"cacheRead"`
	CacheWrite int64     `json:"cacheWrite"`
	Cost       costTotal `json:"cost"`
}

type costTotal float64

func (c *costTotal) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] == 'n' {
		return nil
	}
	if b[0] != '{' {
		var f float64
		if err := json.Unmarshal(b, &f); err != nil {
			return nil // a malformed cost is not worth losing the line over
		}
		*c = costTotal(f)
		return nil
	}
	var o struct {
		Total float64 `json:"total"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return nil
	}
	*c = costTotal(o.Total)
	return nil
}

// msTime is a Unix-ms timestamp (message.timestamp); tolerant of floats and strings.
type msTime int64

func (m *msTime) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err == nil {
		*m = msTime(f)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			*m = msTime(t.UnixMilli())
		}
	}
	return nil
}

func (m msTime) time() time.Time {
	if m <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(m)).UTC()
}

// sumMessage is the part of a nested message the listing needs. It has no content
// field on purpose: tool results and images can be megabytes, and the listing never
// needs them (the first prompt is decoded separately, once).
type sumMessage struct {
	Role         string `json:"role"`
	Provider     string `json:"provider"`
	Model        string `json:"model"`
	Usage        *usage `json:"usage"`
	StopReason   string `json:"stopReason"`
	ErrorMessage string `json:"errorMessage"`
	Timestamp    msTime `json:"timestamp"`
}

type sumEntry struct {
	Type      string      `json:"type"`
	ID        string      `json:"id"`
	Timestamp string      `json:"timestamp"`
	Provider  string      `json:"provider"`
	ModelID   string      `json:"modelId"`
	Name      *string     `json:"name"`
	Message   *sumMessage `json:"message"`
}

// leaf is the last conversation message in the file: what status derives from.
type leaf struct {
	Role         string    `json:"role,omitempty"`
	StopReason   string    `json:"stop_reason,omitempty"`
	ErrorMessage string    `json:"error_message,omitempty"`
	At           time.Time `json:"at,omitzero"`
}

// final reports whether the leaf is a finished assistant turn (docs/agents/pi.md §4.2).
func (l leaf) final() bool {
	if l.Role != "assistant" {
		return false
	}
	switch l.StopReason {
	case "stop", "length", "error", "aborted":
		return true
	}
	return false
}

// maxPrompt bounds the stored first prompt; list shows 60 chars, status 200.
const maxPrompt = 2000

// summary is everything `list` needs from one session file. It is built by one
// forward pass over complete lines and can be resumed from Off when the file grew
// (pi only appends), which is what makes it cacheable by (dev, inode, size, mtime).
type summary struct {
	Off      int64  `json:"off"`
	HeaderOK bool   `json:"header_ok"`
	Header   header `json:"header"`

	Model       string          `json:"model,omitempty"`
	Models      []string        `json:"models,omitempty"`
	Title       string          `json:"title,omitempty"`
	Prompt      string          `json:"prompt,omitempty"`
	PromptSeen  bool            `json:"prompt_seen,omitempty"`
	Tokens      discover.Tokens `json:"tokens"`
	Cost        float64         `json:"cost"`
	Users       int             `json:"users"`
	Assistants  int             `json:"assistants"`
	ToolResults int             `json:"tool_results"`
	LastMsgAt   time.Time       `json:"last_msg_at,omitzero"`
	LastEntryAt time.Time       `json:"last_entry_at,omitzero"`
	Leaf        leaf            `json:"leaf"`
	// ErrStreak counts the assistant errors ending the file with nothing between
	// them: pi writes one per failed attempt while it retries (pi.go retrying).
	ErrStreak int `json:"err_streak,omitempty"`
	Bad       int `json:"bad,omitempty"` // complete lines that did not parse
	// BadUsage counts assistant usage records with a negative or impossible
	// token count, left out of the totals (issue 19).
	BadUsage int `json:"bad_usage,omitempty"`
	// TooLong counts lines over jsonl.MaxLine, skipped as unreadable (kept,
	// so that every run names the file: docs/reading-limits.md).
	TooLong int `json:"too_long,omitempty"`
	// Slots spread Tokens over time: each assistant message's usage in the slot
	// of its time (the later of message and entry time, as for activity).
	Slots discover.Slots `json:"slots,omitempty"`
}

// maxModels bounds the distinct models remembered per session.
const maxModels = 8

// setModel records provider/model as the current model. Its arguments may
// alias a reused line buffer (scanEntry): what it keeps is a copy.
func (s *summary) setModel(provider, model string) {
	if model == "" {
		return
	}
	if sameModel(s.Model, provider, model) {
		return // already the current model, so already in Models
	}
	var m string
	if provider != "" {
		m = provider + "/" + model
	} else {
		m = strings.Clone(model)
	}
	s.Model = m
	for _, x := range s.Models {
		if x == m {
			return
		}
	}
	if len(s.Models) < maxModels {
		s.Models = append(s.Models, m)
	}
}

// sameModel reports whether m is what setModel makes of provider and model.
func sameModel(m, provider, model string) bool {
	if provider == "" {
		return m == model
	}
	return len(m) == len(provider)+1+len(model) && m[len(provider)] == '/' &&
		m[:len(provider)] == provider && m[len(provider)+1:] == model
}

// keep returns a copy of v (which may alias a line buffer) unless it equals
// old, which is then reused.
func keep(v, old string) string {
	if v == old {
		return old
	}
	switch v { // the values that alternate from message to message
	case "":
		return ""
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "toolResult":
		return "toolResult"
	case "stop":
		return "stop"
	case "toolUse":
		return "toolUse"
	case "length":
		return "length"
	case "error":
		return "error"
	case "aborted":
		return "aborted"
	}
	return strings.Clone(v)
}

func later(a time.Time, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// feed folds one complete line into the summary.
func (s *summary) feed(line []byte) {
	if !s.HeaderOK {
		var h header
		if err := json.Unmarshal(line, &h); err != nil || h.Type != "session" || h.ID == "" {
			s.Bad++
			return
		}
		if h.Version == 0 {
			h.Version = 1 // docs/agents/pi.md §2: a header without version is v1
		}
		s.Header, s.HeaderOK = h, true
		s.setModel(h.Provider, h.ModelID)
		return
	}
	if len(line) > bigLine && s.feedBig(line) {
		return
	}
	var e sumEntry
	var b entryBuf
	var m sumMessage
	var u usage
	var name string
	ok := scanEntryInto(line, &e, &b, &m, &u, &name)
	if b.hasName {
		e.Name = &name
	}
	if b.hasMessage {
		e.Message = &m
		if b.hasUsage {
			m.Usage = &u
		}
	}
	if !ok {
		d := new(sumEntry)
		if err := json.Unmarshal(line, d); err != nil {
			s.Bad++
			return
		}
		e, b = *d, entryBuf{}
	}
	if ts, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil {
		s.LastEntryAt = later(s.LastEntryAt, ts.UTC())
	}
	switch e.Type {
	case "model_change":
		s.setModel(e.Provider, e.ModelID)
	case "session_info":
		if e.Name != nil {
			s.Title = keep(*e.Name, s.Title)
		}
	case "message":
		if e.Message == nil {
			return
		}
		s.feedMessage(e, line, b.content, b.contentKnown)
	}
}

// feedMessage folds a message entry into the summary; content is
// message.content where scanEntryInto could tell it (contentKnown).
func (s *summary) feedMessage(e sumEntry, line, content []byte, contentKnown bool) {
	m := e.Message
	at := m.Timestamp.time()
	// An assistant's message.timestamp is when its call started; the entry time is
	// when it was written. Activity is the later of the two.
	if ts, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil {
		at = later(at, ts.UTC())
	}
	switch m.Role {
	case "user":
		s.Users++
		if !s.PromptSeen {
			s.PromptSeen = true
			if contentKnown {
				s.Prompt = discover.Truncate(contentText(content, false), maxPrompt)
			} else {
				s.Prompt = discover.Truncate(firstPrompt(line), maxPrompt)
			}
		}
	case "assistant":
		s.Assistants++
		switch {
		case m.Usage == nil:
		case discover.UsageOK(m.Usage.Input, m.Usage.Output, m.Usage.CacheRead, m.Usage.CacheWrite):
			t := discover.Tokens{Input: m.Usage.Input, Output: m.Usage.Output,
				CacheRead: m.Usage.CacheRead, CacheWrite: m.Usage.CacheWrite}
			s.Tokens.Add(t)
			when := at
			if when.IsZero() {
				when = s.LastMsgAt
			}
			if !when.IsZero() {
				s.Slots.Add(discover.SlotOfTime(when), t)
			}
			s.Cost += float64(m.Usage.Cost)
		default:
			s.BadUsage++
		}
		s.setModel(m.Provider, m.Model)
	case "toolResult":
		s.ToolResults++
	default:
		// bashExecution, custom, summaries: activity but not a turn state.
		s.LastMsgAt = later(s.LastMsgAt, at)
		return
	}
	s.LastMsgAt = later(s.LastMsgAt, at)
	s.Leaf = leaf{Role: keep(m.Role, s.Leaf.Role), StopReason: keep(m.StopReason, s.Leaf.StopReason),
		ErrorMessage: keep(m.ErrorMessage, s.Leaf.ErrorMessage), At: at}
	if m.Role == "assistant" && m.StopReason == "error" {
		s.ErrStreak++
	} else {
		s.ErrStreak = 0
	}
}

// firstPrompt decodes a user message's text (string or blocks).
func firstPrompt(line []byte) string {
	var e struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &e) != nil {
		return ""
	}
	return contentText(e.Message.Content, false)
}

// block is one content block of any role.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// contentText joins the text blocks of a content field (a string is taken as is).
// Images become "[image]" when withImages is set.
func contentText(raw json.RawMessage, withImages bool) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image":
			if withImages {
				parts = append(parts, "[image]")
			}
		}
	}
	return strings.Join(parts, "\n")
}

// activity is last_activity per docs/agents/pi.md §3.
func (s *summary) activity() time.Time {
	switch {
	case !s.LastMsgAt.IsZero():
		return s.LastMsgAt
	case !s.LastEntryAt.IsZero():
		return s.LastEntryAt
	}
	return s.started()
}

func (s *summary) started() time.Time {
	t, err := time.Parse(time.RFC3339Nano, s.Header.Timestamp)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// newestEntry is the newest entry time, for the resumed-session attribution rule.
func (s *summary) newestEntry() time.Time {
	return later(s.LastEntryAt, s.LastMsgAt)
}

// bigLine is the size above which a tool result (or a later user message) is not
// decoded: its content is all that makes it big, and the listing never needs it.
const bigLine = 64 << 10

// feedBig handles a big message line from its first bytes only. pi writes the
// entry's own fields, then "message" with "role" first; anything else (or a line
// that is not a complete object) takes the normal path.
func (s *summary) feedBig(line []byte) bool {
	head := line[:min(len(line), 512)]
	if line[len(line)-1] != '}' || !bytes.HasPrefix(head, []byte(`{"type":"message",`)) {
		return false
	}
	role := ""
	switch {
	case bytes.Contains(head, []byte(`"message":{"role":"toolResult"`)):
		role = "toolResult"
	case s.PromptSeen && bytes.Contains(head, []byte(`"message":{"role":"user"`)):
		role = "user"
	default:
		return false
	}
	_, rest, ok := bytes.Cut(head, []byte(`"timestamp":"`))
	if !ok {
		return false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return false
	}
	at, err := time.Parse(time.RFC3339Nano, string(rest[:end]))
	if err != nil {
		return false
	}
	at = at.UTC()
	s.LastEntryAt = later(s.LastEntryAt, at)
	s.LastMsgAt = later(s.LastMsgAt, at)
	if role == "user" {
		s.Users++
	} else {
		s.ToolResults++
	}
	s.Leaf = leaf{Role: role, At: at}
	s.ErrStreak = 0
	return true
}
