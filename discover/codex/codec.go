package codex

import (
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// The summary is the parse index payload of every rollout, and a big history has
// tens of thousands: decoded by gob (reflection, one allocation per value) the
// whole index stayed in memory for the entire listing. With these methods the
// index keeps the encoded bytes and decodes one summary when it is asked for (see
// index.Load). The format is a flat sequence of varints and length-prefixed
// strings; times are time.Time's binary form, which keeps the zone offset exactly
// as gob did. TestSummaryCodecRoundTrip fills every field, so a field added to
// summary but not here fails the tests.

const summaryCodecVersion = 6 // 2: tailInfo.BadTokens; 3: Slots; 4: tailInfo.PendingCmd; 5: NoSlots; 6: ForkedFrom

// MarshalBinary encodes s for the parse index.
func (s *summary) MarshalBinary() ([]byte, error) {
	e := index.Enc{Buf: make([]byte, 0, 128)}
	e.Uint(summaryCodecVersion)
	h := s.Head
	var flags uint64
	for i, b := range []bool{h != nil, s.CtxTail, h != nil && h.Meta, s.Tail.TurnKnown, s.Tail.CtxFound, s.Tail.AtStart, s.Tail.Tokens != nil, s.NoSlots} {
		if b {
			flags |= 1 << i
		}
	}
	e.Uint(flags)
	if h != nil {
		for _, v := range []string{h.ID, h.Cwd, h.Originator, h.Source, h.CLIVersion, h.Provider, h.HistoryMode, h.GitBranch, h.GitSHA, h.GitOrigin, h.Prompt} {
			e.Str(v)
		}
		if err := e.Time(h.Started); err != nil {
			return nil, err
		}
		if err := e.Time(h.PromptTS); err != nil {
			return nil, err
		}
	}
	t := &s.Tail
	for _, v := range []time.Time{t.LastTS, t.TurnStarted, t.TurnEnded} {
		if err := e.Time(v); err != nil {
			return nil, err
		}
	}
	e.Int(int64(t.Turn))
	e.Int(int64(t.BadTokens))
	for _, v := range []string{t.Reason, t.Pending, t.PendingCmd, t.ErrMsg, t.Cwd, t.Model, t.Approval, t.SettingsModel} {
		e.Str(v)
	}
	if u := t.Tokens; u != nil {
		for _, n := range []int64{u.Input, u.Cached, u.CacheWrite, u.Output, u.Reasoning, u.Total} {
			e.Int(n)
		}
	}
	e.Int(s.SlotsOff)
	for _, n := range []int64{s.SlotsTo.Input, s.SlotsTo.Output, s.SlotsTo.CacheRead, s.SlotsTo.CacheWrite} {
		e.Int(n)
	}
	s.Slots.Encode(&e)
	e.Str(s.ForkedFrom)
	return e.Buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (s *summary) UnmarshalBinary(b []byte) error {
	d := index.NewDec(b)
	if d.Uint() != summaryCodecVersion {
		return index.ErrEncoding
	}
	flags := d.Uint()
	s.CtxTail = flags&(1<<1) != 0
	s.NoSlots = flags&(1<<7) != 0
	for i, p := range []*bool{&s.Tail.TurnKnown, &s.Tail.CtxFound, &s.Tail.AtStart} {
		*p = flags&(1<<(i+3)) != 0
	}
	if flags&1 != 0 {
		h := &headInfo{Meta: flags&(1<<2) != 0}
		h.ID = d.Str()
		for _, p := range []*string{&h.Cwd, &h.Originator, &h.Source, &h.CLIVersion, &h.Provider, &h.HistoryMode, &h.GitBranch} {
			*p = d.Shared()
		}
		h.GitSHA, h.GitOrigin, h.Prompt = d.Str(), d.Str(), d.Str()
		h.Started, h.PromptTS = d.Time(), d.Time()
		s.Head = h
	}
	t := &s.Tail
	t.LastTS, t.TurnStarted, t.TurnEnded = d.Time(), d.Time(), d.Time()
	t.Turn = turnState(d.Int())
	t.BadTokens = int(d.Int())
	t.Reason, t.Pending, t.PendingCmd, t.ErrMsg = d.Shared(), d.Shared(), d.Str(), d.Str()
	for _, p := range []*string{&t.Cwd, &t.Model, &t.Approval, &t.SettingsModel} {
		*p = d.Shared()
	}
	if flags&(1<<6) != 0 {
		t.Tokens = &usage{Input: d.Int(), Cached: d.Int(), CacheWrite: d.Int(), Output: d.Int(), Reasoning: d.Int(), Total: d.Int()}
	}
	s.SlotsOff = d.Int()
	s.SlotsTo = discover.Tokens{Input: d.Int(), Output: d.Int(), CacheRead: d.Int(), CacheWrite: d.Int()}
	s.Slots = discover.DecodeSlots(&d)
	s.ForkedFrom = d.Str()
	if !d.Done() {
		return index.ErrEncoding
	}
	return nil
}
