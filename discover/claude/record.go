package claude

import (
	"strings"
	"time"
	"unsafe"

	"github.com/agentctl/agentctl/discover"
)

// record is the top level of one transcript line, as raw sub-slices of the line
// (valid only while the line is): what listing, status and peek read. Everything
// else in a line, including unknown fields and record types, is skipped.
type record struct {
	Type, Subtype   []byte
	Timestamp       []byte
	Cwd             []byte
	GitBranch       []byte
	Version         []byte
	Entrypoint      []byte
	PermissionMode  []byte
	RequestID       []byte
	UUID            []byte
	Operation       []byte
	Content         []byte // queue-operation content
	Message         []byte
	ToolUseResult   []byte
	CompactMetadata []byte
	CustomTitle     []byte
	AgentName       []byte
	AITitle         []byte
	Summary         []byte
	TotalCostUSD    []byte // cost-state
	Sidechain       bool
	Meta            bool // isMeta, isCompactSummary or isVisibleInTranscriptOnly
	APIError        bool // isApiErrorMessage
	// msg is parseMessage(Message) when msgOK: the walk that found
	// Message's end read its fields on the way (the message is most of a
	// line's bytes, and was walked twice).
	msg   message
	msgOK bool
}

// message returns parseMessage(r.Message).
func (r *record) message() message {
	if r.msgOK {
		return r.msg
	}
	return parseMessage(r.Message)
}

func parseRecord(line []byte, r *record) error {
	*r = record{}
	return eachFieldMsg(line, &r.msg, &r.msgOK, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			r.Type = v
		case "subtype":
			r.Subtype = v
		case "timestamp":
			r.Timestamp = v
		case "cwd":
			r.Cwd = v
		case "gitBranch":
			r.GitBranch = v
		case "version":
			r.Version = v
		case "entrypoint":
			r.Entrypoint = v
		case "permissionMode":
			r.PermissionMode = v
		case "requestId":
			r.RequestID = v
		case "uuid":
			r.UUID = v
		case "operation":
			r.Operation = v
		case "content":
			r.Content = v
		case "message":
			r.Message = v
		case "toolUseResult", "tool_use_result":
			r.ToolUseResult = v
		case "compactMetadata":
			r.CompactMetadata = v
		case "customTitle":
			r.CustomTitle = v
		case "agentName":
			r.AgentName = v
		case "aiTitle":
			r.AITitle = v
		case "summary":
			r.Summary = v
		case "totalCostUSD":
			r.TotalCostUSD = v
		case "isSidechain":
			r.Sidechain = isTrue(v)
		case "isMeta", "isCompactSummary", "isVisibleInTranscriptOnly":
			r.Meta = r.Meta || isTrue(v)
		case "isApiErrorMessage":
			r.APIError = isTrue(v)
		}
		return true
	})
}

