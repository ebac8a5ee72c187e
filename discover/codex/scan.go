package codex

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/jsonl"
)

// Reading limits. A rollout is append-only and can reach many megabytes (tool
// output), so listing reads its head up to the first prompt and its tail back to
// the last turn marker, never the middle.
const (
	headLimit   = 1 << 20  // bytes read forward looking for session_meta and the first prompt
	headChunk   = 32 << 10 // bytes per forward read (session_meta alone is ~22 KB)
	tailFirst   = 4 << 10  // first backward read: a finished turn's last records usually fit
	tailMax     = 256 << 10
	tailBudget  = 32 << 20 // give up looking further back than this
	maxLineSize = jsonl.MaxLine
)

type turnState int

const (
	turnNone        turnState = iota // no turn recorded (or none found within the budget)
	turnOpen                         // task_started, or a user message, without a close
	turnDone                         // task_complete
	turnInterrupted                  // turn_aborted
)

func (t turnState) String() string {
	switch t {
	case turnOpen:
		return "open"
	case turnDone:
		return "completed"
	case turnInterrupted:
		return "interrupted"
	}
	return "none"
}

// headInfo is what the start of a rollout says.
type headInfo struct {
	Meta        bool // a session_meta line was found
	ID          string
	Started     time.Time // session_meta.payload.timestamp
	Cwd         string
	Originator  string
	Source      string
	CLIVersion  string
	Provider    string
	HistoryMode string
	GitBranch   string
	GitSHA      string
	GitOrigin   string
	Prompt      string
	PromptTS    time.Time
}

// tailInfo is what the end of a rollout says.
type tailInfo struct {
	LastTS time.Time // timestamp of the last complete line

	Turn        turnState
	TurnKnown   bool      // the scan found what decides Turn (else it ran out of file or budget)
	TurnStarted time.Time // line time of the latest task_started
	TurnEnded   time.Time // line time of the closing task_complete / turn_aborted
	Reason      string    // turn_aborted reason
	Pending     string    // open turn whose last record is this approval / user-input request
	PendingCmd  string    // the command of the escalated call in Pending ("" for other requests)
	ErrMsg      string    // an error event inside the latest turn

	Tokens *usage // last valid total_token_usage
	// BadTokens counts the impossible total_token_usage records (usage.valid)
	// after the one in Tokens: skipped in its favour, named in a warning.
	BadTokens int

	Cwd, Model    string // last turn_context
	Approval      string
	SettingsModel string // last thread_settings_applied model (fallback for Model)
	CtxFound      bool
	AtStart       bool // the scan reached the first line
}

// pendingTypes are event_msg types that block an open turn on the user. Names come
// from the protocol; 0.169 `exec` with approvals bypassed never writes them.
var pendingTypes = map[string]bool{
	"exec_approval_request":        true,
	"apply_patch_approval_request": true,
	"request_user_input":           true,
	"elicitation_request":          true,
}

// scratch is a reusable read buffer: one per worker, so listing thousands of
// rollouts does not allocate a fresh buffer per file. Lines handed to callbacks
// point into it and are only valid during the call.
type scratch struct {
	b    []byte
	file []byte          // a whole rollout (cache.go readWhole)
	sh   discover.Sharer // the worker's sessions share their repeated strings
	// nl holds the offset of every '\n' in the first nlTo bytes of the memFile
	// starting at nlOf, in order: found by a forward scan that passed over them
	// (readSlots), they spare the backward scan of the same bytes looking for
	// line ends again. readWhole forgets them when it reuses the buffer.
	nl   []int32
	nlOf *byte
	nlTo int
}

// newlines returns every '\n' offset in m[:size], if a forward scan recorded
// them for this very memory (memFile.scanLines); nil otherwise.
func (s *scratch) newlines(m memFile, size int64) ([]int32, bool) {
	if s == nil || s.nlOf == nil || len(m) == 0 || s.nlOf != unsafe.SliceData(m) || int64(s.nlTo) < size {
		return nil, false
	}
	nl := s.nl
	for len(nl) > 0 && int64(nl[len(nl)-1]) >= size {
		nl = nl[:len(nl)-1]
	}
	return nl, true
}

// forgetNewlines drops what newlines would answer (the memory is reused).
func (s *scratch) forgetNewlines() { s.nl, s.nlOf, s.nlTo = s.nl[:0], nil, 0 }

