package claude

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentctl/agentctl/discover"
)

// promptMax is how much of the first prompt is kept (JSON shows up to 2000
// characters; tables cut it further).
const promptMax = 2000

// recentGroups is how many (message.id, requestId) groups stay open for the
// last-line-per-group token rule. The lines of one API response are written
// together; only parallel sidechains interleave a few groups, so a short window is
// exact in practice and keeps the cached state small.
const recentGroups = 8

// Tail kinds: what the last conversation record (by timestamp, then file order)
// says about the turn (docs/agents/claude-code.md §4.3 rule 3).
const (
	tailNone        uint8 = iota
	tailPrompt            // a user prompt: the turn is running
	tailToolResult        // a tool result: the model is answering it
	tailToolUse           // an unanswered tool_use: the tool is running or waiting
	tailOpen              // assistant text without stop_reason (old versions)
	tailEnd               // assistant text with a final stop_reason
	tailAPIError          // a synthetic API error: the turn ended in error
	tailInterrupted       // "[Request interrupted by user": the turn ended
)

// turnTail is the last user or assistant record, by timestamp then file offset.
type turnTail struct {
	Kind       uint8
	TS         int64 // ms; 0 when the record had none
	Off        int64
	StopReason string
	Text       string // the error text of a synthetic API error
}

// modelUsage is the deduplicated usage of one model at one price tier (a model
// has one entry per tier it was used at; see tierLong, tierFast).
type modelUsage struct {
	Model string
	U     tokenCounts
	Tier  uint8
}

// msgGroup is an open (message.id, requestId) group: its latest usage replaces
// the earlier lines' (they repeat the same, final numbers).
type msgGroup struct {
	Key   uint64
	Model int // index into ByModel
	U     tokenCounts
	Slot  int64 // the slot U was counted in (-1: none)
}

// aggregate is everything listing and status need from one transcript, built by
// feeding it every complete line in file order. It is the parse index payload, so
// a run that appends lines to a cached aggregate must end in the same state as a
// full parse: every field is "first seen", "last seen", a sum, or a bounded
// window.
type aggregate struct {
	Cwd, LastCwd   string
	Model          string // last non-synthetic assistant model
	ByModel        []modelUsage
	StartMs        int64 // smallest top-level timestamp (0: none)
	LastMs         int64 // largest
	Prompt         string
	Enqueue        string // first queue-operation content, while there is no prompt
	Slash          string // first slash command
	PromptTitle    string // the first prompt on one line, when that differs from it (see title)
	CustomTitle    string
	AgentName      string
	AITitle        string
	Summary        string
	GitBranch      string
	HasBranch      bool
	Version        string
	Entrypoint     string
	PermMode       string // last permission-mode record
	PromptPermMode string // permissionMode of the last prompt
	// Line counts (README facts; also --verbose).
	Prompts, ToolResults, MetaUsers, SideUsers int
	AssistantLines, Messages                   int
	BadLines                                   int // not JSON
	TooLong                                    int // over jsonl.MaxLine, skipped
	BadUsage                                   int // usage records with impossible counts, left out of the totals
	Recent                                     []msgGroup
	// recentRaw is Recent as stored in the index. Only appending needs the open
	// groups, so a listing never decodes them (see clone).
	recentRaw   []byte
	Last        turnTail
	LastTurnEnd int64 // ms of the last system turn_duration / stop_hook_summary
	// AgentCost is totalCostUSD of the last cost-state record (2.1.329+: Claude
	// Code's own running cost of the session, subagents included, carried across
	// resumes). AgentCostOff is 1 + that record's offset (0: none), UsageOff 1 +
	// the offset of the last assistant line with usage: the agent's figure is the
	// session's cost only when no usage follows it.
	AgentCost              float64
	AgentCostOff, UsageOff int64
	// FirstKey is the (message.id, requestId) key of the first request with both
	// ids: a fork shares it with the session it was forked from (fork.go).
	FirstKey uint64
	// Slots spread the usage of ByModel over time: each counted line in the slot
	// of its timestamp (else of the latest timestamp before it).
	Slots discover.Slots
}

// Models lists every model seen, in order of first appearance.
func (a *aggregate) Models() []string {
	var out []string
	for _, m := range a.ByModel {
		if m.Model != "" && !slices.Contains(out, m.Model) {
			out = append(out, m.Model)
		}
	}
	return out
}

