package copilot

import (
	"sort"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// The summary encodes itself, so the parse index uses its binary format: a
// lookup then reads one bucket of the index instead of decoding all of it
// (discover/index/point.go; with gob, every `status` decoded the whole index,
// ~2.6 MB at 5,000 sessions). TestSummaryCodecRoundTrip fills every field, so
// a field added to summary but not here fails the tests.

const summaryCodecVersion = 1

func encTokens(e *index.Enc, t discover.Tokens) {
	e.Int(t.Input)
	e.Int(t.Output)
	e.Int(t.CacheRead)
	e.Int(t.CacheWrite)
}

func decTokens(d *index.Dec) discover.Tokens {
	return discover.Tokens{Input: d.Int(), Output: d.Int(), CacheRead: d.Int(), CacheWrite: d.Int()}
}

// MarshalBinary encodes s for the parse index (seen, the parse's own dedupe
// state, is never kept).
func (s *summary) MarshalBinary() ([]byte, error) {
	e := index.Enc{Buf: make([]byte, 0, 256)}
	e.Uint(summaryCodecVersion)
	for _, v := range []string{s.ID, s.Cwd, s.LastCwd, s.Branch, s.Version, s.SelectedModel, s.Prompt,
		s.Err.ErrorType, s.Err.Message, s.Crash} {
		e.Str(v)
	}
	e.Uint(uint64(len(s.Models)))
	for _, m := range s.Models {
		e.Str(m)
	}
	for _, t := range []time.Time{s.Started, s.Last} {
		if err := e.Time(t); err != nil {
			return nil, err
		}
	}
	for _, t := range []discover.Tokens{s.Tokens, s.Sub, s.ShutdownTokens} {
		encTokens(&e, t)
	}
	s.Slots.Encode(&e)
	e.Bool(s.HaveShutdown)
	e.Bool(s.AssistantTools)
	for _, n := range []int{s.Prompts, s.Usage, s.BadUsage, s.Err.StatusCode, s.Seq, s.LastUser, s.LastAssistant, s.LastError,
		s.LastTurnStart, s.LastTurnEnd, s.LastProcStart, s.LastShutdown, s.LastAbort, s.LastCrash, s.Bad} {
		e.Int(int64(n))
	}
	ids := make([]string, 0, len(s.Pending))
	for id := range s.Pending {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	e.Uint(uint64(len(ids)))
	for _, id := range ids {
		e.Str(id)
		e.Int(int64(s.Pending[id]))
	}
	return e.Buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (s *summary) UnmarshalBinary(b []byte) error {
	d := index.NewDec(b)
	if d.Uint() != summaryCodecVersion {
		return index.ErrEncoding
	}
	var out summary
	out.ID = d.Str()
	for _, p := range []*string{&out.Cwd, &out.LastCwd, &out.Branch, &out.Version, &out.SelectedModel} {
		*p = d.Shared()
	}
	out.Prompt = d.Str()
	out.Err.ErrorType = d.Shared()
	out.Err.Message, out.Crash = d.Str(), d.Str()
	if n := d.Count(); n > 0 {
		out.Models = make([]string, n)
		for i := range out.Models {
			out.Models[i] = d.Shared()
		}
	}
	out.Started, out.Last = d.Time(), d.Time()
	out.Tokens, out.Sub, out.ShutdownTokens = decTokens(&d), decTokens(&d), decTokens(&d)
	out.Slots = discover.DecodeSlots(&d)
	out.HaveShutdown, out.AssistantTools = d.Bool(), d.Bool()
	for _, p := range []*int{&out.Prompts, &out.Usage, &out.BadUsage, &out.Err.StatusCode, &out.Seq, &out.LastUser, &out.LastAssistant,
		&out.LastError, &out.LastTurnStart, &out.LastTurnEnd, &out.LastProcStart, &out.LastShutdown, &out.LastAbort, &out.LastCrash, &out.Bad} {
		*p = int(d.Int())
	}
	if n := d.Count(); n > 0 {
		out.Pending = make(map[string]int, n)
		for range n {
			id := d.Str()
			out.Pending[id] = int(d.Int())
		}
	}
	if !d.Done() {
		return index.ErrEncoding
	}
	*s = out
	return nil
}
