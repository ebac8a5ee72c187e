package copilot

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/jsonl"
)

// event is one line of events.jsonl: {"type","data","id","timestamp","parentId"}.
type event struct {
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
}

// evContext is the context of session.start and session.resume.
type evContext struct {
	Cwd    string `json:"cwd"`
	Branch string `json:"branch"`
}

type evStart struct {
	SessionID      string    `json:"sessionId"`
	CopilotVersion string    `json:"copilotVersion"`
	StartTime      string    `json:"startTime"`
	SelectedModel  string    `json:"selectedModel"`
	Context        evContext `json:"context"`
}

type evResume struct {
	SelectedModel string    `json:"selectedModel"`
	Context       evContext `json:"context"`
}

type evModelChange struct {
	NewModel string `json:"newModel"`
}

type evUser struct {
	Content string `json:"content"`
}

type evAssistant struct {
	Model        string            `json:"model"`
	Content      string            `json:"content"`
	ToolRequests []json.RawMessage `json:"toolRequests"`
}

// usageCounts are the token fields of session.usage_record and of
// session.shutdown's modelMetrics: inputTokens INCLUDES the cache reads and
// writes (docs/agents/copilot.md "Tokens").
type usageCounts struct {
	InputTokens      int64 `json:"inputTokens"`
	OutputTokens     int64 `json:"outputTokens"`
	CacheReadTokens  int64 `json:"cacheReadTokens"`
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
}

// tokens maps Copilot's counts to agentctl's four disjoint classes; ok is false
// when they cannot be true (a negative or absurd count, or caches larger than
// the input that includes them).
func (u usageCounts) tokens() (discover.Tokens, bool) {
	t := discover.Tokens{
		Input:      u.InputTokens - u.CacheReadTokens - u.CacheWriteTokens,
		Output:     u.OutputTokens,
		CacheRead:  u.CacheReadTokens,
		CacheWrite: u.CacheWriteTokens,
	}
	ok := discover.UsageOK(u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens) &&
		discover.UsageOK(t.Input)
	return t, ok
}

type evUsage struct {
	Usage struct {
		usageCounts
		Model      string `json:"model"`
		APICallID  string `json:"apiCallId"`
		Initiator  string `json:"initiator"`
		ParentTool string `json:"parentToolCallId"`
		Accounting struct {
			UsageID string `json:"usageId"`
		} `json:"accounting"`
	} `json:"usage"`
}

type evShutdown struct {
	ShutdownType string `json:"shutdownType"`
	ErrorReason  string `json:"errorReason"`
	ModelMetrics map[string]struct {
		Usage usageCounts `json:"usage"`
	} `json:"modelMetrics"`
}

type evError struct {
	ErrorType  string `json:"errorType"`
	Message    string `json:"message"`
	StatusCode int    `json:"statusCode"`
}

// summary is what one events.jsonl says about its session.
type summary struct {
	ID            string // session.start sessionId
	Cwd           string // session.start context.cwd
	LastCwd       string // the latest session.resume context.cwd
	Branch        string
	Version       string
	SelectedModel string   // the latest model selected (start, resume, model_change)
	Models        []string // the models that answered, in order of first use
	Prompt        string   // the first user.message
	Prompts       int
	Started       time.Time // session.start startTime
	Last          time.Time // the latest event timestamp

	// Tokens sum the session.usage_record events, each usageId once.
	Tokens   discover.Tokens
	Sub      discover.Tokens // the part sub-agents spent (initiator "sub-agent" or a parentToolCallId)
	Slots    discover.Slots
	Usage    int // usage records counted
	BadUsage int // usage records left out: undecodable or impossible counts
	// ShutdownTokens are the latest session.shutdown's modelMetrics: CUMULATIVE
	// over the whole session, so only ever a fallback, never added.
	ShutdownTokens discover.Tokens
	HaveShutdown   bool

	Err   evError // the latest session.error
	Crash string  // errorReason of the latest shutdown of type "error"

	// Pending permission requests (requestId → event number): a live session
	// with one is waiting on the user.
	Pending map[string]int

	// Positions (1-based event numbers; 0: none) that decide how the latest
	// turn stands.
	Seq, LastUser, LastAssistant, LastError, LastTurnStart, LastTurnEnd int
	LastProcStart, LastShutdown, LastAbort, LastCrash                   int
	AssistantTools                                                      bool // the latest assistant message asked for tools
	Bad                                                                 int  // undecodable lines skipped

	seen map[string]bool // usageIds counted
}

// parseEvents reads an events.jsonl stream. A bad line or value is skipped and
// never ends the parse; an unterminated last line is still being written and
// is left for the next read.
func parseEvents(r io.Reader) (*summary, error) {
	s, _, err := parseEventsAt(r)
	return s, err
}