// Tokens sums the deduplicated usage over all models.
func (a *aggregate) Tokens() tokenCounts {
	var t tokenCounts
	for _, m := range a.ByModel {
		t.add(m.U)
	}
	return t
}

// consume folds one complete line (starting at byte off) into a.
func (a *aggregate) consume(line []byte, off int64) {
	var r record
	if err := parseRecord(line, &r); err != nil {
		a.BadLines++
		return
	}
	ts := tsMillis(r.Timestamp)
	if ts != 0 {
		if a.StartMs == 0 || ts < a.StartMs {
			a.StartMs = ts
		}
		if ts > a.LastMs {
			a.LastMs = ts
		}
	}
	if cwd := r.Cwd; len(cwd) > 2 {
		if a.Cwd == "" {
			a.Cwd = str(cwd)
		}
		if !strEq(cwd, a.LastCwd) {
			a.LastCwd = str(cwd)
		}
	}
	if r.GitBranch != nil {
		if !strEq(r.GitBranch, a.GitBranch) {
			a.GitBranch = str(r.GitBranch)
		}
		a.HasBranch = true
	}
	if len(r.Version) > 2 && !strEq(r.Version, a.Version) {
		a.Version = str(r.Version)
	}
	if a.Entrypoint == "" && len(r.Entrypoint) > 2 {
		a.Entrypoint = str(r.Entrypoint)
	}
	switch string(unq(r.Type)) {
	case "user":
		a.user(&r, ts, off)
	case "assistant":
		a.assistant(&r, ts, off)
	case "system":
		if !r.Sidechain && (strEq(r.Subtype, "turn_duration") || strEq(r.Subtype, "stop_hook_summary")) {
			if ts == 0 {
				ts = a.Last.TS
			}
			if ts >= a.LastTurnEnd {
				a.LastTurnEnd = ts
			}
		}
	case "queue-operation":
		if a.Prompt == "" && a.Enqueue == "" && strEq(r.Operation, "enqueue") {
			a.Enqueue = cut(strPrefix(r.Content, 4*promptMax), promptMax)
			a.setPromptTitle()
		}
	case "cost-state":
		if f, err := strconv.ParseFloat(string(r.TotalCostUSD), 64); err == nil && f >= 0 {
			a.AgentCost, a.AgentCostOff = f, off+1
		}
	case "permission-mode":
		if s := str(r.PermissionMode); s != "" {
			a.PermMode = s
		}
	case "custom-title":
		setIf(&a.CustomTitle, r.CustomTitle)
	case "agent-name":
		setIf(&a.AgentName, r.AgentName)
	case "ai-title":
		setIf(&a.AITitle, r.AITitle)
	case "summary":
		setIf(&a.Summary, r.Summary)
	}
}

func (a *aggregate) user(r *record, ts, off int64) {
	m := r.message()
	c := parseUserContent(m.Content, 4*promptMax)
	switch {
	case r.Sidechain:
		a.SideUsers++
		return
	case c.ToolResult && !c.HasText:
		a.ToolResults++
		a.setLast(turnTail{Kind: tailToolResult, TS: ts, Off: off})
		return
	case r.Meta || !c.HasText || injected(c.Text):
		a.MetaUsers++
		if a.Slash == "" {
			a.Slash = slashCommand(c.Text)
			a.setPromptTitle()
		}
		if !r.Meta && strings.HasPrefix(strings.TrimSpace(c.Text), "[Request interrupted by user") {
			a.setLast(turnTail{Kind: tailInterrupted, TS: ts, Off: off})
		}
		return
	}
	a.Prompts++
	if a.Prompt == "" {
		a.Prompt = cut(c.Text, promptMax)
		a.Enqueue = ""
		a.setPromptTitle()
	}
	if pm := str(r.PermissionMode); pm != "" {
		a.PromptPermMode = pm
	}
	a.setLast(turnTail{Kind: tailPrompt, TS: ts, Off: off})
}

func (a *aggregate) assistant(r *record, ts, off int64) {
	a.AssistantLines++
	m := r.message()
	model := a.Model // most lines repeat it: no new string for those
	if !strEq(m.Model, model) {
		model = str(m.Model)
	}
	if model == "<synthetic>" || r.APIError {
		if !r.Sidechain {
			a.setLast(turnTail{Kind: tailAPIError, TS: ts, Off: off, Text: cut(assistantText(m.Content), 500)})
		}
		return
	}
	if model != "" {
		a.Model = model
	}
	if a.addUsage(model, m, r.RequestID, ts) {
		a.UsageOff = off + 1
	}
	if r.Sidechain {
		return
	}
	stop := stopReason(m.StopReason)
	kind := tailOpen
	switch {
	case stop == "tool_use" || hasToolUse(m.Content):
		kind = tailToolUse
	case stop != "":
		kind = tailEnd
	}
	a.setLast(turnTail{Kind: kind, TS: ts, Off: off, StopReason: stop})
}

