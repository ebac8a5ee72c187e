package copilot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

type toolRequest struct {
	ToolCallID string          `json:"toolCallId"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
}

type evAssistantFull struct {
	MessageID    string        `json:"messageId"`
	Content      string        `json:"content"`
	ToolRequests []toolRequest `json:"toolRequests"`
}

type evUserFull struct {
	Content   string `json:"content"`
	MessageID string `json:"messageId"`
}

type evToolDone struct {
	ToolCallID string `json:"toolCallId"`
	Success    *bool  `json:"success"`
	Result     *struct {
		Content string `json:"content"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Peek renders the last n items of the session's event log: prompts, assistant
// text with its tool calls (each with its result attached), errors, and
// resumes and model switches as system items. The system prompt, turn markers,
// usage records and shutdown totals are not conversation.
func (a *Adapter) Peek(ctx context.Context, env *discover.Env, s discover.Session, n int) ([]discover.Message, error) {
	path := s.Path
	if path == "" {
		path = filepath.Join(a.DataDir(env), "session-state", s.ID, "events.jsonl")
	}
	f, err := agentfs.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, discover.ErrNoSession
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	msgs, err := peekEvents(ctx, f, discover.WantRaw(ctx))
	if err != nil {
		return nil, discover.Errorf(path, err)
	}
	if len(msgs) == 0 {
		return nil, discover.ErrNoSession
	}
	msgs = discover.LastN(msgs, n)
	return msgs, nil
}

// peekEvents turns an event log into peek items; bad lines are skipped.
func peekEvents(ctx context.Context, r io.Reader, raw bool) ([]discover.Message, error) {
	var out []discover.Message
	_, _, err := jsonl.Read(r, 0, func(line []byte, _ int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		out = appendEvent(out, line, raw)
		return nil
	})
	return out, err
}

func appendEvent(out []discover.Message, line []byte, raw bool) []discover.Message {
	var e event
	if json.Unmarshal(line, &e) != nil {
		return out
	}
	item := discover.Message{TS: parseTime(e.Timestamp), UUID: e.ID}
	if raw {
		item.Raw = []json.RawMessage{bytes.Clone(line)}
	}
	switch e.Type {
	case "user.message":
		var d evUserFull
		if json.Unmarshal(e.Data, &d) != nil || strings.TrimSpace(d.Content) == "" {
			return out
		}
		item.Kind, item.Text, item.MessageID = "user", d.Content, d.MessageID
	case "assistant.message":
		var d evAssistantFull
		if json.Unmarshal(e.Data, &d) != nil {
			return out
		}
		item.Kind, item.Text, item.MessageID = "assistant", d.Content, d.MessageID
		for _, t := range d.ToolRequests {
			item.Tools = append(item.Tools, discover.ToolCall{ID: t.ToolCallID, Name: t.Name, Summary: toolSummary(t.Name, t.Arguments)})
		}
		if strings.TrimSpace(item.Text) == "" && len(item.Tools) == 0 {
			return out
		}
	case "tool.execution_complete":
		var d evToolDone
		if json.Unmarshal(e.Data, &d) != nil || d.ToolCallID == "" {
			return out
		}
		attachResult(out, d, line, raw)
		return out
	case "session.error":
		var d evError
		_ = json.Unmarshal(e.Data, &d)
		item.Kind, item.IsError = "error", true
		item.Text = nonEmpty(d.Message, nonEmpty(d.ErrorType, "error"))
	case "session.resume":
		item.Kind, item.Text = "system", "resumed"
	case "session.model_change":
		var d struct {
			NewModel      string `json:"newModel"`
			PreviousModel string `json:"previousModel"`
			Source        string `json:"source"`
		}
		if json.Unmarshal(e.Data, &d) != nil || d.NewModel == "" || d.NewModel == d.PreviousModel {
			return out
		}
		item.Kind, item.Text = "system", "model "+d.NewModel
	default:
		return out
	}
	return append(out, item)
}

// attachResult attaches a tool's result to its call; a result whose call is
// outside what was read is dropped.
func attachResult(out []discover.Message, d evToolDone, line []byte, raw bool) {
	for i := len(out) - 1; i >= 0; i-- {
		for j := range out[i].Tools {
			t := &out[i].Tools[j]
			if t.ID != d.ToolCallID || t.HasResult {
				continue
			}
			t.HasResult = true
			t.IsError = d.Success != nil && !*d.Success
			switch {
			case d.Result != nil && d.Result.Content != "":
				t.Result = firstLine(d.Result.Content, 100)
			case d.Error != nil:
				t.Result = firstLine(d.Error.Message, 100)
			}
			if raw {
				out[i].Raw = append(out[i].Raw, bytes.Clone(line))
			}
			return
		}
	}
}

// toolSummary is the command for a shell tool, the path for file tools, else
// compact JSON of the arguments (≤ 120 chars).
func toolSummary(name string, args json.RawMessage) string {
	return discover.ArgSummary(args, 120, "command", "path", "file_path", "pattern", "url")
}

// firstLine is the first non-empty line, cut to max runes.
func firstLine(s string, max int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return discover.Truncate(discover.Clean(l), max)
		}
	}
	return ""
}
