package pi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// fullEntry is an entry as peek renders it.
type fullEntry struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	ParentID  *string         `json:"parentId"`
	Timestamp string          `json:"timestamp"`
	Provider  string          `json:"provider"`
	ModelID   string          `json:"modelId"`
	Content   json.RawMessage `json:"content"` // custom_message
	Display   bool            `json:"display"`
	Message   *fullMessage    `json:"message"`
	// context_edit (pi 1.6): an earlier entry replaced in (or, replacement
	// null, dropped from) the model's context; the file keeps the original.
	TargetID    string          `json:"targetId"`
	Replacement json.RawMessage `json:"replacement"`
}

type fullMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	Timestamp    msTime          `json:"timestamp"`
	ToolCallID   string          `json:"toolCallId"`
	IsError      bool            `json:"isError"`
	Display      *bool           `json:"display"`
	// bashExecution (a user's `!` command)
	Command   string `json:"command"`
	ExitCode  *int   `json:"exitCode"`
	Cancelled bool   `json:"cancelled"`
	// system (pi 1.6): the prompt sections and tool loadout sent from here on.
	Sections     json.RawMessage `json:"sections"`
	ToolsAdded   []namedTool     `json:"toolsAdded"`
	ToolsRemoved []namedTool     `json:"toolsRemoved"`
}

type namedTool struct {
	Name string `json:"name"`
}

// rec is one entry with its raw line.
type rec struct {
	E   fullEntry
	Raw []byte
}

// skel is what the first peek pass keeps per entry: enough to walk the tree and
// to count items, plus where to re-read the line.
type skel struct {
	id, parent string
	produces   bool // certainly renders as at least one item
	off        int64
	n          int
}

// Peek renders the last n items of the session's active branch (docs/agents/pi.md §5): the
// path from the last entry back to the root, so abandoned branches do not mix in.
// A launched session without a file yet is rendered from its launch log.
func (a *Adapter) Peek(ctx context.Context, env *discover.Env, s discover.Session, n int) ([]discover.Message, error) {
	path := s.Path
	if path == "" {
		path = findFile(env, s.ID)
	}
	if path != "" {
		msgs, err := peekFile(ctx, path, n)
		if !errors.Is(err, fs.ErrNotExist) {
			return msgs, err
		}
	}
	if s.Log != "" {
		msgs, err := peekLog(s.Log, n)
		if err == nil && len(msgs) > 0 {
			return msgs, nil
		}
	}
	return nil, discover.ErrNoSession
}

