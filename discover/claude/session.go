package claude

import (
	"time"

	"github.com/agentctl/agentctl/discover"
)

// titleMax bounds a title derived from the first prompt (the prompt itself is in
// `prompt`; the title is for one-line displays).
const titleMax = 100

// toSession builds the listing of one transcript (docs/agents/claude-code.md §3).
func toSession(f *fileState, v discover.Verdict, prices *priceTable, unknownModel func(string)) discover.Session {
	a := f.Agg
	s := discover.Session{
		ID:             f.ID,
		Adapter:        Name,
		Cwd:            a.Cwd,
		Model:          a.Model,
		Models:         a.Models(),
		Prompt:         a.firstPrompt(),
		AgentVersion:   a.Version,
		Entrypoint:     a.Entrypoint,
		PermissionMode: a.permissionMode(),
		Path:           f.Path,
	}
	if a.LastCwd != a.Cwd {
		s.LastCwd = a.LastCwd
	}
	if a.HasBranch && a.GitBranch != "" {
		s.GitBranch = a.GitBranch
	}
	s.Title = a.title()
	if a.StartMs != 0 {
		t := time.UnixMilli(a.StartMs).UTC()
		s.StartedAt = &t
	}
	last := f.Mtime.UTC()
	if a.LastMs != 0 {
		last = time.UnixMilli(a.LastMs).UTC()
	}
	s.LastActivity = &last
	if f.Complete && subsComplete(f.Subs) {
		sessionCost(&s, f, prices, unknownModel)
	}
	v.Apply(&s)
	return s
}

// registrySession lists a live registry entry whose session has no transcript
// yet: an unprompted TUI, or a -p run in its first 100 ms.
func registrySession(r *regCheck, v discover.Verdict) discover.Session {
	s := discover.Session{
		ID:           r.SessionID,
		Adapter:      Name,
		Cwd:          r.Cwd,
		AgentVersion: r.Version,
		Entrypoint:   r.Entrypoint,
	}
	if r.StartedAt != 0 {
		t := time.UnixMilli(r.StartedAt).UTC()
		s.StartedAt = &t
		l := t
		if r.UpdatedAt > r.StartedAt {
			l = time.UnixMilli(r.UpdatedAt).UTC()
		}
		s.LastActivity = &l
	}
	v.Apply(&s)
	return s
}

// argvSession is a session only a live claude's argv names so far: no
// transcript, no registry entry. It started with the process.
func argvSession(p claudeProc, entrypoint string, v discover.Verdict) discover.Session {
	t := time.UnixMilli(p.StartMs).UTC()
	s := discover.Session{
		ID:           p.Flags.Names,
		Adapter:      Name,
		Cwd:          p.Cwd,
		Entrypoint:   entrypoint,
		StartedAt:    &t,
		LastActivity: &t,
	}
	v.Apply(&s)
	return s
}

// firstPrompt is the first real prompt, else the first queued prompt, else the
// first slash command (docs/agents/claude-code.md §3.3).
func (a *aggregate) firstPrompt() string {
	switch {
	case a.Prompt != "":
		return a.Prompt
	case a.Enqueue != "":
		return a.Enqueue
	}
	return a.Slash
}

// title: last custom title, else agent name, else AI title, else summary, else the
// first prompt on one line.
func (a *aggregate) title() string {
	for _, t := range []string{a.CustomTitle, a.AgentName, a.AITitle, a.Summary} {
		if t != "" {
			return t
		}
	}
	if a.PromptTitle != "" {
		return a.PromptTitle
	}
	return a.firstPrompt()
}

// setPromptTitle keeps the one-line form of the first prompt when it differs from
// the prompt, so listings do not redo it for every session on every run.
func (a *aggregate) setPromptTitle() {
	a.PromptTitle = ""
	if p := a.firstPrompt(); !plainLine(p, titleMax) {
		a.PromptTitle = discover.OneLine(p, titleMax)
	}
}

// plainLine reports whether OneLine(s, max) would return s unchanged: short,
// printable ASCII, no runs of spaces and no leading or trailing space.
func plainLine(s string, max int) bool {
	if len(s) > max || s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || (c == ' ' && s[i-1] == ' ') {
			return false
		}
	}
	return true
}

func subsComplete(subs []*fileState) bool {
	for _, sub := range subs {
		if !sub.Complete {
			return false
		}
	}
	return true
}

// sessionCost fills tokens and cost (README "JSON"): the session's own
// transcript plus its subagents' transcripts (tokens_subagents in extra says how
// much of the total they are). The cost is Claude Code's own, from the last
// cost-state record, when no usage was written after it; else an estimate over
// every model of the parent and its subagents (discover.Cost).
func sessionCost(s *discover.Session, f *fileState, prices *priceTable, unknownModel func(string)) {
	a := f.Agg
	u := a.Tokens()
	byModel := a.ByModel
	var sub tokenCounts
	s.Slots = a.Slots.Clone()
	for _, sf := range f.Subs {
		sub.add(sf.Agg.Tokens())
		s.Slots.Merge(sf.Agg.Slots)
		byModel = append(byModel[:len(byModel):len(byModel)], sf.Agg.ByModel...)
	}
	u.add(sub)
	tok := discover.Tokens{Input: u.In, Output: u.Out, CacheRead: u.CR, CacheWrite: u.CW5m + u.CW1h}
	s.Tokens = &tok
	if len(f.Subs) > 0 {
		s.Extra = map[string]any{"tokens_subagents": discover.Tokens{Input: sub.In, Output: sub.Out, CacheRead: sub.CR, CacheWrite: sub.CW5m + sub.CW1h}}
	}
	agent := 0.0
	if a.AgentCostOff > a.UsageOff {
		agent = a.AgentCost
	}
	usd, unknown := 0.0, []string(nil)
	if agent <= 0 {
		usd, unknown = prices.cost(byModel)
		for _, m := range unknown {
			unknownModel(m)
		}
	}
	s.CostUSD, s.CostSource = discover.Cost(agent, tok, usd, len(unknown) == 0)
	inheritedExtra(s, f.Inherited, prices)
}
