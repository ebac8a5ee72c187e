package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/meta"
)

// maxWindow caps peek's tail read.
const maxWindow = 64 << 20

// Peek returns the last n items of a session's conversation (docs/agents/claude-code.md §5). Without a
// transcript it renders the stdout log of agentctl's launch, which holds the same
// message shapes.
func (a *Adapter) Peek(ctx context.Context, env *discover.Env, s discover.Session, n int) ([]discover.Message, error) {
	path := s.Path
	if path == "" || !regular(path) {
		var err error
		if path, err = findTranscript(Root(env), s.ID); err != nil {
			return nil, err
		}
	}
	if path != "" {
		return peekFile(ctx, path, n)
	}
	for _, l := range env.LaunchesFor(Name) {
		if l.Log != "" && (l.SessionID == s.ID || l.CurrentSessionID() == s.ID) && regular(l.Log) {
			return peekLaunchLog(ctx, l, n)
		}
	}
	return nil, discover.ErrNoSession
}

// peekLaunchLog renders a launch's stdout (stream-json). It does not echo the
// prompt, so the launch record's prompt opens the conversation.
func peekLaunchLog(ctx context.Context, l meta.Launch, n int) ([]discover.Message, error) {
	items, err := peekFile(ctx, l.Log, n)
	if err != nil && err != discover.ErrNoSession {
		return nil, err
	}
	if l.Prompt != "" && (n <= 0 || len(items) < n) {
		items = append([]discover.Message{{TS: l.LaunchedAt.UTC(), Kind: "user", Text: l.Prompt}}, items...)
	}
	if len(items) == 0 {
		return nil, discover.ErrNoSession
	}
	return items, nil
}

