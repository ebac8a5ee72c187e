package gemini

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// full is a message as peek renders it, with its native record.
type full struct {
	M   rawMsg
	Raw json.RawMessage
}

// toolCall is one entry of a gemini message's toolCalls.
type toolCall struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	DisplayName   string          `json:"displayName"`
	Args          json.RawMessage `json:"args"`
	Status        string          `json:"status"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
	Result        []struct {
		FunctionResponse *struct {
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	} `json:"result"`
}

// Peek renders the last n items of the session's current conversation: the
// message list as replayed from its file (rewound messages are gone, as in
// Gemini's own view).
func (a *Adapter) Peek(ctx context.Context, env *discover.Env, s discover.Session, n int) ([]discover.Message, error) {
	path := s.Path
	if path == "" {
		ss, err := a.Find(ctx, env, discover.Query{IDs: []string{s.ID}})
		if err != nil {
			return nil, err
		}
		for _, x := range ss {
			if x.ID == s.ID {
				path = x.Path
			}
		}
	}
	if path == "" {
		return nil, discover.ErrNoSession
	}
	msgs, err := replay(ctx, path)
	if err != nil {
		return nil, err
	}
	out := render(msgs, discover.WantRaw(ctx))
	if len(out) == 0 {
		return nil, discover.ErrNoSession
	}
	out = discover.LastN(out, n)
	return out, nil
}

// replay returns the file's final message list.
func replay(ctx context.Context, path string) ([]full, error) {
	f, err := agentfs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return replayFrom(ctx, f, strings.HasSuffix(path, ".json"))
}

// replayFrom replays a session file's records (an older CLI's single JSON
// object when whole is true) into the final message list.
func replayFrom(ctx context.Context, r io.Reader, whole bool) ([]full, error) {
	var cur []full
	put := func(m rawMsg, raw []byte) {
		f := full{M: m, Raw: append(json.RawMessage(nil), raw...)}
		if m.ID != "" {
			for i := range cur {
				if cur[i].M.ID == m.ID {
					cur[i] = f
					return
				}
			}
		}
		cur = append(cur, f)
	}
	setList := func(raw json.RawMessage) {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			return
		}
		cur = cur[:0]
		for _, r := range list {
			var m rawMsg
			if json.Unmarshal(r, &m) == nil {
				put(m, r)
			}
		}
	}
	if whole {
		b, err := io.ReadAll(io.LimitReader(r, maxJSONFile))
		if err != nil {
			return nil, err
		}
		var l rawLine
		if json.Unmarshal(b, &l) == nil {
			setList(l.Messages)
		}
		return cur, nil
	}
	_, _, err := jsonl.Read(r, 0, func(line []byte, _ int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var l rawLine
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &l) != nil {
			return nil
		}
		switch {
		case len(l.RewindTo) > 0:
			id := str(l.RewindTo)
			i := 0
			for i < len(cur) && cur[i].M.ID != id {
				i++
			}
			if i == len(cur) {
				i = 0 // an unknown id drops everything, as the CLI's loader does
			}
			cur = cur[:i]
		case len(l.Set) > 0:
			var set rawLine
			if json.Unmarshal(l.Set, &set) == nil && len(set.Messages) > 0 {
				setList(set.Messages)
			}
		case l.ID != "":
			put(l.rawMsg, line)
		}
		return nil
	})
	return cur, err
}

// render turns messages into peek items: real prompts, gemini replies with
// their tool calls (results attached from the call itself), errors and
// notices. The CLI's context and the tool-result user messages are not shown
// on their own.
func render(msgs []full, raw bool) []discover.Message {
	var out []discover.Message
	for _, f := range msgs {
		m := f.M
		item := discover.Message{TS: parseTime(m.Timestamp), MessageID: m.ID}
		if raw {
			item.Raw = []json.RawMessage{f.Raw}
		}
		switch m.Type {
		case "user":
			text, _ := userContent(m.Content)
			if !isPrompt(text) {
				continue
			}
			item.Kind, item.Text = "user", text
		case "gemini":
			item.Kind, item.Text = "assistant", contentText(m.Content)
			for _, rc := range m.ToolCalls {
				var tc toolCall
				if json.Unmarshal(rc, &tc) != nil {
					continue
				}
				item.Tools = append(item.Tools, tool(tc))
			}
			if strings.TrimSpace(item.Text) == "" && len(item.Tools) == 0 {
				continue
			}
		case "error":
			item.Kind, item.Text, item.IsError = "error", contentText(m.Content), true
		case "info", "warning":
			item.Kind, item.Text = "system", contentText(m.Content)
		default:
			continue
		}
		out = append(out, item)
	}
	return out
}

// tool renders one tool call: `→ Name: summary`, `← first line of its result`.
func tool(tc toolCall) discover.ToolCall {
	name := tc.Name
	if name == "" {
		name = tc.DisplayName
	}
	t := discover.ToolCall{ID: tc.ID, Name: name, Summary: toolSummary(tc.Name, tc.Args)}
	switch tc.Status {
	case "success", "error", "cancelled":
		t.HasResult = true
		t.IsError = tc.Status == "error"
		t.Interrupted = tc.Status == "cancelled"
	}
	res := str(tc.ResultDisplay)
	if res == "" {
		for _, r := range tc.Result {
			if r.FunctionResponse != nil {
				res = responseText(r.FunctionResponse.Response)
				t.HasResult = true
				break
			}
		}
	}
	t.Result = discover.FirstLine(res, 100)
	return t
}

// responseText is a functionResponse's output or error, without the
// <untrusted_context> wrapper Gemini puts round shell output.
func responseText(raw json.RawMessage) string {
	var r struct {
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	s := str(r.Output)
	if s == "" {
		s = str(r.Error)
	}
	s = strings.ReplaceAll(s, "<untrusted_context>", "")
	s = strings.ReplaceAll(s, "</untrusted_context>", "")
	return strings.TrimPrefix(strings.TrimSpace(s), "Output: ")
}

// toolSummary is the command for the shell, the path for file tools, else
// compact JSON of the arguments (≤ 120 chars).
func toolSummary(name string, args json.RawMessage) string {
	return discover.ArgSummary(args, 120, "command", "file_path", "absolute_path", "path", "dir_path", "pattern", "url", "query")
}
