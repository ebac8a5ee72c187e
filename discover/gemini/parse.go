package gemini

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/jsonl"
)

// maxPrompt bounds the stored first prompt; list shows 60 chars, status 200.
const maxPrompt = 2000

// maxReportPrompt bounds the prompt text kept to match an error report.
const maxReportPrompt = 64 << 10

// maxJSONFile bounds an older CLI's single-JSON session file read whole.
const maxJSONFile = 256 << 20

// usage is one API response's count, from the latest line of its gemini
// message id that carried tokens (docs/agents/gemini.md "Tokens").
type usage struct {
	Tokens discover.Tokens
	TS     time.Time
}

// msg is what the summary keeps of a message in the current (replayed) list.
type msg struct {
	ID     string
	Type   string // user | gemini | info | error | warning
	Prompt bool   // a user message with real text (not the CLI's own context)
	Result bool   // a user message holding only tool results
	Tools  int    // gemini: tool calls attached
	Empty  bool   // gemini: no text (a function call whose tool calls are not recorded yet)
	Text   string // error/warning/info text, cut
	TS     time.Time
}

// summary is what one session file says, replayed in order: Gemini 0.61's
// JSONL patch log (headers, $set, id-keyed messages, $rewindTo) or an older
// CLI's single JSON object.
type summary struct {
	ID          string
	ProjectHash string
	Kind        string // main | subagent ("" in older files)
	Start       time.Time
	Last        time.Time

	cur   []msg          // the current message list
	curAt map[string]int // id → index in cur

	usage      map[string]usage // per gemini message id, every id ever written
	usageOrder []string
	Model      string   // the latest gemini message's model
	Models     []string // every model, in order of first appearance

	prompts     map[string]bool // real prompt ids ever written
	FirstPrompt string

	pendingID  string // the last real prompt, while no gemini message followed it
	pending    failedTurn
	RolledBack bool       // that prompt was dropped by a $set.messages: the request failed
	Failed     failedTurn // the rolled-back prompt (Prompt, At, Until)

	BadUsage int // gemini messages with impossible counts, left out
	Bad      int // lines that did not parse
	Lines    int
	seq      int

	kept *outcomeOf // the outcome, when the summary comes from the parse index
}

func newSummary() *summary {
	return &summary{usage: map[string]usage{}, prompts: map[string]bool{}, curAt: map[string]int{}}
}

// rawTokens is a gemini message's tokens{} (usageMetadata per request).
type rawTokens struct {
	Input    *float64 `json:"input"`
	Output   *float64 `json:"output"`
	Cached   *float64 `json:"cached"`
	Thoughts *float64 `json:"thoughts"`
	Tool     *float64 `json:"tool"`
}

// rawMsg is a message as Gemini writes it, standalone or inside $set.messages.
type rawMsg struct {
	ID        string            `json:"id"`
	Timestamp string            `json:"timestamp"`
	Type      string            `json:"type"`
	Content   json.RawMessage   `json:"content"`
	Tokens    json.RawMessage   `json:"tokens"`
	Model     json.RawMessage   `json:"model"`
	ToolCalls []json.RawMessage `json:"toolCalls"`
}

// rawLine is the union of every line shape.
type rawLine struct {
	rawMsg
	SessionID   json.RawMessage `json:"sessionId"`
	ProjectHash json.RawMessage `json:"projectHash"`
	StartTime   json.RawMessage `json:"startTime"`
	LastUpdated json.RawMessage `json:"lastUpdated"`
	Kind        json.RawMessage `json:"kind"`
	Set         json.RawMessage `json:"$set"`
	RewindTo    json.RawMessage `json:"$rewindTo"`
	Messages    json.RawMessage `json:"messages"` // older single-JSON files
}

// str decodes a JSON string, "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}
	}
	return t.UTC()
}

func (s *summary) seen(t time.Time) {
	if !t.IsZero() && t.After(s.Last) {
		s.Last = t
	}
}

// readJSONL replays a JSONL session file. One bad line is skipped, never fatal.
func readJSONL(r io.Reader) (*summary, error) {
	s := newSummary()
	_, _, err := jsonl.Read(r, 0, func(line []byte, _ int64) error {
		s.feed(line)
		return nil
	})
	return s, err
}

// readJSONLUntil is readJSONL through buf (nil: a buffer of its own) under a
// listing's budget (discover.ReadLinesUntilWith): partial when the budget
// ended the read before the end of r.
func readJSONLUntil(r io.Reader, buf *jsonl.Buffer, b discover.Budget) (_ *summary, next int64, partial bool, _ error) {
	s := newSummary()
	next, _, partial, err := discover.ReadLinesUntilWith(buf, r, 0, b, func(line []byte, _ int64) error {
		s.feed(line)
		return nil
	})
	return s, next, partial, err
}