func regular(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// peekFile reads the last 256 KiB and widens the window (nextWindow, up to
// 64 MiB) until it holds n items or reaches the start of the file.
func peekFile(ctx context.Context, path string, n int) ([]discover.Message, error) {
	items, err := peekTail(ctx, path, n, discover.OpenTailMapped)
	if errors.Is(err, errFault) {
		// The file shrank under the mapping: read it instead.
		return peekTail(ctx, path, n, discover.OpenTail)
	}
	return items, err
}

var errFault = errors.New("memory fault reading a mapped file")

// peekTail is peekFile over the file as open gives it: memory-mapped
// (discover.OpenTailMapped) or read (discover.OpenTail).
func peekTail(ctx context.Context, path string, n int, open func(string) (*discover.Tail, error)) (items []discover.Message, err error) {
	tail, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer tail.Close()
	if !tail.Mapped() {
		return peekWindows(ctx, path, n, tail)
	}
	// A mapped file truncated meanwhile faults on access: turn that into an
	// error instead of a crash.
	if !index.NoFault(func() { items, err = peekWindows(ctx, path, n, tail) }) {
		return nil, errFault
	}
	return items, err
}

// peekWindows reads ever wider windows of the tail until they hold the last n
// items (n <= 0: all of maxWindow).
func peekWindows(ctx context.Context, path string, n int, tail *discover.Tail) ([]discover.Message, error) {
	window := int64(tailWindow)
	if n <= 0 {
		window = maxWindow
	}
	for {
		lines, offs, atStart, err := tail.Window(window)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		got := buildItems(lines, offs)
		if (n > 0 && len(got) >= n) || atStart || window >= maxWindow || ctx.Err() != nil {
			got = discover.LastN(got, n)
			if len(got) == 0 {
				return nil, discover.ErrNoSession
			}
			switch {
			case tail.Mapped() && !discover.WantRaw(ctx):
				// Nobody prints them: no need to copy them out of the mapping.
				for i := range got {
					got[i].Raw = nil
				}
			case tail.Mapped():
				// The raw records are views of the mapping, which Close removes.
				for i := range got {
					for j, r := range got[i].Raw {
						got[i].Raw[j] = append(json.RawMessage(nil), r...)
					}
				}
			}
			return got, ctx.Err()
		}
		window = nextWindow(window, len(got), n)
	}
}

// nextWindow sizes the next window from what the last one held: a transcript's
// items are anything from a few hundred bytes to megabytes each (tool results),
// so doubling blindly read up to twice the bytes needed, and every byte of a
// mapped file costs a page fault on its first read. With items in hand it aims
// at the bytes n of them take at the size seen so far, plus an eighth; it grows
// at least by half and at most eightfold, and fourfold while nothing was found.
func nextWindow(window int64, got, n int) int64 {
	next := window * 4
	if got > 0 && n > 0 {
		next = window / int64(got) * int64(n)
		next += next / 8
		next = min(max(next, window+window/2), window*8)
	}
	return min(next, maxWindow)
}

// item is a peek item under construction.
type item struct {
	discover.Message
	ts    int64 // ms; 0 until filled from its neighbours
	off   int64
	texts []string
	tools map[string]int // tool_use id → index in Tools
}

// buildItems turns transcript (or stream-json) lines into peek items: prompts,
// assistant messages (lines grouped by message.id, repeats dropped), tool results
// attached to their calls, API errors and compactions. Items sort by timestamp,
// then file offset: file order is not always conversation order.
func buildItems(lines [][]byte, offs []int64) []discover.Message {
	var items []*item
	byMsg := map[string]*item{}
	calls := map[string]*item{}
	var r record
	var lastTS int64 // latest timestamp seen in file order, for records without one
	for i, line := range lines {
		if parseRecord(line, &r) != nil || r.Sidechain {
			continue
		}
		raw := json.RawMessage(line)
		ts := tsMillis(r.Timestamp)
		if ts == 0 {
			ts = lastTS
		} else {
			lastTS = ts
		}
		add := func(kind string) *item {
			it := &item{Message: discover.Message{Kind: kind, UUID: str(r.UUID), Raw: []json.RawMessage{raw}}, ts: ts, off: offs[i]}
			items = append(items, it)
			return it
		}
		switch string(unq(r.Type)) {
		case "user":
			if r.Meta {
				continue
			}
			m := parseMessage(r.Message)
			attachResults(m.Content, r.ToolUseResult, calls, raw)
			c := parseUserContent(m.Content, 0)
			switch {
			case c.HasText && slashCommand(c.Text) != "":
				add("user").Text = slashCommand(c.Text)
			case c.HasText && !injected(c.Text):
				add("user").Text = c.Text
			case !c.HasText && c.Image && !c.ToolResult:
				add("user").Text = "[image]"
			}
		case "assistant":
			m := parseMessage(r.Message)
			if strEq(m.Model, "<synthetic>") || r.APIError {
				it := add("error")
				it.Text, it.IsError = assistantText(m.Content), true
				continue
			}
			id := str(m.ID)
			it := byMsg[id]
			if it == nil {
				it = add("assistant")
				it.MessageID = id
				if id != "" {
					byMsg[id] = it
				}
			} else {
				it.Raw = append(it.Raw, raw)
			}
			it.addBlocks(m.Content, calls)
		case "system":
			if strEq(r.Subtype, "compact_boundary") {
				add("system").Text = compactText(r.CompactMetadata)
			}
		}
	}
	// Records without a timestamp (2.1.197 stream-json assistant lines) took the
	// latest one before them; leading ones take the first one after them, so they
	// keep their place in file order.
	for i := len(items) - 2; i >= 0; i-- {
		if items[i].ts == 0 {
			items[i].ts = items[i+1].ts
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].ts != items[j].ts {
			return items[i].ts < items[j].ts
		}
		return items[i].off < items[j].off
	})
	out := make([]discover.Message, 0, len(items))
	for _, it := range items {
		if it.Kind == "assistant" {
			it.Text = strings.Join(it.texts, "\n")
			if it.Text == "" && len(it.Tools) == 0 {
				continue // only thinking blocks
			}
		}
		if it.ts != 0 {
			it.TS = time.UnixMilli(it.ts).UTC()
		}
		out = append(out, it.Message)
	}
	return out
}

// addBlocks appends an assistant line's blocks, dropping repeats: the same
// tool_use id or the same text seen on an earlier line of the message.
func (it *item) addBlocks(content []byte, calls map[string]*item) {
	if isString(content) {
		it.addText(str(content))
		return
	}
	eachBlock(content, func(b *block) bool {
		switch {
		case strEq(b.Type, "text"):
			it.addText(str(b.Text))
		case strEq(b.Type, "tool_use"):
			tid := str(b.ID)
			if _, dup := it.tools[tid]; dup && tid != "" {
				return true
			}
			if it.tools == nil {
				it.tools = map[string]int{}
			}
			it.tools[tid] = len(it.Tools)
			it.Tools = append(it.Tools, discover.ToolCall{ID: tid, Name: str(b.Name), Summary: toolSummary(str(b.Name), b.Input)})
			if tid != "" {
				calls[tid] = it
			}
		}
		return true
	})
}

func (it *item) addText(t string) {
	if strings.TrimSpace(t) == "" {
		return
	}
	for _, s := range it.texts {
		if s == t {
			return
		}
	}
	it.texts = append(it.texts, t)
}

