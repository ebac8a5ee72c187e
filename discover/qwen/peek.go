package qwen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// toolResult is what a tool_result record adds to its part list.
type toolResult struct {
	CallID        string          `json:"callId"`
	Status        string          `json:"status"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
}

// Peek renders the last n items of the session (n<=0: all): `> prompt`,
// assistant text with its tool calls (each with its result attached), and the
// API errors of main turns.
func (a *Adapter) Peek(ctx context.Context, env *discover.Env, s discover.Session, n int) ([]discover.Message, error) {
	path := s.Path
	if path == "" {
		if fs := listChats(chatRoots(env), func(name string) bool { return name == s.ID }); len(fs) > 0 {
			path = fs[0].Path
		}
	}
	if path == "" {
		return nil, discover.ErrNoSession
	}
	msgs, err := peekFile(ctx, path, discover.WantRaw(ctx))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, discover.ErrNoSession
	}
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, discover.ErrNoSession
	}
	msgs = discover.LastN(msgs, n)
	return msgs, nil
}

// peekFile renders every item of a transcript. Lines that do not parse are
// skipped.
func peekFile(ctx context.Context, path string, raw bool) ([]discover.Message, error) {
	f, err := agentfs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []discover.Message
	_, _, err = jsonl.Read(f, 0, func(line []byte, _ int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		out = render(out, line, raw)
		return nil
	})
	return out, err
}

// render appends the items one line makes (a tool result completes an
// earlier item instead).
func render(out []discover.Message, line []byte, raw bool) []discover.Message {
	var r struct {
		record
		ToolCallResult *toolResult `json:"toolCallResult"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		if _, ok := err.(*json.UnmarshalTypeError); !ok {
			return out
		}
	}
	ts, _ := parseTS(r.Timestamp)
	item := discover.Message{TS: ts, UUID: r.UUID}
	if raw {
		item.Raw = []json.RawMessage{append(json.RawMessage(nil), line...)}
	}
	switch r.Type {
	case "user":
		if !realPrompt(&r.record) {
			return out
		}
		item.Kind, item.Text = "user", discover.Clean(promptText(&r.record))
	case "assistant":
		if r.Message == nil {
			return out
		}
		var texts []string
		for _, p := range r.Message.Parts {
			switch {
			case p.FunctionCall != nil:
				fc := p.FunctionCall
				item.Tools = append(item.Tools, discover.ToolCall{ID: fc.ID, Name: discover.Clean(fc.Name), Summary: toolSummary(fc.Name, fc.Args)})
			case p.Text != nil && !p.Thought && strings.TrimSpace(*p.Text) != "":
				texts = append(texts, *p.Text)
			}
		}
		if len(texts) == 0 && len(item.Tools) == 0 {
			return out
		}
		item.Kind, item.Text = "assistant", discover.Clean(strings.Join(texts, "\n"))
	case "tool_result":
		return attachResult(out, &r.record, r.ToolCallResult, item.Raw)
	case "system":
		if r.Subtype != "ui_telemetry" {
			return out
		}
		var p struct {
			UIEvent *uiEvent `json:"uiEvent"`
		}
		_ = json.Unmarshal(r.SystemPayload, &p)
		e := p.UIEvent
		if e == nil || e.Name != "qwen-code.api_error" || e.SubagentName != "" {
			return out
		}
		msg := strings.TrimSpace(e.ErrorMessage)
		if msg == "" {
			msg = e.ErrorType
		}
		item.Kind, item.IsError, item.Text = "error", true, discover.Clean(discover.FirstLine(msg, 200))
	default:
		return out
	}
	return append(out, item)
}

// attachResult gives the tool call a result names its outcome: the first line
// of what the CLI showed (resultDisplay), else of the response sent back.
func attachResult(out []discover.Message, r *record, tr *toolResult, raw []json.RawMessage) []discover.Message {
	if r.Message == nil {
		return out
	}
	for _, p := range r.Message.Parts {
		fr := p.FunctionResponse
		if fr == nil {
			continue
		}
		isErr := tr != nil && tr.Status == "error"
		text := ""
		if tr != nil && (tr.CallID == fr.ID || tr.CallID == "") {
			text = displayText(tr.ResultDisplay)
		}
		var resp struct {
			Output *string `json:"output"`
			Error  *string `json:"error"`
		}
		_ = json.Unmarshal(fr.Response, &resp)
		if resp.Error != nil && *resp.Error != "" {
			isErr = true
			if text == "" {
				text = *resp.Error
			}
		}
		if text == "" && resp.Output != nil {
			text = *resp.Output
		}
		for i := len(out) - 1; i >= 0; i-- {
			done := false
			for j := range out[i].Tools {
				t := &out[i].Tools[j]
				if t.ID == fr.ID && !t.HasResult {
					t.HasResult, t.IsError = true, isErr
					t.Result = discover.Clean(discover.FirstLine(text, 100))
					if t.Result == "" && !isErr {
						t.Result = "ok"
					}
					out[i].Raw = append(out[i].Raw, raw...)
					done = true
					break
				}
			}
			if done {
				break
			}
		}
	}
	return out
}

// displayText is the text of a resultDisplay: a string, or an object's
// output/text (shell results), or its error.
func displayText(b json.RawMessage) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return ""
	}
	if b[0] == '"' {
		var s string
		_ = json.Unmarshal(b, &s)
		return s
	}
	var o struct {
		Output *string `json:"output"`
		Text   *string `json:"text"`
		Error  *string `json:"error"`
	}
	if json.Unmarshal(b, &o) != nil {
		return ""
	}
	for _, s := range []*string{o.Output, o.Text, o.Error} {
		if s != nil && strings.TrimSpace(*s) != "" {
			return *s
		}
	}
	return ""
}

// toolSummary is the one-line argument shown after a tool's name: the command
// for the shell, the path for file tools, else compact JSON (≤ 120 chars).
func toolSummary(name string, args json.RawMessage) string {
	return discover.ArgSummary(args, 120, "command", "file_path", "absolute_path", "path", "pattern", "url", "query")
}
