package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// Peek returns the last n conversational items of a thread (n <= 0: all), oldest
// first. It reads the rollout backwards in growing windows until it has n items,
// so a long thread costs what its last turns cost. A launched thread whose rollout
// does not exist yet is read from its launch log (codex exec --json stdout).
func (a *Adapter) Peek(ctx context.Context, env *discover.Env, s discover.Session, n int) ([]discover.Message, error) {
	path := s.Path
	if path == "" || !fileExists(path) {
		path = locateRollout(env, s.ID)
	}
	if path == "" {
		if s.Log != "" && fileExists(s.Log) {
			items := readExecLog(s.Log, 0)
			msgs := make([]discover.Message, 0, len(items))
			for _, it := range items {
				msgs = append(msgs, it.Message)
			}
			return discover.LastN(msgs, n), nil
		}
		return nil, discover.ErrNoSession
	}
	if strings.HasSuffix(path, ".zst") {
		return nil, fmt.Errorf("%s: compressed rollouts (zstd) cannot be read yet", path)
	}
	var msgs []discover.Message
	var err error
	if chain := historyChain(path, func(id, from string) string { return findRolloutByOwnID(env, id, from) }); len(chain) > 1 {
		msgs, err = peekChain(ctx, chain, n)
	} else {
		msgs, err = peekRollout(ctx, path, n)
	}
	if err != nil {
		return nil, discover.Errorf(path, err)
	}
	if len(msgs) == 0 {
		return nil, discover.ErrNoSession
	}
	return msgs, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// locateRollout finds a thread's rollout by the UUID in its file name: the
// newest when the thread spans several (docs/agents/codex.md §1.1).
func locateRollout(env *discover.Env, id string) string {
	if id == "" {
		return ""
	}
	want := strings.ToLower(id)
	var parts []*rolloutFile
	for _, rf := range findRollouts(Home(env), func(x string) bool { return x == want }, []string{want}, openNames(env)) {
		if rf.ID == want {
			parts = append(parts, &rf)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	orderParts(parts)
	return parts[len(parts)-1].Path
}

// segment is the part of one rollout that belongs to a thread's history: its
// bytes before end (end < 0: all of it).
type segment struct {
	path string
	end  int64
}

// maxChain bounds how many rollouts a history is followed through.
const maxChain = 64

// historyChain is the thread's history as Codex holds it, first rollout to
// newest: from path, each rollout's session_meta.history_base names the rollout
// (by its own id) and the byte offset its history continues from (docs/agents/
// codex.md §1.1); find returns the path of the rollout with that own id ("":
// not found). A base that cannot be found ends the chain there.
func historyChain(path string, find func(rollout, from string) string) []segment {
	chain := []segment{{path: path, end: -1}}
	seen := map[string]bool{path: true}
	for len(chain) < maxChain {
		base, ok := readHistoryBase(chain[0].path)
		if !ok {
			break
		}
		p := find(base.Rollout, chain[0].path)
		if p == "" || seen[p] {
			break
		}
		seen[p] = true
		chain = append([]segment{{path: p, end: base.End}}, chain...)
	}
	return chain
}

// historyBase is session_meta.history_base: the rollout (its own id, in the
// field Codex calls thread_id) and the offset the history continues from.
type historyBase struct {
	Rollout string
	End     int64
}

// readHistoryBase reads the rollout's first line, its session_meta.
func readHistoryBase(path string) (historyBase, bool) {
	f, err := agentfs.Open(path)
	if err != nil {
		return historyBase{}, false
	}
	defer f.Close()
	var first []byte
	_, _, _ = jsonl.Read(io.NewSectionReader(f, 0, 4<<20), 0, func(line []byte, _ int64) error {
		first = append([]byte(nil), line...)
		return io.EOF
	})
	var m struct {
		Type    string `json:"type"`
		Payload struct {
			HistoryBase *struct {
				ThreadID      string `json:"thread_id"`
				EndByteOffset *int64 `json:"end_byte_offset"`
			} `json:"history_base"`
		} `json:"payload"`
	}
	if json.Unmarshal(first, &m) != nil || m.Type != "session_meta" || m.Payload.HistoryBase == nil {
		return historyBase{}, false
	}
	b := m.Payload.HistoryBase
	id := strings.ToLower(b.ThreadID)
	if !discover.IsUUIDAnyCase(id) || b.EndByteOffset == nil || *b.EndByteOffset < 0 {
		return historyBase{}, false
	}
	return historyBase{Rollout: id, End: *b.EndByteOffset}, true
}

// findRolloutByOwnID finds the rollout whose own id is id: a thread's first
// rollout (named by the id alone), or a later rollout of the same thread as
// from (rollout-<time>-<thread>_<id>), or, for a fork of a reverted thread, any.
func findRolloutByOwnID(env *discover.Env, id, from string) string {
	home := Home(env)
	stem := strings.TrimSuffix(filepath.Base(from), ".jsonl")
	for _, thread := range []string{id, idFromStem(stem)} {
		for _, rf := range findRollouts(home, func(x string) bool { return x == thread }, []string{thread}, openNames(env)) {
			if rf.Rollout == id && !rf.Compressed {
				return rf.Path
			}
		}
	}
	for _, rf := range findRollouts(home, nil, nil, nil) {
		if rf.Rollout == id && !rf.Compressed {
			return rf.Path
		}
	}
	return ""
}

// peekChain renders a history spread over several rollouts, oldest first.
func peekChain(ctx context.Context, chain []segment, n int) ([]discover.Message, error) {
	var all []discover.Message
	for _, seg := range chain {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := agentfs.Open(seg.path)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		end := fi.Size()
		if seg.end >= 0 && seg.end < end {
			end = seg.end
		}
		msgs, err := parseMessages(f, 0, end)
		f.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, msgs...)
	}
	return discover.LastN(all, n), nil
}

func peekRollout(ctx context.Context, path string, n int) ([]discover.Message, error) {
	f, err := agentfs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	window := int64(256 << 10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := int64(0)
		if n > 0 && size > window {
			start = size - window
		}
		msgs, err := parseMessages(f, start, size)
		if err != nil {
			return nil, err
		}
		// One more than asked: the window's first item may lack what came before
		// the window (its tool calls, its duplicates' context).
		if start == 0 || len(msgs) > n {
			return discover.LastN(msgs, n), nil
		}
		window *= 4
	}
}

type rawLine struct {
	rec record
	raw json.RawMessage
	off int64
	seg int
	ts  time.Time
}

// parseMessages renders the complete lines in [start, end) of a rollout. A start
// inside a line skips that line.
func parseMessages(f *os.File, start, end int64) ([]discover.Message, error) {
	var lines []rawLine
	skipFirst := start > 0 && !jsonl.StartsLine(f, start)
	seg, started := 0, false
	_, _, err := jsonl.Read(io.NewSectionReader(f, start, end-start), start, func(line []byte, off int64) error {
		if skipFirst {
			skipFirst = false
			return nil
		}
		r, err := decode(line)
		if err != nil || r.Payload == nil && r.Type != "compacted" {
			return nil // unparseable or unknown: skipped silently
		}
		if r.Type == "event_msg" && r.sub() == "task_started" {
			// What comes before a rollout's first task_started belongs to that
			// first turn: `codex migrate-rollouts` writes the first turn's
			// prompt (response_item) before it.
			if started {
				seg++
			}
			started = true
		}
		lines = append(lines, rawLine{rec: r, raw: append(json.RawMessage(nil), line...), off: off, seg: seg, ts: r.time()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return buildMessages(lines), nil
}

// buildMessages turns records into peek items. Per turn (segment between
// task_started markers): when the turn has item_completed or legacy
// user_message/agent_message events, its response_item messages are duplicates or
// injected context and are not shown (docs/agents/codex.md §5); tool calls are response items
// either way, and item_completed tool items are used only when a turn has no
// response_item tool calls (so one call is never shown twice).
func buildMessages(lines []rawLine) []discover.Message {
	hasText := map[int]bool{}
	hasCalls := map[int]bool{}
	for _, l := range lines {
		p := l.rec.Payload
		if p == nil {
			continue
		}
		switch {
		case l.rec.Type == "event_msg" && (p.Type == "user_message" || p.Type == "agent_message"):
			hasText[l.seg] = true
		case l.rec.Type == "event_msg" && p.Type == "item_completed" && p.Item != nil &&
			(p.Item.Type == "UserMessage" || p.Item.Type == "AgentMessage"):
			hasText[l.seg] = true
		case l.rec.Type == "response_item" && (p.Type == "function_call" || p.Type == "custom_tool_call" || p.Type == "local_shell_call"):
			hasCalls[l.seg] = true
		}
	}

	var msgs []discover.Message
	calls := map[string][2]int{} // call_id → message index, tool index
	canAttach := -1              // assistant message that takes the next tool calls
	add := func(l rawLine, kind, text, id string) int {
		m := discover.Message{TS: l.ts, Kind: kind, Text: text, Raw: []json.RawMessage{l.raw}}
		if id != "" {
			m.MessageID = id
		} else {
			m.UUID = "off:" + strconv.FormatInt(l.off, 10)
		}
		msgs = append(msgs, m)
		return len(msgs) - 1
	}
	addTool := func(l rawLine, tc discover.ToolCall, callID string) {
		if canAttach < 0 {
			canAttach = add(l, "assistant", "", "")
		} else {
			msgs[canAttach].Raw = append(msgs[canAttach].Raw, l.raw)
		}
		m := &msgs[canAttach]
		m.Tools = append(m.Tools, tc)
		if callID != "" {
			calls[callID] = [2]int{canAttach, len(m.Tools) - 1}
		}
	}
	addResult := func(l rawLine, callID string, res toolResult) {
		loc, ok := calls[callID]
		if !ok {
			return
		}
		m := &msgs[loc[0]]
		tc := &m.Tools[loc[1]]
		tc.HasResult, tc.Result, tc.IsError = true, res.first, res.isErr
		m.Raw = append(m.Raw, l.raw)
	}

	for _, l := range lines {
		p := l.rec.Payload
		switch l.rec.Type {
		case "compacted":
			add(l, "system", "context compacted", "")
			canAttach = -1
		case "event_msg":
			switch p.Type {
			case "user_message":
				add(l, "user", p.Message, "")
				canAttach = -1
			case "agent_message":
				canAttach = add(l, "assistant", p.Message, "")
			case "item_completed":
				it := p.Item
				if it == nil {
					continue
				}
				switch it.Type {
				case "UserMessage":
					add(l, "user", joinText(it.Content), it.ID)
					canAttach = -1
				case "AgentMessage":
					text := joinText(it.Content)
					if text == "" {
						text = it.Text
					}
					canAttach = add(l, "assistant", text, it.ID)
				case "CommandExecution", "FileChange", "McpToolCall":
					if !hasCalls[l.seg] {
						addTool(l, itemTool(it), it.ID)
					}
				}
			case "task_complete":
				text := "turn done"
				if p.DurationMS != nil {
					text = fmt.Sprintf("turn done (%.1fs)", float64(*p.DurationMS)/1000)
				}
				add(l, "system", text, "")
				canAttach = -1
			case "turn_aborted":
				add(l, "system", "turn "+nonEmpty(p.Reason, "aborted"), "")
				canAttach = -1
			case "error":
				i := add(l, "error", p.Message, "")
				msgs[i].IsError = true
			}
		case "response_item":
			switch p.Type {
			case "message":
				if hasText[l.seg] {
					continue
				}
				text := joinText(p.Content)
				switch p.Role {
				case "user":
					if text != "" && !injectedUser(text) {
						add(l, "user", text, p.ID)
						canAttach = -1
					}
				case "assistant":
					if text != "" {
						canAttach = add(l, "assistant", text, p.ID)
					}
				}
			case "function_call":
				addTool(l, discover.ToolCall{ID: p.CallID, Name: p.Name, Summary: argsSummary(p.Arguments)}, p.CallID)
			case "custom_tool_call":
				addTool(l, discover.ToolCall{ID: p.CallID, Name: p.Name, Summary: patchSummary(p.Input)}, p.CallID)
			case "local_shell_call":
				var cmd []string
				if p.Action != nil {
					cmd = p.Action.Command
				}
				addTool(l, discover.ToolCall{ID: p.CallID, Name: "shell", Summary: shellSummary(cmd)}, p.CallID)
			case "web_search_call":
				q := ""
				if p.Action != nil {
					q = p.Action.Query
				}
				addTool(l, discover.ToolCall{Name: "web_search", Summary: q, HasResult: p.Status == "completed"}, "")
			case "function_call_output", "custom_tool_call_output":
				addResult(l, p.CallID, parseOutput(p.Output))
			}
		}
	}
	return msgs
}

func itemTool(it *item) discover.ToolCall {
	tc := discover.ToolCall{ID: it.ID}
	switch it.Type {
	case "CommandExecution":
		tc.Name = "shell"
		var argv []string
		if json.Unmarshal(it.Command, &argv) == nil {
			tc.Summary = shellSummary(argv)
		} else {
			tc.Summary = rawString(it.Command)
		}
		out := it.AggregatedOutput
		if out == "" {
			out = it.Output
		}
		if it.ExitCode != nil || it.Status == "completed" || it.Status == "failed" {
			tc.HasResult = true
			tc.Result = discover.FirstLine(out, 100)
			tc.IsError = (it.ExitCode != nil && *it.ExitCode != 0) || it.Status == "failed"
		}
	case "FileChange":
		tc.Name = "edit"
		tc.Summary = strings.Join(changePaths(it.Changes), ", ")
		tc.HasResult = it.Status != "" && it.Status != "in_progress" && it.Status != "inProgress"
		tc.IsError = it.Status == "failed"
	case "McpToolCall":
		tc.Name = "mcp"
		tc.Summary = it.Server + "." + it.Tool
		tc.HasResult = it.Status != "" && it.Status != "in_progress" && it.Status != "inProgress"
		tc.IsError = it.Status == "failed"
	}
	return tc
}

func changePaths(raw json.RawMessage) []string {
	var arr []struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(raw, &arr) == nil {
		var out []string
		for _, c := range arr {
			out = append(out, c.Path)
		}
		return out
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		return sortedIDs(obj)
	}
	return nil
}

// argsSummary renders function_call arguments: the command for shell tools, else
// the compact JSON.
func argsSummary(args string) string {
	var a struct {
		Command json.RawMessage `json:"command"`
		Cmd     string          `json:"cmd"`
	}
	if json.Unmarshal([]byte(args), &a) == nil {
		var argv []string
		switch {
		case json.Unmarshal(a.Command, &argv) == nil && len(argv) > 0:
			return shellSummary(argv)
		case len(a.Command) > 0:
			return rawString(a.Command)
		case a.Cmd != "":
			return a.Cmd
		}
	}
	return discover.OneLine(args, 200)
}

// shellSummary drops the `bash -lc` wrapper Codex puts around commands.
func shellSummary(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

func patchSummary(input string) string {
	var files []string
	for _, l := range strings.Split(input, "\n") {
		for _, p := range []string{"*** Update File: ", "*** Add File: ", "*** Delete File: "} {
			if strings.HasPrefix(l, p) {
				files = append(files, strings.TrimPrefix(l, p))
			}
		}
	}
	if len(files) > 0 {
		return strings.Join(files, ", ")
	}
	return discover.OneLine(input, 200)
}

type toolResult struct {
	first string
	isErr bool
}

var exitRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^(?:Exit code:|Process exited with code) (-?\d+)`)
})

// parseOutput reads a function_call_output: a JSON string holding either
// {"output","metadata":{"exit_code"}} (older) or plain text with an "Exit code: N"
// / "Process exited with code N" header and an "Output:" section (newer), or an
// array of content items.
func parseOutput(raw json.RawMessage) toolResult {
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		var items []part
		if json.Unmarshal(raw, &items) == nil {
			return toolResult{first: discover.FirstLine(joinText(items), 100)}
		}
		var obj struct {
			Content string `json:"content"`
			Success *bool  `json:"success"`
		}
		if json.Unmarshal(raw, &obj) == nil {
			return toolResult{first: discover.FirstLine(obj.Content, 100), isErr: obj.Success != nil && !*obj.Success}
		}
		return toolResult{first: discover.FirstLine(string(raw), 100)}
	}
	var wrapped struct {
		Output   *string `json:"output"`
		Metadata struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	}
	if strings.HasPrefix(strings.TrimSpace(text), "{") && json.Unmarshal([]byte(text), &wrapped) == nil && wrapped.Output != nil {
		r := toolResult{first: discover.FirstLine(*wrapped.Output, 100)}
		r.isErr = wrapped.Metadata.ExitCode != nil && *wrapped.Metadata.ExitCode != 0
		return r
	}
	r := toolResult{}
	if m := exitRE().FindStringSubmatch(text); m != nil {
		code, _ := strconv.Atoi(m[1])
		r.isErr = code != 0
		if i := strings.Index(text, "\nOutput:\n"); i >= 0 {
			text = text[i+len("\nOutput:\n"):]
		}
	}
	r.first = discover.FirstLine(text, 100)
	return r
}

// execItem is one event of a `codex exec --json` stdout log.
type execItem struct {
	discover.Message
	turnFailed bool // turn.failed or a top-level error
	turnEnd    bool // turn.completed
}

// readExecLog reads a launch log written from `codex exec --json` stdout. Lines
// that are not JSON (a supervisor's own notes) are skipped. An item.completed of
// type "error" is a non-fatal warning (docs/agents/codex.md pitfall 18), not a failure.
func readExecLog(path string, window int64) []execItem {
	var lines [][]byte
	var offs []int64
	if window > 0 {
		lines, offs, _, _ = jsonl.Tail(path, window)
	} else {
		_, _, _ = jsonl.ReadFile(path, 0, func(line []byte, off int64) error {
			lines = append(lines, append([]byte(nil), line...))
			offs = append(offs, off)
			return nil
		})
	}
	var out []execItem
	for i, line := range lines {
		var ev struct {
			Type string `json:"type"`
			Item *struct {
				ID               string          `json:"id"`
				Type             string          `json:"type"`
				Text             string          `json:"text"`
				Message          string          `json:"message"`
				Command          json.RawMessage `json:"command"`
				AggregatedOutput string          `json:"aggregated_output"`
				ExitCode         *int            `json:"exit_code"`
				Status           string          `json:"status"`
				Changes          json.RawMessage `json:"changes"`
				Server           string          `json:"server"`
				Tool             string          `json:"tool"`
				Query            string          `json:"query"`
			} `json:"item"`
			Message string `json:"message"`
			Error   *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		raw := []json.RawMessage{append(json.RawMessage(nil), line...)}
		msg := func(kind, text string) discover.Message {
			return discover.Message{Kind: kind, Text: text, Raw: raw, UUID: "log:" + strconv.FormatInt(offs[i], 10)}
		}
		switch ev.Type {
		case "item.completed":
			it := ev.Item
			if it == nil {
				continue
			}
			m := msg("assistant", "")
			switch it.Type {
			case "agent_message":
				m.Text = it.Text
			case "error":
				m = msg("system", "warning: "+it.Message)
			case "command_execution":
				tc := itemTool(&item{Type: "CommandExecution", ID: it.ID, Command: it.Command, AggregatedOutput: it.AggregatedOutput, ExitCode: it.ExitCode, Status: it.Status})
				m.Tools = []discover.ToolCall{tc}
			case "file_change":
				m.Tools = []discover.ToolCall{itemTool(&item{Type: "FileChange", ID: it.ID, Changes: it.Changes, Status: it.Status})}
			case "mcp_tool_call":
				m.Tools = []discover.ToolCall{itemTool(&item{Type: "McpToolCall", ID: it.ID, Server: it.Server, Tool: it.Tool, Status: it.Status})}
			case "web_search":
				m.Tools = []discover.ToolCall{{ID: it.ID, Name: "web_search", Summary: it.Query, HasResult: true}}
			default:
				continue // reasoning, todo_list, …
			}
			out = append(out, execItem{Message: m})
		case "turn.completed":
			out = append(out, execItem{Message: msg("system", "turn done"), turnEnd: true})
		case "turn.failed":
			text := ""
			if ev.Error != nil {
				text = ev.Error.Message
			}
			m := msg("error", text)
			m.IsError = true
			out = append(out, execItem{Message: m, turnFailed: true})
		case "error":
			m := msg("error", ev.Message)
			m.IsError = true
			out = append(out, execItem{Message: m, turnFailed: true})
		}
	}
	return out
}