// parseEventsAt is parseEvents that also returns the end of the last complete
// line (where the parse stopped).
func parseEventsAt(r io.Reader) (*summary, int64, error) {
	s := &summary{}
	next, _, err := jsonl.Read(r, 0, func(line []byte, _ int64) error {
		s.feed(line)
		return nil
	})
	s.seen = nil
	return s, next, err
}

// parseEventsUntil is parseEventsAt under a listing's time budget
// (discover.ReadLinesUntil): partial is true when the budget ended the read
// before the end of r.
func parseEventsUntil(r io.Reader, b discover.Budget) (s *summary, next int64, partial bool, err error) {
	s = &summary{}
	next, _, partial, err = discover.ReadLinesUntil(r, 0, b, func(line []byte, _ int64) error {
		s.feed(line)
		return nil
	})
	s.seen = nil
	return s, next, partial, err
}

// feed applies one line.
func (s *summary) feed(line []byte) {
	var e event
	if json.Unmarshal(line, &e) != nil || e.Type == "" {
		s.Bad++
		return
	}
	s.Seq++
	ts := parseTime(e.Timestamp)
	if ts.After(s.Last) {
		s.Last = ts
	}
	switch e.Type {
	case "session.start":
		clear(s.Pending)
		var d evStart
		if json.Unmarshal(e.Data, &d) != nil {
			s.Bad++
			return
		}
		if s.ID == "" {
			s.ID = d.SessionID
		}
		if s.Cwd == "" {
			s.Cwd = d.Context.Cwd
		}
		if t := parseTime(d.StartTime); !t.IsZero() && (s.Started.IsZero() || t.Before(s.Started)) {
			s.Started = t
		}
		s.setSelected(d.SelectedModel)
		s.Branch = nonEmpty(d.Context.Branch, s.Branch)
		s.Version = nonEmpty(d.CopilotVersion, s.Version)
		s.LastProcStart = s.Seq
	case "session.resume":
		clear(s.Pending)
		var d evResume
		if json.Unmarshal(e.Data, &d) != nil {
			s.Bad++
			return
		}
		if d.Context.Cwd != "" {
			s.LastCwd = d.Context.Cwd
		}
		s.setSelected(d.SelectedModel)
		s.Branch = nonEmpty(d.Context.Branch, s.Branch)
		s.LastProcStart = s.Seq
	case "session.model_change":
		var d evModelChange
		if json.Unmarshal(e.Data, &d) == nil {
			s.setSelected(d.NewModel)
		}
	case "user.message":
		var d evUser
		if json.Unmarshal(e.Data, &d) != nil {
			s.Bad++
			return
		}
		p := strings.TrimSpace(d.Content)
		if p == "" {
			return
		}
		if s.Prompt == "" {
			s.Prompt = p
		}
		s.Prompts++
		s.LastUser = s.Seq
	case "assistant.message":
		var d evAssistant
		if json.Unmarshal(e.Data, &d) != nil {
			s.Bad++
			return
		}
		s.addModel(d.Model)
		s.LastAssistant = s.Seq
		s.AssistantTools = len(d.ToolRequests) > 0
	case "assistant.turn_start":
		s.LastTurnStart = s.Seq
	case "assistant.turn_end":
		s.LastTurnEnd = s.Seq
	case "session.usage_record":
		s.usage(e, ts)
	case "session.error":
		var d evError
		if json.Unmarshal(e.Data, &d) != nil {
			// Still an error: what it was is unknown.
			d = evError{Message: "session.error"}
		}
		s.Err = d
		s.LastError = s.Seq
	case "abort":
		s.LastAbort = s.Seq
	case "permission.requested", "permission.completed":
		var d struct {
			RequestID string `json:"requestId"`
		}
		if json.Unmarshal(e.Data, &d) != nil || d.RequestID == "" {
			return
		}
		if e.Type == "permission.completed" {
			delete(s.Pending, d.RequestID)
			return
		}
		if s.Pending == nil {
			s.Pending = map[string]int{}
		}
		s.Pending[d.RequestID] = s.Seq
	case "session.shutdown":
		s.LastShutdown = s.Seq
		clear(s.Pending) // the process that asked is gone
		var d evShutdown
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		if d.ShutdownType == "error" {
			s.Crash, s.LastCrash = nonEmpty(d.ErrorReason, "crash"), s.Seq
		}
		var total discover.Tokens
		ok := true
		for _, m := range d.ModelMetrics {
			t, good := m.Usage.tokens()
			ok = ok && good
			total.Add(t)
		}
		if ok {
			// The latest replaces the earlier: each is the total so far.
			s.ShutdownTokens, s.HaveShutdown = total, true
		}
	}
}