// stopReason is str(v) without a new string for the values the API sends.
func stopReason(v []byte) string {
	for _, c := range [...]string{"end_turn", "tool_use", "max_tokens", "stop_sequence"} {
		if strEq(v, c) {
			return c
		}
	}
	return str(v)
}

// addUsage applies the last-line-per-group rule (docs/agents/claude-code.md §3.1).
// It reports whether the line had any usage.
func (a *aggregate) addUsage(model string, m message, requestID []byte, ts int64) bool {
	u, tier := parseUsageTier(m.tokenCounts)
	if !discover.UsageOK(u.In, u.Out, u.CR, u.CW5m, u.CW1h) {
		u = tokenCounts{} // a damaged record counts for nothing
		a.BadUsage++
	}
	mi := a.modelIndex(model, tier)
	slot := int64(-1)
	switch {
	case ts != 0:
		slot = discover.SlotOf(ts)
	case a.LastMs != 0:
		slot = discover.SlotOf(a.LastMs)
	}
	if len(m.ID) <= 2 || len(requestID) <= 2 {
		a.Messages++
		a.ByModel[mi].U.add(u)
		a.addSlot(slot, u)
		return !u.zero()
	}
	key := groupKey(m.ID, requestID)
	if a.FirstKey == 0 {
		a.FirstKey = key
	}
	for i := range a.Recent {
		g := &a.Recent[i]
		if g.Key == key {
			a.ByModel[g.Model].U.sub(g.U)
			a.ByModel[mi].U.add(u)
			if g.Slot >= 0 {
				a.Slots.Sub(g.Slot, g.U.tokens())
			}
			a.addSlot(slot, u)
			g.Model, g.U, g.Slot = mi, u, slot
			return !u.zero()
		}
	}
	a.Messages++
	a.ByModel[mi].U.add(u)
	a.addSlot(slot, u)
	if len(a.Recent) == recentGroups {
		copy(a.Recent, a.Recent[1:])
		a.Recent = a.Recent[:recentGroups-1]
	}
	a.Recent = append(a.Recent, msgGroup{Key: key, Model: mi, U: u, Slot: slot})
	return !u.zero()
}

// addSlot counts u in slot (-1: no timestamp yet, counted in no slot).
func (a *aggregate) addSlot(slot int64, u tokenCounts) {
	if slot >= 0 {
		a.Slots.Add(slot, u.tokens())
	}
}

func (a *aggregate) modelIndex(model string, tier uint8) int {
	for i, m := range a.ByModel {
		if m.Model == model && m.Tier == tier {
			return i
		}
	}
	a.ByModel = append(a.ByModel, modelUsage{Model: model, Tier: tier})
	return len(a.ByModel) - 1
}

// setLast keeps the latest conversation record: by timestamp, then file order. A
// record without a timestamp sorts with the latest one seen.
func (a *aggregate) setLast(t turnTail) {
	if t.TS == 0 {
		t.TS = a.Last.TS
	}
	if a.Last.Kind == tailNone || t.TS > a.Last.TS || (t.TS == a.Last.TS && t.Off >= a.Last.Off) {
		a.Last = t
	}
}

func hasToolUse(content []byte) bool {
	found := false
	eachBlock(content, func(b *block) bool {
		found = strEq(b.Type, "tool_use")
		return !found
	})
	return found
}

// assistantText concatenates the text blocks of assistant content.
func assistantText(content []byte) string {
	if isString(content) {
		return str(content)
	}
	var parts []string
	eachBlock(content, func(b *block) bool {
		if strEq(b.Type, "text") {
			parts = append(parts, str(b.Text))
		}
		return true
	})
	return strings.Join(parts, "\n")
}

func setIf(dst *string, v []byte) {
	if s := str(v); s != "" {
		*dst = s
	}
}

// unq strips the quotes of a raw JSON string (no unescaping: type names are plain).
func unq(v []byte) []byte {
	if isString(v) {
		return v[1 : len(v)-1]
	}
	return nil
}

// cut keeps at most max runes of s.
func cut(s string, max int) string {
	if len(s) <= max || utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max])
}