// attachResults hangs tool_result blocks under their calls. A result whose call
// is outside the window is dropped.
func attachResults(content, toolUseResult []byte, calls map[string]*item, raw json.RawMessage) {
	if !isArray(content) {
		return
	}
	interrupted := isObject(toolUseResult) && isTrue(field(toolUseResult, "interrupted"))
	eachBlock(content, func(b *block) bool {
		if !strEq(b.Type, "tool_result") {
			return true
		}
		id := str(b.ToolUseID)
		it := calls[id]
		if it == nil {
			return true
		}
		k := it.tools[id]
		tc := &it.Tools[k]
		tc.HasResult = true
		tc.IsError = isTrue(b.IsError)
		tc.Interrupted = interrupted
		tc.Result = resultLine(b.Content, 100)
		it.Raw = append(it.Raw, raw)
		return true
	})
}

// resultLine is the first non-empty line (at most max runes) of a tool_result's
// content, a string or text blocks, as firstLine(resultText(body), max) gives it.
// Tool output can be megabytes: each string is decoded from its first KiB when
// that settles the line, else from its first 64 KiB as resultText does.
func resultLine(body []byte, max int) string {
	if isString(body) {
		return stringLine(body, max)
	}
	var line string
	eachBlock(body, func(b *block) bool {
		if strEq(b.Type, "text") {
			line = stringLine(b.Text, max)
		}
		return line == ""
	})
	return line
}

// resultPrefix bounds how much of one tool output resultText decodes.
const resultPrefix = 64 << 10

// stringLine is firstLine(strPrefix(v, resultPrefix), max), decoding less when a
// short prefix already holds a complete first non-empty line (or max runes of it).
func stringLine(v []byte, max int) string {
	if !isString(v) {
		return ""
	}
	const short = 1 << 10
	if len(v)-2 > short {
		s := strPrefix(v, short)
		if l, ok := settledLine(s, max); ok {
			return l
		}
	}
	return firstLine(strPrefix(v, resultPrefix), max)
}

// settledLine finds the first non-empty line in s, a prefix of a longer text,
// and reports whether the rest of the text cannot change it: the line ends
// inside s, or it already has max runes.
func settledLine(s string, max int) (string, bool) {
	for s != "" {
		l, rest, nl := strings.Cut(s, "\n")
		if t := strings.TrimSpace(l); t != "" {
			if !nl && utf8.RuneCountInString(t) < max {
				return "", false // the line may go on past the prefix
			}
			return cut(t, max), true
		}
		if !nl {
			return "", false
		}
		s = rest
	}
	return "", false
}

// resultText is a tool_result's content: a string or text blocks.
func resultText(body []byte) string {
	if isString(body) {
		return strPrefix(body, resultPrefix)
	}
	var parts []string
	eachBlock(body, func(b *block) bool {
		if strEq(b.Type, "text") {
			parts = append(parts, strPrefix(b.Text, resultPrefix))
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// firstLine is the first non-empty line of s, at most max runes.
func firstLine(s string, max int) string {
	for s != "" {
		l, rest, _ := strings.Cut(s, "\n")
		if l = strings.TrimSpace(l); l != "" {
			return cut(l, max)
		}
		s = rest
	}
	return ""
}

// toolSummary is the one-line argument shown after a tool's name (docs/agents/claude-code.md §5).
func toolSummary(name string, input []byte) string {
	get := func(k string) string { return str(field(input, k)) }
	var s string
	switch name {
	case "Bash":
		s = get("command")
	case "Read", "Edit", "Write", "MultiEdit":
		s = get("file_path")
	case "NotebookEdit", "NotebookRead":
		s = get("notebook_path")
	case "Grep", "Glob":
		s = get("pattern")
	case "Task", "Agent":
		s = get("description")
		if t := get("subagent_type"); t != "" {
			s = "(" + t + ") " + s
		}
	case "WebFetch":
		s = get("url")
	case "WebSearch":
		s = get("query")
	}
	if s != "" || !isObject(input) {
		return s
	}
	var b bytes.Buffer
	if err := json.Compact(&b, input); err != nil {
		return string(input)
	}
	return b.String()
}

// compactText renders a compact_boundary: "context compacted (auto, 167000 tokens)".
func compactText(meta []byte) string {
	trigger := str(field(meta, "trigger"))
	pre := num(field(meta, "preTokens"))
	switch {
	case trigger != "" && pre > 0:
		return fmt.Sprintf("context compacted (%s, %d tokens)", trigger, pre)
	case trigger != "":
		return fmt.Sprintf("context compacted (%s)", trigger)
	}
	return "context compacted"
}
