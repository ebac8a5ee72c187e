package pi

import (
	"math"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// The summary encodes itself, so the parse index uses its binary format: a
// lookup then reads one bucket of the index instead of decoding all of it
// (discover/index/point.go). TestSummaryCodecRoundTrip fills every field, so a
// field added to summary but not here fails the tests.

const summaryCodecVersion = 4 // 2: Slots; 3: ErrStreak; 4: TooLong

// MarshalBinary encodes s for the parse index.
func (s *summary) MarshalBinary() ([]byte, error) {
	e := index.Enc{Buf: make([]byte, 0, 256)}
	e.Uint(summaryCodecVersion)
	e.Int(s.Off)
	e.Bool(s.HeaderOK)
	h := s.Header
	for _, v := range []string{h.Type, h.ID, h.Timestamp, h.Cwd, h.ParentSession, h.BranchedFrom, h.Provider, h.ModelID, h.ThinkingLevel,
		s.Model, s.Title, s.Prompt, s.Leaf.Role, s.Leaf.StopReason, s.Leaf.ErrorMessage} {
		e.Str(v)
	}
	e.Int(int64(h.Version))
	e.Uint(uint64(len(s.Models)))
	for _, m := range s.Models {
		e.Str(m)
	}
	e.Bool(s.PromptSeen)
	for _, n := range []int64{s.Tokens.Input, s.Tokens.Output, s.Tokens.CacheRead, s.Tokens.CacheWrite,
		int64(s.Users), int64(s.Assistants), int64(s.ToolResults), int64(s.Bad), int64(s.BadUsage), int64(s.ErrStreak), int64(s.TooLong)} {
		e.Int(n)
	}
	e.Uint(math.Float64bits(s.Cost))
	for _, t := range []time.Time{s.LastMsgAt, s.LastEntryAt, s.Leaf.At} {
		if err := e.Time(t); err != nil {
			return nil, err
		}
	}
	s.Slots.Encode(&e)
	return e.Buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (s *summary) UnmarshalBinary(b []byte) error {
	d := index.NewDec(b)
	if d.Uint() != summaryCodecVersion {
		return index.ErrEncoding
	}
	var out summary
	out.Off = d.Int()
	out.HeaderOK = d.Bool()
	h := &out.Header
	for _, p := range []*string{&h.Type, &h.ID, &h.Timestamp} {
		*p = d.Str()
	}
	h.Cwd = d.Shared()
	for _, p := range []*string{&h.ParentSession, &h.BranchedFrom} {
		*p = d.Str()
	}
	for _, p := range []*string{&h.Provider, &h.ModelID, &h.ThinkingLevel, &out.Model} {
		*p = d.Shared()
	}
	for _, p := range []*string{&out.Title, &out.Prompt} {
		*p = d.Str()
	}
	for _, p := range []*string{&out.Leaf.Role, &out.Leaf.StopReason} {
		*p = d.Shared()
	}
	out.Leaf.ErrorMessage = d.Str()
	h.Version = int(d.Int())
	if n := d.Count(); n > 0 {
		out.Models = make([]string, n)
		for i := range out.Models {
			out.Models[i] = d.Shared()
		}
	}
	out.PromptSeen = d.Bool()
	for _, p := range []*int64{&out.Tokens.Input, &out.Tokens.Output, &out.Tokens.CacheRead, &out.Tokens.CacheWrite} {
		*p = d.Int()
	}
	for _, p := range []*int{&out.Users, &out.Assistants, &out.ToolResults, &out.Bad, &out.BadUsage, &out.ErrStreak, &out.TooLong} {
		*p = int(d.Int())
	}
	out.Cost = math.Float64frombits(d.Uint())
	out.LastMsgAt = d.Time()
	out.LastEntryAt = d.Time()
	out.Leaf.At = d.Time()
	out.Slots = discover.DecodeSlots(&d)
	if !d.Done() {
		return index.ErrEncoding
	}
	*s = out
	return nil
}