// grow returns a buffer of length n whose first keep bytes are those of the
// current buffer.
func (s *scratch) grow(n, keep int) []byte {
	if cap(s.b) < n {
		nb := make([]byte, n, n+n/4)
		copy(nb, s.b[:keep])
		s.b = nb
	}
	return s.b[:n]
}

// userOrAssistant is bytes.Contains(line, `"role":"user"`) ||
// bytes.Contains(line, `"role":"assistant"`) in one pass over line: a
// developer message (kilobytes of instructions) was searched twice.
func userOrAssistant(line []byte) bool {
	const k = `"role":"`
	for {
		i := bytes.Index(line, []byte(k))
		if i < 0 {
			return false
		}
		rest := line[i+len(k):]
		if bytes.HasPrefix(rest, []byte(`user"`)) || bytes.HasPrefix(rest, []byte(`assistant"`)) {
			return true
		}
		line = line[i+1:] // occurrences can overlap: `"role":"role":"user"`
	}
}

// readHead reads session_meta (line 0) and the first real user prompt. Only those
// lines are decoded; the rest are recognised by sniff and skipped.
func readHead(f io.ReaderAt, size int64, sc *scratch) (headInfo, error) {
	var h headInfo
	var fallback string // first non-injected response_item user text (very old rollouts)
	var fallbackTS time.Time
	first := true
	err := scanForward(f, size, headLimit, sc, func(line []byte, off int64) bool {
		isFirst := first
		first = false
		typ, sub, _, ok := sniff(line)
		if ok && !isFirst {
			switch {
			case typ == "event_msg" && (sub == "user_message" || sub == "task_complete" || sub == "turn_aborted"):
			case typ == "event_msg" && sub == "item_completed":
				if itemType(line) != "UserMessage" {
					return true
				}
			case typ == "response_item" && sub == "message":
				// Only user and assistant messages matter (developer
				// instructions are kilobytes); a role string cannot occur
				// unescaped inside a text.
				if !userOrAssistant(line) {
					return true
				}
			default:
				return true
			}
		}
		maxStr := 0
		if isFirst && len(line) > 4096 {
			maxStr = 1024 // base_instructions
		}
		var r record
		if !scanRecord(line, &r, maxStr) {
			if maxStr > 0 {
				line = shrinkJSON(line, maxStr)
			}
			var err error
			if r, err = decode(line); err != nil || r.Payload == nil {
				return true
			}
		}
		p := r.Payload
		switch r.Type {
		case "session_meta":
			if h.Meta {
				return true
			}
			h.Meta = true
			h.ID = p.ID
			h.Started = parseTS(p.Timestamp)
			if h.Started.IsZero() {
				h.Started = r.time()
			}
			h.Cwd = p.Cwd
			h.Originator = p.Originator
			h.Source = rawString(p.Source)
			h.CLIVersion = p.CLIVersion
			h.Provider = p.ModelProvider
			h.HistoryMode = p.HistoryMode
			if p.Git != nil {
				h.GitBranch, h.GitSHA, h.GitOrigin = p.Git.Branch, p.Git.CommitHash, p.Git.RepositoryURL
			}
		case "event_msg":
			switch p.Type {
			case "item_completed":
				if p.Item != nil && p.Item.Type == "UserMessage" {
					h.Prompt, h.PromptTS = joinText(p.Item.Content), r.time()
					return false
				}
			case "user_message":
				h.Prompt, h.PromptTS = p.Message, r.time()
				return false
			case "task_complete", "turn_aborted":
				if fallback != "" {
					return false // the turn ended without a user event: a pre-event rollout
				}
			}
		case "response_item":
			if p.Type != "message" {
				return true
			}
			switch p.Role {
			case "user":
				if t := joinText(p.Content); fallback == "" && t != "" && !injectedUser(t) {
					fallback, fallbackTS = t, r.time()
				}
			case "assistant":
				if fallback != "" {
					return false
				}
			}
		}
		return true
	})
	if h.Prompt == "" && fallback != "" {
		h.Prompt, h.PromptTS = fallback, fallbackTS
	}
	return h, err
}

