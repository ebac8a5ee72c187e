package opencode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// nativeMsg is one stored message with its parts, as read from either store.
type nativeMsg struct {
	ID      string
	Created int64 // ms; the row's time_created (or the file's time.created)
	Data    []byte
	Raw     json.RawMessage // the native row or file, for --raw
	Parts   []nativePart
}

type nativePart struct {
	ID   string
	Data []byte
	Raw  json.RawMessage
}

// items turns messages into peek items (docs/agents/opencode.md §5): one per user message,
// one per assistant message (text, tool calls with results), and an "error" item
// for an assistant error (MessageAbortedError included). Messages or parts whose
// JSON does not parse, unknown roles and unknown part types are skipped.
func items(msgs []nativeMsg) []discover.Message {
	var out []discover.Message
	for _, nm := range msgs {
		var m msgData
		if json.Unmarshal(nm.Data, &m) != nil {
			continue
		}
		ts := nm.Created
		if m.Time.Created != 0 {
			ts = m.Time.Created
		}
		base := discover.Message{TS: time.UnixMilli(ts).UTC(), MessageID: nm.ID, Raw: rawOf(nm)}
		var text []string
		var tools []discover.ToolCall
		var system []discover.Message
		for _, np := range nm.Parts {
			var p partData
			if json.Unmarshal(np.Data, &p) != nil {
				continue
			}
			switch p.Type {
			case "text":
				if m.Role == "user" && p.Synthetic {
					continue // injected context, not typed by the user
				}
				text = append(text, p.Text)
			case "tool":
				tools = append(tools, toolCall(p))
			case "file":
				name := p.Filename
				if name == "" {
					name = p.URL
				}
				text = append(text, "[file: "+name+"]")
			case "patch":
				text = append(text, fmt.Sprintf("[patch: %d files]", len(p.Files)))
			case "subtask", "agent":
				name := p.Agent
				if name == "" {
					name = p.Name
				}
				tools = append(tools, discover.ToolCall{Name: "subagent", Summary: strings.TrimSpace(name + " " + p.Description)})
			case "compaction":
				system = append(system, discover.Message{TS: base.TS, Kind: "system", Text: "context compacted",
					MessageID: nm.ID + ":compaction", Raw: base.Raw})
			}
			// step-start, step-finish, reasoning, snapshot, retry…: not shown.
		}
		switch m.Role {
		case "user":
			u := base
			u.Kind, u.Text = "user", strings.Join(text, "\n")
			out = append(out, u)
			out = append(out, system...)
		case "assistant":
			out = append(out, system...)
			if len(text) > 0 || len(tools) > 0 || m.Error == nil {
				a := base
				a.Kind, a.Text, a.Tools = "assistant", strings.Join(text, "\n"), tools
				out = append(out, a)
			}
			if m.Error != nil {
				e := base
				e.Kind, e.IsError = "error", true
				e.Text = m.Error.Name
				if msg := m.Error.message(); msg != "" {
					e.Text += ": " + msg
				}
				e.MessageID = nm.ID + ":error"
				out = append(out, e)
			}
		}
	}
	return out
}

// rawOf is the message's native record followed by its parts'.
func rawOf(nm nativeMsg) []json.RawMessage {
	out := []json.RawMessage{nm.Raw}
	for _, p := range nm.Parts {
		out = append(out, p.Raw)
	}
	return out
}

// toolCall renders a tool part: name, input summary, result (docs/agents/opencode.md §5).
func toolCall(p partData) discover.ToolCall {
	tc := discover.ToolCall{ID: p.CallID, Name: p.Tool, Summary: inputSummary(p.Tool, p.State.Input)}
	switch p.State.Status {
	case "completed":
		tc.HasResult = true
		tc.Result = discover.FirstLine(jsonString(p.State.Output), 100)
	case "error":
		tc.HasResult, tc.IsError = true, true
		msg := jsonString(p.State.Error)
		tc.Result = discover.FirstLine(msg, 100)
		// OpenCode marks tools cut off by an abort or a kill "Tool execution aborted".
		tc.Interrupted = strings.Contains(strings.ToLower(msg), "aborted")
	}
	return tc
}

func inputSummary(tool string, input json.RawMessage) string {
	var in map[string]json.RawMessage
	if json.Unmarshal(input, &in) == nil {
		key := ""
		switch tool {
		case "bash", "shell": // OpenCode 1.x, 2
			key = "command"
		case "read", "edit", "write":
			key = "filePath"
		}
		if v := jsonString(in[key]); key != "" && v != "" {
			return v
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, input) != nil || b.String() == "null" {
		return ""
	}
	return discover.Truncate(b.String(), 120)
}

// jsonString is a JSON string's value, or the compact JSON of anything else.
func jsonString(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil || b.String() == "null" {
		return ""
	}
	return b.String()
}