// readJSON reads an older CLI's single-JSON session file
// ({sessionId, projectHash, startTime, lastUpdated, messages:[…]}).
func readJSON(r io.Reader) (*summary, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxJSONFile))
	if err != nil {
		return nil, err
	}
	s := newSummary()
	s.feed(bytes.TrimSpace(b))
	return s, nil
}

// feed applies one line of the patch log (docs/agents/gemini.md "The format").
func (s *summary) feed(line []byte) {
	s.Lines++
	var l rawLine
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &l) != nil {
		s.Bad++
		return
	}
	switch {
	case len(l.RewindTo) > 0:
		s.rewind(str(l.RewindTo))
	case len(l.Set) > 0:
		var set rawLine
		if json.Unmarshal(l.Set, &set) != nil {
			s.Bad++
			return
		}
		s.meta(set)
		if len(set.Messages) > 0 {
			s.setMessages(set.Messages)
		}
	case l.ID != "":
		s.message(l.rawMsg, true)
	case len(l.SessionID) > 0:
		s.meta(l)
		if len(l.Messages) > 0 {
			s.setMessages(l.Messages)
		}
	default:
		s.Bad++
	}
}

// meta merges a header or a $set: the first non-empty id, the earliest
// startTime (a resume writes a second header with a later one), the latest
// lastUpdated.
func (s *summary) meta(l rawLine) {
	if id := str(l.SessionID); id != "" && s.ID == "" {
		s.ID = id
	}
	if h := str(l.ProjectHash); h != "" && s.ProjectHash == "" {
		s.ProjectHash = h
	}
	if k := str(l.Kind); k != "" {
		s.Kind = k
	}
	if t := parseTime(str(l.StartTime)); !t.IsZero() && (s.Start.IsZero() || t.Before(s.Start)) {
		s.Start = t
	}
	s.seen(parseTime(str(l.LastUpdated)))
}

// setMessages replaces the whole list ($set.messages). A prompt still waiting
// for its reply that the new list drops was rolled back: Gemini does that when
// the request fails (429, 401) and writes the error outside its home.
func (s *summary) setMessages(raw json.RawMessage) {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		s.Bad++
		return
	}
	pending := s.pendingID
	s.cur = s.cur[:0]
	clear(s.curAt)
	for _, r := range list {
		var m rawMsg
		if json.Unmarshal(r, &m) != nil {
			continue
		}
		s.message(m, false)
	}
	if pending != "" && !s.has(pending) {
		s.RolledBack, s.pendingID = true, ""
		s.Failed = s.pending
		s.Failed.Until = s.Last
	}
}

func (s *summary) has(id string) bool {
	_, ok := s.curAt[id]
	return ok
}

// rewind drops the message with this id and every later one ($rewindTo); an
// id not in the list drops them all, as the CLI's loader does. The dropped
// replies were billed all the same: their usage stays.
func (s *summary) rewind(id string) {
	i, ok := s.curAt[id]
	if !ok {
		i = 0
	}
	for _, d := range s.cur[i:] {
		if d.ID == s.pendingID {
			s.pendingID = "" // the user rewound it: not a failure
		}
		delete(s.curAt, d.ID)
	}
	s.cur = s.cur[:i]
	s.RolledBack = false
}

// message applies one message: a known id is replaced in place, a new one
// appended. live is false for messages re-stated inside $set.messages.
func (s *summary) message(m rawMsg, live bool) {
	s.seq++
	ts := parseTime(m.Timestamp)
	s.seen(ts)
	e := msg{ID: m.ID, Type: m.Type, TS: ts}
	if e.ID == "" {
		e.ID = "#" + itoa(s.seq)
	}
	switch m.Type {
	case "user":
		text, result := userContent(m.Content)
		e.Result = result && text == ""
		if isPrompt(text) {
			e.Prompt = true
			if !s.prompts[e.ID] {
				s.prompts[e.ID] = true
				if s.FirstPrompt == "" {
					s.FirstPrompt = discover.Truncate(strings.TrimSpace(text), maxPrompt)
				}
			}
			if live {
				s.pendingID, s.RolledBack = e.ID, false
				s.pending = failedTurn{Prompt: discover.Truncate(text, maxReportPrompt), At: ts}
			}
		}
	case "gemini":
		e.Tools = len(m.ToolCalls)
		e.Empty = strings.TrimSpace(contentText(m.Content)) == ""
		if live {
			s.pendingID = ""
		}
		if model := str(m.Model); model != "" {
			s.Model = model
			if !contains(s.Models, model) {
				s.Models = append(s.Models, model)
			}
		}
		s.tokens(e.ID, m.Tokens, ts)
	default:
		e.Text = discover.Truncate(contentText(m.Content), 500)
	}
	if i, ok := s.curAt[e.ID]; ok {
		s.cur[i] = e
		return
	}
	s.curAt[e.ID] = len(s.cur)
	s.cur = append(s.cur, e)
}