// itemType sniffs item.type of an item_completed line ("" when not found).
func itemType(line []byte) string {
	const k = `"item":{"type":"`
	i := bytes.Index(line, []byte(k))
	if i < 0 {
		return ""
	}
	rest := line[i+len(k):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// readTail scans the rollout backwards from its last complete line until it knows
// the latest turn's state, the last cumulative token count and (needCtx) the last
// turn_context. It never reads a trailing partial line: Codex may be writing it.
// Lines are classified by sniff; only the few that answer an open question are
// decoded.
func readTail(f io.ReaderAt, size int64, needCtx bool, sc *scratch) (tailInfo, error) {
	var t tailInfo
	first := true
	userSeen := false   // a user message closer to the end than any turn marker
	agentAfter := false // an agent message after that user message (legacy, marker-less turns)
	meaningful := false // a record that is not bookkeeping was seen (for Pending)
	escalated := false  // Pending is a function call asking to leave the sandbox
	tokensDone := false
	decideMarkerless := func() {
		t.TurnKnown = true
		if agentAfter {
			t.Turn = turnDone
		} else {
			t.Turn = turnOpen
		}
	}
	done := func() bool {
		return t.TurnKnown && tokensDone && (t.CtxFound || !needCtx)
	}
	atStart, err := scanBackward(f, size, tailFirst, tailBudget, sc, func(line []byte, off int64) bool {
		typ, sub, ts, ok := sniff(line)
		var rec *record
		if !ok {
			r, err := decodeFast(line)
			if err != nil {
				return true
			}
			rec = &r
			typ, sub, ts = r.Type, r.sub(), []byte(r.Timestamp)
		}
		payload := func() *payload {
			if rec == nil {
				r, err := decodeFast(line)
				if err != nil {
					return nil
				}
				rec = &r
			}
			return rec.Payload
		}
		if first {
			first = false
			t.LastTS = parseTSBytes(ts)
		}
		if !meaningful && (typ == "event_msg" || typ == "response_item") &&
			sub != "token_count" && sub != "thread_settings_applied" && sub != "reasoning" {
			meaningful = true
			if pendingTypes[sub] {
				t.Pending = sub
			} else if sub == "function_call" {
				if p := payload(); p != nil {
					t.Pending, t.PendingCmd = escalation(p)
					escalated = t.Pending != ""
				}
			}
		}
		switch typ {
		case "turn_context":
			if !t.CtxFound && (needCtx || t.Approval == "") {
				if p := payload(); p != nil {
					t.CtxFound = true
					t.Cwd, t.Model, t.Approval = p.Cwd, p.Model, p.ApprovalPolicy
				}
			}
		case "event_msg":
			switch sub {
			case "token_count":
				if !tokensDone {
					var u usage
					ok := totalUsage(line, &u)
					if !ok {
						if p := payload(); p != nil && p.Info != nil && p.Info.Total != nil {
							u, ok = *p.Info.Total, true
						}
					}
					switch {
					case !ok:
					case u.valid():
						t.Tokens, tokensDone = &u, true
					default:
						t.BadTokens++ // the previous valid count stands (issue 19)
					}
				}
			case "thread_settings_applied":
				if needCtx && t.SettingsModel == "" {
					if p := payload(); p != nil && p.ThreadSettings != nil {
						t.SettingsModel = p.ThreadSettings.Model
					}
				}
			case "error":
				if !t.TurnKnown && t.ErrMsg == "" {
					if p := payload(); p != nil {
						t.ErrMsg = p.Message
					}
				}
			case "task_complete", "turn_aborted":
				switch {
				case t.TurnKnown:
				case userSeen:
					decideMarkerless() // the close belongs to an earlier turn
				default:
					t.TurnKnown = true
					t.TurnEnded = parseTSBytes(ts)
					t.Turn = turnDone
					if sub == "task_complete" && t.ErrMsg == "" && bytes.Contains(line, []byte(`"error":{`)) {
						if p := payload(); p != nil && p.TurnError != nil {
							t.ErrMsg = p.TurnError.Message
						}
					}
					if sub == "turn_aborted" {
						t.Turn, t.Reason = turnInterrupted, "aborted"
						if p := payload(); p != nil && p.Reason != "" {
							t.Reason = p.Reason
						}
					}
				}
			case "task_started":
				if !t.TurnKnown {
					t.TurnKnown, t.Turn, t.TurnStarted = true, turnOpen, parseTSBytes(ts)
				} else if t.TurnStarted.IsZero() && t.Turn != turnOpen {
					t.TurnStarted = parseTSBytes(ts)
				}
			case "user_message", "item_completed":
				if t.TurnKnown {
					break
				}
				isUser := sub == "user_message"
				if sub == "item_completed" {
					it := itemType(line)
					if it == "" && rec != nil && rec.Payload != nil && rec.Payload.Item != nil {
						it = rec.Payload.Item.Type
					}
					// An AgentMessage can be mid-turn commentary: paginated turns
					// always carry task markers, so it never closes a turn.
					isUser = it == "UserMessage"
				}
				if isUser {
					if userSeen {
						decideMarkerless()
					} else {
						userSeen = true
					}
				}
			case "agent_message":
				if !t.TurnKnown && !userSeen {
					agentAfter = true
				}
			}
		}
		return !done()
	})
	t.AtStart = atStart
	if atStart && !t.TurnKnown && userSeen {
		decideMarkerless()
	}
	if t.Turn != turnOpen || (escalated && t.Approval == "never") {
		t.Pending, t.PendingCmd = "", "" // approval policy never: Codex does not ask
	}
	return t, err
}

// escalation names the approval a function call waits for: Codex 0.169 does not
// persist exec_approval_request in the rollout, so a shell call asking for
// sandbox_permissions "require_escalated" with no output after it is what the
// file shows while the TUI asks "Would you like to run the following command?"
// (docs/agents/codex.md §4.2). cmd is the command itself, for telling an approved
// call that is running (approvedRun) from one still asking.
func escalation(p *payload) (desc, cmd string) {
	var args struct {
		Cmd         json.RawMessage `json:"cmd"`
		Command     json.RawMessage `json:"command"`
		Permissions string          `json:"sandbox_permissions"`
	}
	if json.Unmarshal([]byte(p.Arguments), &args) != nil || args.Permissions != "require_escalated" {
		return "", ""
	}
	raw := args.Cmd
	if len(raw) == 0 {
		raw = args.Command
	}
	var str string
	if json.Unmarshal(raw, &str) != nil {
		var argv []string
		_ = json.Unmarshal(raw, &argv)
		str = strings.Join(argv, " ")
	}
	return fmt.Sprintf("approval of %s %s (function_call %s asks sandbox_permissions require_escalated; no output yet)",
		p.Name, strconv.Quote(discover.OneLine(str, 80)), p.CallID), str
}

// scanLines is scanForward over the first size bytes of r that, where r is a
// memFile and record is set, records their line ends in record
// (scratch.newlines) for a backward scan of the same memory.
func scanLines(r io.ReaderAt, size int64, record, sc *scratch, fn func(line []byte, off int64) bool) error {
	if m, ok := r.(memFile); ok && record != nil && int64(len(m)) >= size {
		m.scanLines(size, record, fn)
		return nil
	}
	return scanForward(r, size, size, sc, fn)
}

// scanForward calls fn for every complete line in the first limit bytes of r, in
// order, until fn returns false. A final line without '\n' is skipped; so is a
// line longer than maxLineSize.
func scanForward(r io.ReaderAt, size, limit int64, sc *scratch, fn func(line []byte, off int64) bool) error {
	if limit > size {
		limit = size
	}
	if m, ok := r.(memFile); ok && int64(len(m)) >= limit {
		return m.scanForward(limit, fn)
	}
	var pos int64 // file offset of buf[0]
	n := 0        // valid bytes in buf
	skipping := false
	for {
		buf := sc.b[:cap(sc.b)]
		// Deliver the complete lines in buf[:n].
		start := 0
		for {
			i := bytes.IndexByte(buf[start:n], '\n')
			if i < 0 {
				break
			}
			line := bytes.TrimRight(buf[start:start+i], "\r")
			if skipping {
				skipping = false
			} else if len(line) > 0 && !fn(line, pos+int64(start)) {
				return nil
			}
			start += i + 1
		}
		// Keep the unfinished line (or drop it while skipping an over-long one) and
		// read more after it.
		rest, drop := n-start, 0
		if skipping || rest > maxLineSize {
			skipping, drop, rest = true, rest, 0
		}
		copy(buf, buf[start+drop:n]) // overlap-safe move to the front
		pos += int64(start + drop)
		n = rest
		if pos+int64(n) >= limit {
			return nil
		}
		want := n + max(headChunk, n)
		if want > len(buf) {
			buf = sc.grow(want, n)
		}
		m, err := r.ReadAt(buf[n:want], pos+int64(n))
		if m > int(limit-pos-int64(n)) {
			m = int(limit - pos - int64(n))
		}
		n += m
		if err != nil && err != io.EOF {
			return err
		}
		if m == 0 {
			return nil
		}
	}
}

// scanBackward calls fn for every complete line of r, last line first, until fn
// returns false, the start of the file is reached (atStart) or budget bytes have
// been read. A final line without '\n' is being written and is skipped. Lines
// longer than maxLineSize are skipped.
func scanBackward(r io.ReaderAt, size int64, first int, budget int64, sc *scratch, fn func(line []byte, off int64) bool) (atStart bool, err error) {
	if m, ok := r.(memFile); ok && int64(len(m)) >= size && size <= budget {
		return m.backward(size, sc, fn), nil
	}
	pos := size
	chunk := int64(first)
	carry := 0        // bytes at the front of sc.b not yet delivered: the tail of a line whose start is further back
	trailing := true  // still looking for the '\n' that ends the last complete line
	skipping := false // inside an over-long line, waiting for its start
	var read int64
	for pos > 0 {
		if read >= budget {
			return false, nil
		}
		// At least as much as is carried: a line of megabytes then costs
		// moves and searches in proportion to its length, not its square.
		n := max(chunk, int64(carry))
		if n > pos {
			n = pos
		}
		buf := sc.grow(int(n)+carry, carry)
		copy(buf[n:], buf[:carry]) // move the carry behind the new chunk (overlap-safe)
		if _, err := r.ReadAt(buf[:n], pos-n); err != nil && err != io.EOF {
			return false, err
		}
		pos -= n
		read += n
		if chunk < tailMax {
			chunk = min(chunk*4, tailMax)
		}
		data := buf
		if trailing || skipping {
			i := lastNewline(data)
			if i < 0 {
				carry = 0 // all of it belongs to the partial last line / the skipped line
				continue
			}
			data = data[:i+1]
			trailing, skipping = false, false
		}
		// data ends with '\n'. Deliver every line whose start is inside data.
		end, lim := len(data), len(data)-1
		if carry > 0 {
			lim = int(n) // data[n:end-1] is the carry before its '\n': searched before, no '\n' there
		}
		for end > 0 {
			i := lastNewline(data[:lim])
			if i < 0 {
				break
			}
			line := bytes.TrimRight(data[i+1:end-1], "\r")
			if len(line) > 0 && !fn(line, pos+int64(i+1)) {
				return false, nil
			}
			end, lim = i+1, i
		}
		carry = end
		if carry > maxLineSize {
			carry, skipping = 0, true
		}
	}
	if carry > 0 && !skipping {
		line := bytes.TrimRight(sc.b[:carry-1], "\r")
		if len(line) > 0 {
			fn(line, 0)
		}
	}
	return true, nil
}

// totalUsage decodes just info.total_token_usage of a token_count line: the
// object is small and flat, the rest of the line (last_token_usage, rate limits)
// is not needed. ok is false when the key is not there (info null) or the object
// does not decode; the caller then decodes the whole line.
// It fills *u (which it does not keep: the caller's, on its stack).
func totalUsage(line []byte, u *usage) bool {
	const k = `"total_token_usage":{`
	i := bytes.Index(line, []byte(k))
	if i < 0 {
		return false
	}
	obj := line[i+len(k)-1:]
	j := bytes.IndexByte(obj, '}')
	if j < 0 {
		return false
	}
	*u = usage{}
	if flatUsage(obj[:j+1], u) {
		return true
	}
	var v usage // escapes to encoding/json: a copy, so that u does not
	if json.Unmarshal(obj[:j+1], &v) != nil {
		return false
	}
	*u = v
	return true
}

// usageKeys are usage's JSON names, in its field order.
var usageKeys = [...]string{"input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens"}

// flatUsage decodes obj, a usage object as Codex writes it (no spaces, its own
// keys once each, integer counts), into u as json.Unmarshal would, and reports
// whether it could; any other shape is left to encoding/json.
func flatUsage(obj []byte, u *usage) bool {
	fields := [...]*int64{&u.Input, &u.Cached, &u.CacheWrite, &u.Output, &u.Reasoning, &u.Total}
	var seen [len(usageKeys)]bool
	i := 1 // past '{'
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return false
	}
	if len(obj) == 2 {
		return true
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return false
		}
		q := bytes.IndexByte(obj[i+1:], '"')
		if q < 0 {
			return false
		}
		key := obj[i+1 : i+1+q]
		i += q + 2
		k := -1
		for n, name := range usageKeys {
			if string(key) == name {
				k = n
			}
		}
		if k < 0 || seen[k] || i >= len(obj) || obj[i] != ':' {
			return false
		}
		seen[k] = true
		i++
		// -?(0|[1-9][0-9]*), then ',' or the closing '}'
		start := i
		if i < len(obj) && obj[i] == '-' {
			i++
		}
		digits := i
		for i < len(obj) && '0' <= obj[i] && obj[i] <= '9' {
			i++
		}
		if i == digits || (obj[digits] == '0' && i-digits > 1) {
			return false
		}
		n, err := strconv.ParseInt(string(obj[start:i]), 10, 64)
		if err != nil {
			return false
		}
		*fields[k] = n
		switch {
		case i == len(obj)-1:
			return true
		case obj[i] == ',':
			i++
		default:
			return false
		}
	}
}

