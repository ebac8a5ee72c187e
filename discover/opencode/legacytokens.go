package opencode

import (
	"math"
	"path/filepath"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// legacyIndexVersion changes whenever msgUsage's meaning changes.
const legacyIndexVersion = 4 // 2: msgUsage.Bad; 3: the binary format (MarshalBinary); 4: msgUsage.At

// msgUsage is the parse index payload of one legacy storage/message file: its
// tokens and cost. A session's totals are the sum over its message files; each
// file is read once and afterwards only stat'ed (docs/agents/opencode.md §2.2).
type msgUsage struct {
	Tokens    tokenClasses
	Cost      float64
	HasTokens bool
	HasCost   bool
	// Bad: an assistant message whose tokens cannot be true (discover.UsageOK);
	// it is left out of the totals entirely, its cost too (issue 19).
	Bad bool
	// At is the message's time (ms: time.completed, else time.created; 0:
	// none), the slot its tokens count in (usage by day).
	At int64
}

// legacyUsage sums the tokens and cost of the message files names in dir, from
// the index where a file is unchanged. Files that vanished or do not parse add
// nothing.
func legacyUsage(ix *index.Index[*msgUsage], dir string, names []string, r *record) {
	var tok tokenClasses
	var cost float64
	haveTok, haveCost := false, false
	for _, n := range names {
		path := filepath.Join(dir, n)
		stamp, regular, err := index.StatPath(path)
		if err != nil || !regular {
			continue
		}
		var u *msgUsage
		if ix.Fresh(path, stamp) {
			if e, ok := ix.Get(path); ok && e.Payload != nil {
				u = e.Payload
			}
		}
		if u == nil {
			var m msgData
			if !readJSON(path, &m) {
				continue
			}
			u = &msgUsage{}
			if m.Role == "assistant" && m.Tokens != nil {
				t := m.Tokens
				u.Tokens = tokenClasses{t.Input, t.Output, t.Reasoning, t.Cache.Read, t.Cache.Write}
				u.HasTokens = true
				if !discover.UsageOK(t.Input, t.Output, t.Reasoning, t.Cache.Read, t.Cache.Write) {
					u = &msgUsage{Bad: true}
				}
			}
			if m.Role == "assistant" && m.Cost != nil && !u.Bad {
				u.Cost, u.HasCost = *m.Cost, true
			}
			if u.At = m.Time.Completed; u.At <= 0 {
				u.At = m.Time.Created
			}
			ix.Put(path, index.Entry[*msgUsage]{Stamp: stamp, Offset: stamp.Size, Payload: u})
		}
		if u.Bad {
			r.BadUsage++
		}
		if u.HasTokens {
			tok.Input = discover.SatAdd(tok.Input, u.Tokens.Input)
			tok.Output = discover.SatAdd(tok.Output, u.Tokens.Output)
			tok.Reasoning = discover.SatAdd(tok.Reasoning, u.Tokens.Reasoning)
			tok.CacheRead = discover.SatAdd(tok.CacheRead, u.Tokens.CacheRead)
			tok.CacheWrite = discover.SatAdd(tok.CacheWrite, u.Tokens.CacheWrite)
			haveTok = true
			if u.At > 0 {
				r.Slots.Add(discover.SlotOf(u.At), discover.Tokens{Input: u.Tokens.Input, Output: u.Tokens.Output + u.Tokens.Reasoning,
					CacheRead: u.Tokens.CacheRead, CacheWrite: u.Tokens.CacheWrite})
			}
		}
		if u.HasCost {
			cost += u.Cost
			haveCost = true
		}
	}
	if haveTok {
		r.Tokens = &tok
	}
	if haveCost {
		r.Cost = &cost
	}
}

// MarshalBinary encodes u for the parse index: its binary format decodes an
// entry only when asked for, where gob decoded every message file's entry of a
// big legacy tree on every listing.
func (u *msgUsage) MarshalBinary() ([]byte, error) {
	var e index.Enc
	for _, n := range []int64{u.Tokens.Input, u.Tokens.Output, u.Tokens.Reasoning, u.Tokens.CacheRead, u.Tokens.CacheWrite} {
		e.Int(n)
	}
	e.Int(u.At)
	e.Uint(math.Float64bits(u.Cost))
	var flags uint64
	for i, b := range []bool{u.HasTokens, u.HasCost, u.Bad} {
		if b {
			flags |= 1 << i
		}
	}
	e.Uint(flags)
	return e.Buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (u *msgUsage) UnmarshalBinary(b []byte) error {
	d := index.NewDec(b)
	var out msgUsage
	for _, p := range []*int64{&out.Tokens.Input, &out.Tokens.Output, &out.Tokens.Reasoning, &out.Tokens.CacheRead, &out.Tokens.CacheWrite} {
		*p = d.Int()
	}
	out.At = d.Int()
	out.Cost = math.Float64frombits(d.Uint())
	flags := d.Uint()
	out.HasTokens, out.HasCost, out.Bad = flags&1 != 0, flags&2 != 0, flags&4 != 0
	if !d.Done() || flags > 7 {
		return index.ErrEncoding
	}
	*u = out
	return nil
}
