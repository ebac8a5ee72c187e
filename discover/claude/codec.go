package claude

import (
	"math"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// The aggregate is the parse index payload of every transcript, and the index of
// a big history holds tens of thousands of them: decoding them by reflection
// (plain gob) cost more than stat'ing the files. gob calls these methods instead;
// the format is a flat sequence of varints and length-prefixed strings.
// TestAggCodecRoundTrip fills every field, so a field added to aggregate but not
// here fails the tests.

const aggCodecVersion = 6

// MarshalBinary encodes a for the parse index.
func (a *aggregate) MarshalBinary() ([]byte, error) {
	e := index.Enc{Buf: make([]byte, 0, 256)}
	e.Uint(aggCodecVersion)
	for _, s := range []string{a.Cwd, a.LastCwd, a.Model, a.Prompt, a.Enqueue, a.Slash, a.PromptTitle, a.CustomTitle, a.AgentName,
		a.AITitle, a.Summary, a.GitBranch, a.Version, a.Entrypoint, a.PermMode, a.PromptPermMode} {
		e.Str(s)
	}
	e.Bool(a.HasBranch)
	for _, n := range []int64{a.StartMs, a.LastMs, int64(a.Prompts), int64(a.ToolResults), int64(a.MetaUsers), int64(a.SideUsers),
		int64(a.AssistantLines), int64(a.Messages), int64(a.BadLines), int64(a.TooLong), int64(a.BadUsage), a.LastTurnEnd} {
		e.Int(n)
	}
	e.Uint(uint64(len(a.ByModel)))
	for _, m := range a.ByModel {
		e.Str(m.Model)
		e.Uint(uint64(m.Tier))
		encUsage(&e, m.U)
	}
	if a.Recent == nil && a.recentRaw != nil {
		e.Bytes(a.recentRaw) // never decoded: pass it through
	} else {
		e.Bytes(encodeGroups(a.Recent))
	}
	e.Uint(uint64(a.Last.Kind))
	e.Int(a.Last.TS)
	e.Int(a.Last.Off)
	e.Str(a.Last.StopReason)
	e.Str(a.Last.Text)
	e.Uint(math.Float64bits(a.AgentCost))
	e.Int(a.AgentCostOff)
	e.Int(a.UsageOff)
	e.Uint(a.FirstKey)
	a.Slots.Encode(&e)
	return e.Buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (a *aggregate) UnmarshalBinary(b []byte) error {
	d := index.NewDec(b)
	if d.Uint() != aggCodecVersion {
		return index.ErrEncoding
	}
	// Directories, models, versions and modes repeat across a history's
	// transcripts, and a listing decodes all of them at once: one copy each.
	for _, s := range []*string{&a.Cwd, &a.LastCwd, &a.Model} {
		*s = d.Shared()
	}
	for _, s := range []*string{&a.Prompt, &a.Enqueue, &a.Slash, &a.PromptTitle, &a.CustomTitle, &a.AgentName, &a.AITitle, &a.Summary} {
		*s = d.Str()
	}
	for _, s := range []*string{&a.GitBranch, &a.Version, &a.Entrypoint, &a.PermMode, &a.PromptPermMode} {
		*s = d.Shared()
	}
	a.HasBranch = d.Bool()
	a.StartMs, a.LastMs = d.Int(), d.Int()
	for _, n := range []*int{&a.Prompts, &a.ToolResults, &a.MetaUsers, &a.SideUsers, &a.AssistantLines, &a.Messages, &a.BadLines, &a.TooLong, &a.BadUsage} {
		*n = int(d.Int())
	}
	a.LastTurnEnd = d.Int()
	if n := d.Count(); n > 0 {
		a.ByModel = make([]modelUsage, n)
		for i := range a.ByModel {
			a.ByModel[i].Model = d.Shared()
			a.ByModel[i].Tier = uint8(d.Uint())
			a.ByModel[i].U = decUsage(&d)
		}
	}
	if raw := d.Bytes(); len(raw) > 0 {
		a.recentRaw = append([]byte(nil), raw...) // gob reuses its buffer
	}
	a.Last = turnTail{Kind: uint8(d.Uint()), TS: d.Int(), Off: d.Int(), StopReason: d.Shared(), Text: d.Str()}
	a.AgentCost = math.Float64frombits(d.Uint())
	a.AgentCostOff, a.UsageOff = d.Int(), d.Int()
	a.FirstKey = d.Uint()
	a.Slots = discover.DecodeSlots(&d)
	if !d.Done() {
		return index.ErrEncoding
	}
	return nil
}

func encodeGroups(gs []msgGroup) []byte {
	if len(gs) == 0 {
		return nil
	}
	e := index.Enc{Buf: make([]byte, 0, 16*len(gs))}
	for _, g := range gs {
		e.Uint(g.Key)
		e.Int(int64(g.Model))
		encUsage(&e, g.U)
		e.Int(g.Slot)
	}
	return e.Buf
}

// decodeGroups reads encodeGroups' output; a damaged one gives no groups (at
// worst the next line of an open group is counted again).
func decodeGroups(b []byte, models int) []msgGroup {
	d := index.NewDec(b)
	var gs []msgGroup
	for d.Len() > 0 && !d.Bad() {
		gs = append(gs, msgGroup{Key: d.Uint(), Model: int(d.Int()), U: decUsage(&d), Slot: d.Int()})
	}
	for _, g := range gs {
		if d.Bad() || g.Model < 0 || g.Model >= models {
			return nil
		}
	}
	return gs
}

func encUsage(e *index.Enc, u tokenCounts) {
	e.Int(u.In)
	e.Int(u.Out)
	e.Int(u.CW5m)
	e.Int(u.CW1h)
	e.Int(u.CR)
}

func decUsage(d *index.Dec) tokenCounts {
	return tokenCounts{In: d.Int(), Out: d.Int(), CW5m: d.Int(), CW1h: d.Int(), CR: d.Int()}
}
