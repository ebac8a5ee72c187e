package openclaw

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// Peek returns the last n items of a session's chat history (n<=0: all).
func (a *Adapter) Peek(ctx context.Context, env *discover.Env, s discover.Session, n int) ([]discover.Message, error) {
	c, _, err := a.dial(ctx, env, "chat.history")
	if err != nil {
		return nil, err
	}
	h, err := c.history(ctx, env, s.ID, n)
	if err != nil {
		c.Abort()
		return nil, err
	}
	c.Close(ctx)
	if h.truncated {
		env.Warnf("%s: history longer than %d messages; showing the newest", s.ID, maxPages*pageLimit)
	}
	msgs := toMessages(h.rows)
	msgs = discover.LastN(msgs, n)
	if len(msgs) == 0 {
		return nil, discover.ErrNoSession
	}
	return msgs, nil
}

// historyParams are exactly the documented keys.
type historyParams struct {
	SessionKey string `json:"sessionKey"`
	Limit      int    `json:"limit"`
	Offset     int    `json:"offset,omitempty"`
}

type historyResult struct {
	Messages      []json.RawMessage `json:"messages"`
	HasMore       bool              `json:"hasMore"`
	NextOffset    *int              `json:"nextOffset"`
	TotalMessages int               `json:"totalMessages"`
}

type history struct {
	rows      []json.RawMessage // chronological
	truncated bool              // the page cap was hit
}

// history reads chat.history from the newest end until it holds n items (n<=0:
// everything). Pages count from the newest message: offset k skips the k newest.
// Tool results do not count as items (they attach to their assistant message),
// so a page may not be enough for n items.
func (c conn) history(ctx context.Context, env *discover.Env, key string, n int) (history, error) {
	var h history
	var pages [][]json.RawMessage
	items, offset := 0, 0
	for page := 0; ; page++ {
		if page == maxPages {
			h.truncated = true
			break
		}
		limit := pageLimit
		if page == 0 && n > 0 && n < limit {
			limit = n // the common `peek -n 20`: one small page
		}
		var res historyResult
		if err := c.Call(ctx, "chat.history", historyParams{SessionKey: key, Limit: limit, Offset: offset}, &res); err != nil {
			return h, err
		}
		pages = append(pages, res.Messages)
		for _, raw := range res.Messages {
			var r struct {
				Role string `json:"role"`
			}
			if json.Unmarshal(raw, &r) == nil && r.Role != "toolResult" {
				items++
			}
		}
		if !res.HasMore || len(res.Messages) == 0 || (n > 0 && items >= n) {
			break
		}
		next := offset + len(res.Messages)
		if res.NextOffset != nil {
			next = *res.NextOffset
		}
		if next <= offset {
			env.Warnf("gateway %s: chat.history said hasMore without a usable nextOffset; showing what arrived", c.URL())
			break
		}
		offset = next
	}
	for i := len(pages) - 1; i >= 0; i-- {
		h.rows = append(h.rows, pages[i]...)
	}
	return h, nil
}

// histRow is one chat.history message (Pi-style blocks; docs/agents/openclaw.md §5).
type histRow struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Timestamp    float64         `json:"timestamp"`
	ErrorMessage string          `json:"errorMessage"`
	CustomType   string          `json:"customType"`
	ToolCallID   string          `json:"toolCallId"`
	ToolName     string          `json:"toolName"`
	IsError      bool            `json:"isError"`
	Usage        *struct {
		Input      int64 `json:"input"`
		Output     int64 `json:"output"`
		CacheRead  int64 `json:"cacheRead"`
		CacheWrite int64 `json:"cacheWrite"`
		Cost       *struct {
			Total *float64 `json:"total"`
		} `json:"cost"`
	} `json:"usage"`
	OC struct {
		ID  string `json:"id"`
		Seq *int64 `json:"seq"`
	} `json:"__openclaw"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// contentText is a user string, or the text blocks of a block array.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []block
	if json.Unmarshal(raw, &bs) != nil {
		return ""
	}
	var parts []string
	for _, b := range bs {
		if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// toMessages turns chronological history rows into peek items: tool results
// attach to the call they answer; a result whose call is older than the rows
// read is dropped (its message is outside the window).
func toMessages(rows []json.RawMessage) []discover.Message {
	var out []discover.Message
	type ref struct{ msg, tool int }
	calls := map[string]ref{}
	for _, raw := range rows {
		var r histRow
		if json.Unmarshal(raw, &r) != nil {
			continue
		}
		m := discover.Message{TS: msTimeValue(r.Timestamp), MessageID: r.OC.ID, Raw: []json.RawMessage{raw}}
		switch r.Role {
		case "user":
			m.Kind, m.Text = "user", contentText(r.Content)
		case "assistant":
			m.Kind = "assistant"
			var bs []block
			if json.Unmarshal(r.Content, &bs) != nil {
				m.Text = contentText(r.Content)
			}
			var texts []string
			for _, b := range bs {
				switch b.Type {
				case "text":
					if strings.TrimSpace(b.Text) != "" {
						texts = append(texts, b.Text)
					}
				case "toolCall":
					m.Tools = append(m.Tools, discover.ToolCall{ID: b.ID, Name: b.Name, Summary: toolSummary(b.Arguments)})
				}
			}
			if len(bs) > 0 {
				m.Text = strings.Join(texts, "\n\n")
			}
			if r.ErrorMessage != "" {
				if m.Text == "" && len(m.Tools) == 0 {
					m.Kind, m.Text = "error", r.ErrorMessage
				} else {
					m.IsError = true
					m.Text = strings.TrimSpace(m.Text + "\n\nerror: " + r.ErrorMessage)
				}
			}
		case "toolResult":
			at, ok := calls[r.ToolCallID]
			if !ok {
				continue
			}
			t := &out[at.msg].Tools[at.tool]
			t.HasResult, t.IsError = true, r.IsError
			t.Result = firstLine(contentText(r.Content), 100)
			out[at.msg].Raw = append(out[at.msg].Raw, raw)
			continue
		case "custom":
			m.Kind, m.Text = "system", contentText(r.Content)
			if m.Text == "" {
				m.Text = r.CustomType
			}
		default:
			m.Kind = "system"
			m.Text = strings.TrimSpace(r.Role + ": " + contentText(r.Content))
		}
		if m.MessageID == "" && r.OC.Seq != nil {
			m.MessageID = fmt.Sprintf("seq-%d", *r.OC.Seq)
		}
		out = append(out, m)
		for i, t := range m.Tools {
			if t.ID != "" {
				calls[t.ID] = ref{len(out) - 1, i}
			}
		}
	}
	return out
}

// toolSummary picks the argument a reader recognises a call by.
func toolSummary(args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		var s string
		if json.Unmarshal(args, &s) == nil {
			return discover.OneLine(s, 100)
		}
		return discover.OneLine(string(args), 100)
	}
	for _, k := range []string{"command", "cmd", "path", "file_path", "filePath", "pattern", "query", "url", "description"} {
		if v, ok := m[k].(string); ok && v != "" {
			return discover.OneLine(v, 100)
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := m[k].(string); ok && v != "" {
			return discover.OneLine(k+"="+v, 100)
		}
	}
	b, _ := json.Marshal(m)
	return discover.OneLine(string(b), 100)
}

func firstLine(s string, max int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return discover.OneLine(l, max)
		}
	}
	return ""
}

func msTimeValue(ms float64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}