// tokens records a gemini message's count, replacing an earlier line's for the
// same id (a tool call re-writes the message); a line without tokens (a
// resume's re-stated history) leaves it alone.
func (s *summary) tokens(id string, raw json.RawMessage, ts time.Time) {
	if len(raw) == 0 || raw[0] != '{' {
		return
	}
	var t rawTokens
	if json.Unmarshal(raw, &t) != nil {
		s.BadUsage++
		return
	}
	v := func(p *float64) (int64, bool) {
		if p == nil {
			return 0, true
		}
		f := *p
		if f != math.Trunc(f) || f < 0 || f > discover.MaxTokensPerRequest {
			return 0, false
		}
		return int64(f), true
	}
	in, ok1 := v(t.Input)
	out, ok2 := v(t.Output)
	cached, ok3 := v(t.Cached)
	thoughts, ok4 := v(t.Thoughts)
	tool, ok5 := v(t.Tool)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || cached > in {
		s.BadUsage++
		return
	}
	u := usage{TS: ts, Tokens: discover.Tokens{
		Input:     in - cached + tool,
		Output:    out + thoughts,
		CacheRead: cached,
	}}
	if _, ok := s.usage[id]; !ok {
		s.usageOrder = append(s.usageOrder, id)
	}
	s.usage[id] = u
}

// Tokens sums one count per gemini message id.
func (s *summary) Tokens() (discover.Tokens, discover.Slots) {
	var t discover.Tokens
	var slots discover.Slots
	for _, id := range s.usageOrder {
		u := s.usage[id]
		t.Add(u.Tokens)
		if !u.TS.IsZero() {
			slots.Add(discover.SlotOfTime(u.TS), u.Tokens)
		}
	}
	return t, slots
}

// Prompts is how many distinct real prompts were written.
func (s *summary) Prompts() int { return len(s.prompts) }

// Substantive reports whether the file holds a conversation, not just a
// header and the CLI's context (a resume's stray file, a fresh TUI).
func (s *summary) Substantive() bool { return len(s.prompts) > 0 || len(s.usage) > 0 }

// outcome is how the latest turn stands (docs/agents/gemini.md "Status").
func (s *summary) outcome() (discover.Outcome, string) {
	if s.kept != nil {
		return s.kept.Outcome, s.kept.Detail
	}
	if s.RolledBack {
		// No reason on disk: Gemini writes the error report to the temp dir.
		return discover.OutcomeError, "the last prompt was rolled back without a reply (the request failed; Gemini keeps the reason outside its home)"
	}
	for i := len(s.cur) - 1; i >= 0; i-- {
		m := s.cur[i]
		switch m.Type {
		case "gemini":
			if m.Tools > 0 {
				return discover.OutcomeOpen, "interrupted after a tool call"
			}
			if m.Empty {
				// Gemini records tool calls only once they complete: an empty
				// reply is a function call running or awaiting approval.
				return discover.OutcomeOpen, "interrupted in a tool call (running or awaiting approval)"
			}
			return discover.OutcomeDone, "done"
		case "user":
			if m.Prompt {
				return discover.OutcomeOpen, "interrupted: the last prompt has no reply"
			}
			if m.Result {
				return discover.OutcomeOpen, "interrupted after a tool result"
			}
		case "error":
			return discover.ErrorOutcome(m.Text)
		}
	}
	if len(s.prompts) == 0 {
		return discover.OutcomeNone, "no prompt"
	}
	return discover.OutcomeDone, "done"
}

// askedTools is when the model's latest answer asked for tool calls that have
// not completed (an empty gemini message whose response was counted: Gemini
// records the calls only once they complete), or zero.
func (s *summary) askedTools() time.Time {
	if s.kept != nil {
		return s.kept.Asked // from the parse index: the message list is not kept
	}
	for i := len(s.cur) - 1; i >= 0; i-- {
		m := s.cur[i]
		switch m.Type {
		case "gemini":
			if _, counted := s.usage[m.ID]; counted && m.Empty && m.Tools == 0 {
				return m.TS
			}
			return time.Time{}
		case "user", "error":
			return time.Time{}
		}
	}
	return time.Time{}
}

// userContent returns the text of a user message and whether it holds tool
// results (functionResponse parts). Content is a string or a list of parts.
func userContent(raw json.RawMessage) (text string, result bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		return str(raw), false
	}
	var parts []struct {
		Text             *string         `json:"text"`
		FunctionResponse json.RawMessage `json:"functionResponse"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var texts []string
	for _, p := range parts {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
		if len(p.FunctionResponse) > 0 {
			result = true
		}
	}
	return strings.Join(texts, ""), result
}

// contentText is the text of any content (a string or parts with text).
func contentText(raw json.RawMessage) string {
	t, _ := userContent(raw)
	return t
}

// isPrompt is the CLI's own isIgnoredUserContent turned round: its injected
// <session_context>/<hook_context>, slash and ? commands, and empty text are
// not prompts.
func isPrompt(text string) bool {
	t := strings.TrimSpace(text)
	if t == "" {
		return false
	}
	for _, p := range []string{"<session_context>", "<hook_context>", "/", "?"} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	return true
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