func peekFile(ctx context.Context, path string, n int) ([]discover.Message, error) {
	f, err := agentfs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	// Pass 1: the tree skeleton. Entries without ids (v1 files) chain linearly.
	var skels []skel
	index := map[string]int{}
	first := true
	_, _, err = jsonl.Read(f, 0, func(line []byte, off int64) error {
		if first {
			first = false
			return nil // the header
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		e, ok := skeletonOf(line)
		if !ok {
			return nil // a torn line: skip it
		}
		k := skel{id: e.ID, off: off, n: len(line)}
		switch {
		case e.ID == "":
			k.id = fmt.Sprintf("#%d", off)
			if len(skels) > 0 {
				k.parent = skels[len(skels)-1].id
			}
		case e.ParentID != nil:
			k.parent = *e.ParentID
		}
		switch e.Type {
		case "model_change", "compaction", "branch_summary", "context_edit":
			k.produces = true
		case "message":
			switch e.Role {
			case "user", "assistant", "bashExecution", "system":
				k.produces = true
			}
		}
		index[k.id] = len(skels)
		skels = append(skels, k)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(skels) == 0 {
		return nil, discover.ErrNoSession
	}

	// The active branch, root first.
	var branch []int
	for i, steps := len(skels)-1, 0; steps <= len(skels); steps++ {
		branch = append(branch, i)
		j, ok := index[skels[i].parent]
		if !ok || skels[i].parent == "" {
			break
		}
		i = j
	}
	for l, r := 0, len(branch)-1; l < r; l, r = l+1, r-1 {
		branch[l], branch[r] = branch[r], branch[l]
	}

	// Only the tail of the branch is read again: walk back until n certain items.
	start := 0
	if n > 0 {
		count := 0
		for k := len(branch) - 1; k >= 0; k-- {
			if skels[branch[k]].produces {
				count++
				if count == n {
					start = k
					break
				}
			}
		}
	}
	recs := make([]rec, 0, len(branch)-start)
	for _, i := range branch[start:] {
		k := skels[i]
		buf := make([]byte, k.n)
		if _, err := f.ReadAt(buf, k.off); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		var e fullEntry
		if json.Unmarshal(buf, &e) != nil {
			continue
		}
		recs = append(recs, rec{E: e, Raw: buf})
	}
	return discover.LastN(build(recs), n), nil
}

// skeleton is what tree walking needs from an entry.
type skeleton struct {
	Type     string
	ID       string
	ParentID *string
	Role     string
}

// skeletonOf decodes an entry's tree fields. Big lines are read token by token and
// left as soon as the fields are known (pi writes them before the content), so a
// multi-MB tool result is not decoded just to learn its parent.
func skeletonOf(line []byte) (skeleton, bool) {
	if len(line) <= bigLine {
		var e struct {
			Type     string  `json:"type"`
			ID       string  `json:"id"`
			ParentID *string `json:"parentId"`
			Message  *struct {
				Role string `json:"role"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &e) != nil {
			return skeleton{}, false
		}
		k := skeleton{Type: e.Type, ID: e.ID, ParentID: e.ParentID}
		if e.Message != nil {
			k.Role = e.Message.Role
		}
		return k, true
	}
	if line[len(line)-1] != '}' {
		return skeleton{}, false
	}
	var k skeleton
	seenParent := false
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return skeleton{}, false
	}
	str := func() (string, bool) {
		var v any
		if dec.Decode(&v) != nil {
			return "", false
		}
		s, _ := v.(string)
		return s, true
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return skeleton{}, false
		}
		key, _ := t.(string)
		var ok bool
		switch key {
		case "type":
			k.Type, ok = str()
		case "id":
			k.ID, ok = str()
		case "parentId":
			var p *string
			ok = dec.Decode(&p) == nil
			k.ParentID, seenParent = p, true
		case "message":
			if t, err := dec.Token(); err != nil || t != json.Delim('{') {
				return skeleton{}, false
			}
			for dec.More() {
				t, err := dec.Token()
				if err != nil {
					return skeleton{}, false
				}
				if t == "role" {
					if k.Role, ok = str(); !ok {
						return skeleton{}, false
					}
					if k.Type != "" && k.ID != "" && seenParent {
						return k, true // pi's order: the rest is content
					}
					continue
				}
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					return skeleton{}, false
				}
			}
			_, err := dec.Token() // the closing '}'
			ok = err == nil
		default:
			var skip json.RawMessage
			ok = dec.Decode(&skip) == nil
		}
		if !ok {
			return skeleton{}, false
		}
	}
	return k, true
}

// peekLog renders a launch log (pi --mode json stdout, possibly with stderr mixed
// in): complete messages from message_end events.
func peekLog(path string, n int) ([]discover.Message, error) {
	var recs []rec
	seq := 0
	_, _, err := jsonl.ReadFile(path, 0, func(line []byte, off int64) error {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
			return nil
		}
		var ev struct {
			Type    string       `json:"type"`
			Message *fullMessage `json:"message"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.Type != "message_end" || ev.Message == nil {
			return nil
		}
		seq++
		var raw struct {
			Message json.RawMessage `json:"message"`
		}
		_ = json.Unmarshal(line, &raw)
		recs = append(recs, rec{
			E:   fullEntry{Type: "message", ID: fmt.Sprintf("log:%d", seq), Message: ev.Message},
			Raw: append([]byte(nil), raw.Message...),
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return discover.LastN(build(recs), n), nil
}

// build turns entries into items; tool results attach to their call.
func build(recs []rec) []discover.Message {
	var out []discover.Message
	for _, r := range recs {
		e := r.E
		ts := entryTime(e)
		item := discover.Message{TS: ts, MessageID: e.ID, Raw: []json.RawMessage{r.Raw}}
		switch e.Type {
		case "model_change":
			item.Kind, item.Text = "system", "model "+joinModel(e.Provider, e.ModelID)
		case "compaction":
			item.Kind, item.Text = "system", "context compacted"
		case "branch_summary":
			item.Kind, item.Text = "system", "branch summary"
		case "custom_message":
			if !e.Display {
				continue
			}
			item.Kind, item.Text = "system", contentText(e.Content, true)
		case "context_edit":
			item.Kind, item.Text = "system", contextEdit(out, e)
		case "message":
			if e.Message == nil {
				continue
			}
			out = appendMessage(out, item, e.Message, r.Raw)
			continue
		default:
			continue // thinking_level_change, custom, label, session_info
		}
		out = append(out, item)
	}
	return out
}

func appendMessage(out []discover.Message, item discover.Message, m *fullMessage, raw []byte) []discover.Message {
	switch m.Role {
	case "user":
		item.Kind, item.Text = "user", contentText(m.Content, true)
	case "assistant":
		text, tools := assistantContent(m.Content)
		item.Kind, item.Text, item.Tools = "assistant", text, tools
		if m.StopReason == "error" {
			errItem := item
			errItem.Kind, errItem.Text, errItem.Tools, errItem.IsError = "error", m.ErrorMessage, nil, true
			if errItem.Text == "" {
				errItem.Text = "error"
			}
			if text == "" && len(tools) == 0 {
				return append(out, errItem)
			}
			errItem.MessageID += ":error"
			return append(out, item, errItem)
		}
		if m.StopReason == "aborted" && text == "" && len(tools) == 0 {
			item.Kind, item.Text = "system", "aborted"
		}
	case "toolResult":
		// Attach to the call; a result whose call is outside the window is dropped.
		for i := len(out) - 1; i >= 0; i-- {
			for j := range out[i].Tools {
				t := &out[i].Tools[j]
				if t.ID == m.ToolCallID && !t.HasResult {
					t.HasResult, t.IsError = true, m.IsError
					t.Result = discover.FirstLine(contentText(m.Content, true), 100)
					out[i].Raw = append(out[i].Raw, raw)
					return out
				}
			}
		}
		return out
	case "bashExecution":
		item.Kind, item.Text = "system", "$ "+m.Command
		switch {
		case m.Cancelled:
			item.Text += " (cancelled)"
		case m.ExitCode != nil:
			item.Text += fmt.Sprintf(" (exit %d)", *m.ExitCode)
		}
	case "custom", "hookMessage":
		if m.Display != nil && !*m.Display {
			return out
		}
		item.Kind, item.Text = "system", contentText(m.Content, true)
	case "system":
		text := systemText(m)
		if text == "" {
			return out
		}
		item.Kind, item.Text = "system", text
	case "branchSummary":
		item.Kind, item.Text = "system", "branch summary"
	case "compactionSummary":
		item.Kind, item.Text = "system", "context compacted"
	default:
		return out
	}
	if item.TS.IsZero() {
		item.TS = m.Timestamp.time()
	}
	return append(out, item)
}

// assistantContent returns the text blocks joined and the tool calls (thinking is
// left out: it is for --verbose, which peek does not have).
func assistantContent(raw json.RawMessage) (string, []discover.ToolCall) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		return contentText(raw, false), nil
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return "", nil
	}
	var texts []string
	var tools []discover.ToolCall
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				texts = append(texts, b.Text)
			}
		case "toolCall":
			tools = append(tools, discover.ToolCall{ID: b.ID, Name: b.Name, Summary: toolSummary(b.Name, b.Arguments)})
		}
	}
	return strings.Join(texts, "\n"), tools
}

// toolSummary is docs/agents/pi.md §5: the command for bash, the path for file tools, else
// compact JSON of the arguments (≤ 120 chars).
func toolSummary(name string, args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) == nil {
		key := ""
		switch strings.ToLower(name) {
		case "bash":
			key = "command"
		case "read", "edit", "write":
			key = "path"
		}
		if v, ok := m[key].(string); ok && key != "" {
			return v
		}
	}
	return discover.ArgSummary(args, 120)
}

func joinModel(provider, model string) string {
	if provider == "" {
		return model
	}
	return provider + "/" + model
}

func entryTime(e fullEntry) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil {
		return t.UTC()
	}
	if e.Message != nil {
		return e.Message.Timestamp.time()
	}
	return time.Time{}
}

// systemText summarises pi 1.6's system message: which prompt sections it sets
// (their names, in order: the text is pi's own and long) and the tools it adds
// or removes ("system prompt (preamble, tools, rules); tools +read +bash").
func systemText(m *fullMessage) string {
	var parts []string
	if names := objectKeys(m.Sections); len(names) > 0 {
		parts = append(parts, "system prompt ("+strings.Join(names, ", ")+")")
	}
	var tools []string
	for _, t := range m.ToolsAdded {
		tools = append(tools, "+"+t.Name)
	}
	for _, t := range m.ToolsRemoved {
		tools = append(tools, "-"+t.Name)
	}
	if len(tools) > 0 {
		parts = append(parts, "tools "+strings.Join(tools, " "))
	}
	return strings.Join(parts, "; ")
}

// objectKeys lists a JSON object's keys in file order (nil if it is not one).
func objectKeys(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
		keys = append(keys, k)
	}
	return keys
}

// contextEdit describes a context_edit entry, naming its target by the item it
// rendered as when that is in view ("error a90240a7").
func contextEdit(out []discover.Message, e fullEntry) string {
	what := "entry " + e.TargetID
	for i := len(out) - 1; i >= 0; i-- {
		if id := strings.TrimSuffix(out[i].MessageID, ":error"); id == e.TargetID {
			what = out[i].Kind + " " + e.TargetID
			break
		}
	}
	if r := bytes.TrimSpace(e.Replacement); len(r) == 0 || bytes.Equal(r, []byte("null")) {
		return "context edit: " + what + " dropped from the model's context"
	}
	return "context edit: " + what + " replaced in the model's context"
}