// usage counts one session.usage_record, once per usageId.
func (s *summary) usage(e event, ts time.Time) {
	var d evUsage
	if json.Unmarshal(e.Data, &d) != nil {
		s.BadUsage++
		return
	}
	u := d.Usage
	key := nonEmpty(u.Accounting.UsageID, nonEmpty(u.APICallID, "event:"+e.ID))
	if key == "event:" {
		key = fmt.Sprintf("line:%d", s.Seq)
	}
	if s.seen[key] {
		return
	}
	t, ok := u.tokens()
	if !ok {
		s.BadUsage++
		return
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[key] = true
	s.Tokens.Add(t)
	if u.Initiator == "sub-agent" || u.ParentTool != "" {
		s.Sub.Add(t)
	}
	s.Usage++
	// A record without a time of its own is slotted at the latest time the log
	// has shown so far, else the session's start: the slots must always add up
	// to the tokens (usage --by day counts what list counts).
	at := ts
	if at.IsZero() {
		at = s.Last
	}
	if at.IsZero() {
		at = s.Started
	}
	s.Slots.Add(discover.SlotOfTime(at), t)
	s.addModel(u.Model)
}

func (s *summary) setSelected(m string) {
	if m = strings.TrimSpace(m); m != "" {
		s.SelectedModel = m
	}
}

func (s *summary) addModel(m string) {
	if m = strings.TrimSpace(m); m != "" && !slices.Contains(s.Models, m) {
		s.Models = append(s.Models, m)
	}
}

// model is the model that answered last, else the one selected.
func (s *summary) model() string {
	if len(s.Models) > 0 {
		return s.Models[len(s.Models)-1]
	}
	return s.SelectedModel
}

// tokens are the session's tokens: the usage records, or — only when there are
// none — the latest shutdown's cumulative totals.
func (s *summary) tokens() discover.Tokens {
	if s.Usage == 0 && s.HaveShutdown {
		return s.ShutdownTokens
	}
	return s.Tokens
}

// failed reports whether the latest prompt ended in a session.error: an error
// after the last user.message and no assistant.message after the error.
func (s *summary) failed() bool {
	return s.LastError > 0 && s.LastError > s.LastUser && s.LastAssistant < s.LastError && s.LastUser > 0
}

// inFlight reports whether the latest prompt is still being worked on as far
// as the events tell: a prompt not yet answered, a turn started and not ended,
// or an assistant message whose tool calls the model has not yet seen.
func (s *summary) inFlight() bool {
	switch {
	case s.LastUser == 0 || s.failed() || s.aborted():
		return false
	case s.LastProcStart > max(s.LastUser, s.LastTurnStart, s.LastAssistant):
		return false // a later process has not been given a prompt yet
	case s.LastTurnStart > s.LastTurnEnd:
		return true
	case s.LastUser > s.LastAssistant:
		return true
	}
	return s.AssistantTools && s.LastAssistant > s.LastError
}

// aborted reports whether the latest prompt's turn was aborted (Esc, a
// remote command): nothing is in flight after it.
func (s *summary) aborted() bool {
	return s.LastAbort > s.LastUser && s.LastAbort > s.LastTurnStart && s.LastAbort > s.LastAssistant && s.LastUser > 0
}

// waiting reports whether a permission request of the running process has no
// completion yet.
func (s *summary) waiting() bool { return len(s.Pending) > 0 }

// ended reports whether the latest process exited cleanly (session.shutdown
// after the latest session.start or session.resume).
func (s *summary) ended() bool { return s.LastShutdown > s.LastProcStart }

// errDetail names the latest error by its type and HTTP status when it has
// them (what discover.BlockedBy classifies), else by its message.
//
// The type and status come first because the message may quote the provider
// at length (a 401 whose text says "quota" must stay auth); the message is
// added only when they classify as nothing.
func (s *summary) errDetail() string {
	e := s.Err
	var parts []string
	if e.ErrorType != "" {
		parts = append(parts, e.ErrorType)
	}
	if e.StatusCode != 0 {
		parts = append(parts, fmt.Sprintf("(HTTP %d)", e.StatusCode))
	}
	short := "session.error " + strings.Join(parts, " ")
	if len(parts) > 0 && discover.BlockedBy(short) != "" {
		return short
	}
	if e.Message == "" {
		return strings.TrimSpace(short)
	}
	if len(parts) == 0 {
		short = "session.error"
	}
	return short + ": " + discover.OneLine(e.Message, 200)
}

// outcome is how the latest turn stands, for a session no live process hosts.
func (s *summary) outcome() (discover.Outcome, string) {
	switch {
	case s.LastUser == 0:
		return discover.OutcomeNone, "no prompt"
	case s.failed():
		return discover.OutcomeError, s.errDetail()
	case s.LastCrash > 0 && s.LastCrash == s.LastShutdown && s.ended():
		return discover.OutcomeError, "session.shutdown error: " + discover.OneLine(s.Crash, 200)
	case s.aborted():
		return discover.OutcomeAborted, "aborted"
	case s.inFlight() && s.ended():
		return discover.OutcomeAborted, "exited mid-turn (session.shutdown)"
	case s.inFlight():
		return discover.OutcomeOpen, "interrupted: the last turn has no end and the process is gone"
	}
	return discover.OutcomeDone, "done"
}

func parseTime(v string) time.Time {
	if v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