// lastNewline is bytes.LastIndexByte(b, '\n') eight bytes at a time: the
// backward scan of a rollout's tail passes over most of its bytes, and the
// library's LastIndexByte compares one byte at a time.
func lastNewline(b []byte) int {
	const ones, highs, nls = 0x0101010101010101, 0x8080808080808080, 0x0a0a0a0a0a0a0a0a
	i := len(b)
	for i >= 8 {
		x := binary.LittleEndian.Uint64(b[i-8:i]) ^ nls // a zero byte where b has '\n'
		if (x-ones)&^x&highs != 0 {
			break
		}
		i -= 8
	}
	for i--; i >= 0; i-- {
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}

// memFile is a rollout read whole into memory (cache.go readWhole). The scans
// walk its lines where they lie instead of copying them into the scratch
// buffer; they hand fn the same lines as the scans of a file, since a memFile
// is never longer than maxLineSize (wholeMax is far less), so no line is too long to
// deliver, and its backward scan never runs past a budget (scanBackward's
// caller checks).
type memFile []byte

func (m memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(p, m[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// scanForward is scanForward over m's first limit bytes.
func (m memFile) scanForward(limit int64, fn func(line []byte, off int64) bool) error {
	m.scanLines(limit, nil, fn)
	return nil
}

// scanLines is scanForward that, with sc, also records in sc the offset of
// every '\n' it passes (scratch.newlines), for a backward scan of the same
// memory to come.
func (m memFile) scanLines(limit int64, sc *scratch, fn func(line []byte, off int64) bool) {
	b := m[:limit]
	if sc != nil {
		sc.forgetNewlines()
	}
	for pos := 0; ; {
		i := bytes.IndexByte(b[pos:], '\n')
		if i < 0 {
			if sc != nil && len(b) > 0 {
				sc.nlOf, sc.nlTo = unsafe.SliceData(m), len(b)
			}
			return
		}
		if sc != nil {
			sc.nl = append(sc.nl, int32(pos+i))
		}
		if line := bytes.TrimRight(b[pos:pos+i], "\r"); len(line) > 0 && !fn(line, int64(pos)) {
			if sc != nil {
				sc.nlOf, sc.nlTo = unsafe.SliceData(m), pos+i+1
			}
			return
		}
		pos += i + 1
	}
}

// recordNewlines records in sc the offset of every '\n' in m
// (scratch.newlines), as scanLines does on its way.
func (m memFile) recordNewlines(sc *scratch) {
	m.scanLines(int64(len(m)), sc, func([]byte, int64) bool { return true })
}

// backward is scanBackward over m's first size bytes, within budget. The line
// ends come from those a forward pass recorded in sc where it did
// (scratch.newlines), else from searching m backwards.
func (m memFile) backward(size int64, sc *scratch, fn func(line []byte, off int64) bool) (atStart bool) {
	b := m[:size]
	var end int                // the '\n' ending the line to deliver next
	var prev func(end int) int // the '\n' before the one at end, or -1
	if nl, ok := sc.newlines(m, size); ok {
		k := len(nl) - 1
		end = -1
		if k >= 0 {
			end = int(nl[k])
		}
		prev = func(int) int {
			if k--; k < 0 {
				return -1
			}
			return int(nl[k])
		}
	} else {
		end = lastNewline(b)
		prev = func(end int) int { return lastNewline(b[:end]) }
	}
	for end >= 0 {
		i := prev(end)
		line := bytes.TrimRight(b[i+1:end], "\r")
		if i < 0 {
			if len(line) > 0 {
				fn(line, 0)
			}
			return true
		}
		if len(line) > 0 && !fn(line, int64(i+1)) {
			return false
		}
		end = i
	}
	return true
}