// tsMillis parses a record timestamp (ISO-8601 UTC with milliseconds); 0 when
// absent or malformed.
func tsMillis(v []byte) int64 {
	var s string
	if isString(v) && plainASCII(v[1:len(v)-1]) {
		// What str(v) would return, without a copy: time.Parse keeps
		// nothing of it.
		s = unsafe.String(unsafe.SliceData(v[1:]), len(v)-2)
	} else {
		s = str(v)
	}
	if s == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

// plainASCII reports whether b is printable-range ASCII without a backslash:
// a JSON string's inside that decodes to itself.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// message is the part of a user or assistant `message` field agentctl reads.
type message struct {
	ID, Model, StopReason []byte
	Content               []byte
	tokenCounts           []byte
}

func parseMessage(b []byte) (m message) {
	if !isObject(b) {
		return m
	}
	_ = eachField(b, func(k, v []byte) bool {
		m.set(k, v)
		return true
	})
	return m
}

// set takes the member k: v of a message object.
func (m *message) set(k, v []byte) {
	switch string(k) {
	case "id":
		m.ID = v
	case "model":
		m.Model = v
	case "stop_reason":
		m.StopReason = v
	case "content":
		m.Content = v
	case "usage":
		m.tokenCounts = v
	}
}

// tokenCounts is one API response's token counts; cache writes are split by TTL
// because they are priced differently.
type tokenCounts struct {
	In, Out, CW5m, CW1h, CR int64
}

func (u *tokenCounts) add(o tokenCounts) {
	u.In += o.In
	u.Out += o.Out
	u.CW5m += o.CW5m
	u.CW1h += o.CW1h
	u.CR += o.CR
}

func (u *tokenCounts) sub(o tokenCounts) {
	u.In -= o.In
	u.Out -= o.Out
	u.CW5m -= o.CW5m
	u.CW1h -= o.CW1h
	u.CR -= o.CR
}

func (u tokenCounts) zero() bool { return u == tokenCounts{} }

// tokens are u in agentctl's four classes.
func (u tokenCounts) tokens() discover.Tokens {
	return discover.Tokens{Input: u.In, Output: u.Out, CacheRead: u.CR, CacheWrite: u.CW5m + u.CW1h}
}

// parseUsage reads message.usage. cache_creation_input_tokens is split into 5m and
// 1h from cache_creation when present, else it is all 5m.
func parseUsage(b []byte) tokenCounts {
	u, _ := parseUsageTier(b)
	return u
}

// longContext is the prompt size (input + cache writes + cache reads) above which
// Anthropic bills a whole request at its long-context rates.
const longContext = 200_000

// Price tiers of a request (bits): over longContext, and usage.speed "fast".
const (
	tierLong uint8 = 1 << iota
	tierFast
)

// parseUsageTier is parseUsage plus the request's price tier.
func parseUsageTier(b []byte) (u tokenCounts, tier uint8) {
	if !isObject(b) {
		return u, 0
	}
	var cw int64
	var split []byte
	_ = eachField(b, func(k, v []byte) bool {
		switch string(k) {
		case "input_tokens":
			u.In = num(v)
		case "output_tokens":
			u.Out = num(v)
		case "cache_creation_input_tokens":
			cw = num(v)
		case "cache_read_input_tokens":
			u.CR = num(v)
		case "cache_creation":
			split = v
		case "speed":
			if strEq(v, "fast") {
				tier |= tierFast
			}
		}
		return true
	})
	if isObject(split) {
		_ = eachField(split, func(k, v []byte) bool {
			switch string(k) {
			case "ephemeral_5m_input_tokens":
				u.CW5m = num(v)
			case "ephemeral_1h_input_tokens":
				u.CW1h = num(v)
			}
			return true
		})
	}
	if u.CW5m+u.CW1h != cw {
		// No split, or one that does not add up: the total wins, the rest is 5m.
		if u.CW1h > cw {
			u.CW1h = 0
		}
		u.CW5m = cw - u.CW1h
	}
	if u.In+u.CW5m+u.CW1h+u.CR > longContext {
		tier |= tierLong
	}
	return u, tier
}

// injectedPrefixes start user texts that Claude Code or the harness wrote, not the
// user (docs/agents/claude-code.md §3.3).
var injectedPrefixes = []string{
	"<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
	"<local-command-stderr>", "<local-command-caveat>", "Caveat:", "<bash-input>",
	"<bash-stdout>", "<bash-stderr>", "<system-reminder>", "<task-notification>",
	"[Request interrupted by user", "This session is being continued from a previous conversation",
}

func injected(text string) bool {
	t := strings.TrimSpace(text)
	if t == "" {
		return true
	}
	for _, p := range injectedPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// slashCommand extracts "/clear" from a `<command-name>/clear</command-name>` text.
func slashCommand(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "<command-name>") {
		return ""
	}
	t = t[len("<command-name>"):]
	if i := strings.Index(t, "</command-name>"); i >= 0 {
		t = t[:i]
	}
	t = strings.TrimSpace(t)
	if t != "" && !strings.HasPrefix(t, "/") {
		t = "/" + t
	}
	return t
}

// userContent is what a user record's message.content holds.
type userContent struct {
	Text       string // string content, or the text blocks not starting with <system-reminder>
	HasText    bool
	ToolResult bool
	Image      bool
}

// parseUserContent classifies message.content, decoding at most max bytes of each
// text (0: all).
func parseUserContent(c []byte, max int) (u userContent) {
	dec := func(v []byte) string {
		if max > 0 {
			return strPrefix(v, max)
		}
		return str(v)
	}
	switch {
	case isString(c):
		u.Text = dec(c)
		u.HasText = true
	case isArray(c):
		var parts []string
		eachBlock(c, func(b *block) bool {
			switch {
			case strEq(b.Type, "text"):
				t := dec(b.Text)
				if !strings.HasPrefix(strings.TrimSpace(t), "<system-reminder>") {
					parts = append(parts, t)
				}
			case strEq(b.Type, "tool_result"):
				u.ToolResult = true
			case strEq(b.Type, "image"):
				u.Image = true
			}
			return true
		})
		if len(parts) > 0 {
			u.Text = strings.Join(parts, "\n")
			u.HasText = true
		}
	}
	return u
}
