package gemini

import (
	"sort"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// indexVersion is the parse index's version: bump it whenever what cached
// means changes (its shape is checked by the index itself).
const indexVersion = 3 // 2: the binary format (MarshalBinary); 3: Asked

// cached is what the parse index keeps of one session file while it is
// unchanged (same file, size and mtime): everything a listing takes from its
// summary, the latest turn's outcome already worked out. A file that changed
// is parsed again whole: Gemini's patch log restates and replaces messages by
// id, so resuming a parse would need the whole message list, and the files are
// tens of KB. Before it, every listing parsed every file (about 1.2 ms of CPU
// each on the development machine: docs/performance.md).
type cached struct {
	ID, ProjectHash, Kind string
	Start, Last           time.Time
	Model                 string
	Models                []string
	FirstPrompt           string
	RolledBack            bool
	Failed                failedTurn
	BadUsage, Bad, Lines  int
	Usage                 map[string]usage
	UsageOrder            []string
	Prompts               []string
	Outcome               discover.Outcome
	Detail                string
	// Asked is askedTools of the summary kept: an approval dialog is read
	// from an unchanged file, so the index must keep it.
	Asked time.Time
}

// outcomeOf is a summary's outcome as worked out when it was kept.
type outcomeOf struct {
	Outcome discover.Outcome
	Detail  string
	Asked   time.Time
}

// toCached is what the index keeps of s.
func toCached(s *summary) cached {
	c := cached{ID: s.ID, ProjectHash: s.ProjectHash, Kind: s.Kind, Start: s.Start, Last: s.Last, Model: s.Model,
		Models: s.Models, FirstPrompt: s.FirstPrompt, RolledBack: s.RolledBack, Failed: s.Failed,
		BadUsage: s.BadUsage, Bad: s.Bad, Lines: s.Lines, Usage: s.usage, UsageOrder: s.usageOrder}
	for id := range s.prompts {
		c.Prompts = append(c.Prompts, id)
	}
	c.Outcome, c.Detail = s.outcome()
	c.Asked = s.askedTools()
	return c
}

// fromCached is the summary the index kept.
func fromCached(c cached) *summary {
	s := newSummary()
	s.ID, s.ProjectHash, s.Kind, s.Start, s.Last, s.Model = c.ID, c.ProjectHash, c.Kind, c.Start, c.Last, c.Model
	s.Models, s.FirstPrompt, s.RolledBack, s.Failed = c.Models, c.FirstPrompt, c.RolledBack, c.Failed
	s.BadUsage, s.Bad, s.Lines = c.BadUsage, c.Bad, c.Lines
	if c.Usage != nil {
		s.usage = c.Usage
	}
	s.usageOrder = c.UsageOrder
	for _, id := range c.Prompts {
		s.prompts[id] = true
	}
	s.kept = &outcomeOf{c.Outcome, c.Detail, c.Asked}
	return s
}

// The payload encodes itself, so the parse index uses its binary format: a
// lookup reads one bucket of the index instead of decoding all of it
// (discover/index/point.go). TestCachedCodecRoundTrip fills every field, so a
// field added to cached but not here fails the tests.

const cachedCodecVersion = 2 // 2: Asked

// MarshalBinary encodes c for the parse index.
func (c *cached) MarshalBinary() ([]byte, error) {
	e := index.Enc{Buf: make([]byte, 0, 256)}
	e.Uint(cachedCodecVersion)
	for _, v := range []string{c.ID, c.ProjectHash, c.Kind, c.Model, c.FirstPrompt, c.Failed.Prompt, c.Failed.ProjectDir, c.Detail} {
		e.Str(v)
	}
	for _, t := range []time.Time{c.Start, c.Last, c.Failed.At, c.Failed.Until, c.Asked} {
		if err := e.Time(t); err != nil {
			return nil, err
		}
	}
	e.Bool(c.RolledBack)
	for _, n := range []int{c.BadUsage, c.Bad, c.Lines, int(c.Outcome)} {
		e.Int(int64(n))
	}
	for _, xs := range [][]string{c.Models, c.UsageOrder, c.Prompts} {
		e.Uint(uint64(len(xs)))
		for _, x := range xs {
			e.Str(x)
		}
	}
	// Usage by id, sorted (the same bytes for the same summary).
	ids := make([]string, 0, len(c.Usage))
	for id := range c.Usage {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	e.Uint(uint64(len(ids)))
	for _, id := range ids {
		u := c.Usage[id]
		e.Str(id)
		if err := e.Time(u.TS); err != nil {
			return nil, err
		}
		for _, n := range []int64{u.Tokens.Input, u.Tokens.Output, u.Tokens.CacheRead, u.Tokens.CacheWrite} {
			e.Int(n)
		}
	}
	return e.Buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (c *cached) UnmarshalBinary(b []byte) error {
	d := index.NewDec(b)
	if d.Uint() != cachedCodecVersion {
		return index.ErrEncoding
	}
	var out cached
	out.ID = d.Str()
	for _, p := range []*string{&out.ProjectHash, &out.Kind, &out.Model} {
		*p = d.Shared()
	}
	for _, p := range []*string{&out.FirstPrompt, &out.Failed.Prompt} {
		*p = d.Str()
	}
	out.Failed.ProjectDir, out.Detail = d.Shared(), d.Shared()
	for _, p := range []*time.Time{&out.Start, &out.Last, &out.Failed.At, &out.Failed.Until, &out.Asked} {
		*p = d.Time()
	}
	out.RolledBack = d.Bool()
	for _, p := range []*int{&out.BadUsage, &out.Bad, &out.Lines} {
		*p = int(d.Int())
	}
	out.Outcome = discover.Outcome(d.Int())
	for _, p := range []*[]string{&out.Models, &out.UsageOrder, &out.Prompts} {
		if n := d.Count(); n > 0 {
			*p = make([]string, n)
			for i := range *p {
				(*p)[i] = d.Str()
			}
		}
	}
	if n := d.Count(); n > 0 {
		out.Usage = make(map[string]usage, n)
		for range n {
			id := d.Str()
			u := usage{TS: d.Time()}
			u.Tokens = discover.Tokens{Input: d.Int(), Output: d.Int(), CacheRead: d.Int(), CacheWrite: d.Int()}
			out.Usage[id] = u
		}
	}
	if !d.Done() {
		return index.ErrEncoding
	}
	*c = out
	return nil
}
