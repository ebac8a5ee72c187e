package qwen

import (
	"slices"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// The payload encodes itself, so the parse index uses its binary format: a
// lookup then reads one bucket of the index instead of decoding all of it
// (discover/index/point.go; with gob, every `status` decoded the whole index,
// ~2.9 MB at 5,000 sessions). TestIndexedCodecRoundTrip fills every field, so
// a field added to summary but not here fails the tests.

const indexedCodecVersion = 1

func encTokens(e *index.Enc, t discover.Tokens) {
	e.Int(t.Input)
	e.Int(t.Output)
	e.Int(t.CacheRead)
	e.Int(t.CacheWrite)
}

func decTokens(d *index.Dec) discover.Tokens {
	return discover.Tokens{Input: d.Int(), Output: d.Int(), CacheRead: d.Int(), CacheWrite: d.Int()}
}

// MarshalBinary encodes x for the parse index.
func (x *indexed) MarshalBinary() ([]byte, error) {
	s := &x.Sum
	e := index.Enc{Buf: make([]byte, 0, 256)}
	e.Uint(indexedCodecVersion)
	e.Int(x.Off)
	for _, v := range []string{s.ID, s.Cwd, s.GitBranch, s.Version, s.Model, s.Prompt, s.ErrAfter, s.PendingTool} {
		e.Str(v)
	}
	e.Uint(uint64(len(s.Models)))
	for _, m := range s.Models {
		e.Str(m)
	}
	for _, t := range []time.Time{s.Started, s.Activity, s.LastTS} {
		if err := e.Time(t); err != nil {
			return nil, err
		}
	}
	for _, t := range []discover.Tokens{s.Main, s.Sub, s.Inherited} {
		encTokens(&e, t)
	}
	s.Slots.Encode(&e)
	for _, n := range []int64{int64(s.Prompts), int64(s.Responses), int64(s.BadUsage), int64(s.Last), s.ErrStatus} {
		e.Int(n)
	}
	seen := make([]uint64, 0, len(s.Seen))
	for h, ok := range s.Seen {
		if ok {
			seen = append(seen, h)
		}
	}
	slices.Sort(seen)
	e.Uint(uint64(len(seen)))
	for _, h := range seen {
		e.Uint64(h)
	}
	return e.Buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (x *indexed) UnmarshalBinary(b []byte) error {
	d := index.NewDec(b)
	if d.Uint() != indexedCodecVersion {
		return index.ErrEncoding
	}
	var out indexed
	s := &out.Sum
	out.Off = d.Int()
	s.ID = d.Str()
	for _, p := range []*string{&s.Cwd, &s.GitBranch, &s.Version, &s.Model} {
		*p = d.Shared()
	}
	s.Prompt, s.ErrAfter, s.PendingTool = d.Str(), d.Str(), d.Shared()
	if n := d.Count(); n > 0 {
		s.Models = make([]string, n)
		for i := range s.Models {
			s.Models[i] = d.Shared()
		}
	}
	s.Started, s.Activity, s.LastTS = d.Time(), d.Time(), d.Time()
	s.Main, s.Sub, s.Inherited = decTokens(&d), decTokens(&d), decTokens(&d)
	s.Slots = discover.DecodeSlots(&d)
	s.Prompts, s.Responses, s.BadUsage, s.Last = int(d.Int()), int(d.Int()), int(d.Int()), int(d.Int())
	s.ErrStatus = d.Int()
	if n := d.Count(); n > 0 {
		s.Seen = make(map[uint64]bool, n)
		for range n {
			s.Seen[d.Uint64()] = true
		}
	}
	if !d.Done() {
		return index.ErrEncoding
	}
	*x = out
	return nil
}
