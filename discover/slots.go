package discover

import (
	"sort"
	"time"

	"github.com/agentctl/agentctl/discover/index"
)

// SlotSeconds is the width of a usage slot: 15 minutes. Every time zone offset
// in use is a whole number of quarter hours, so a slot lies inside one local day
// in any zone, and the parse index can keep slots without knowing the user's
// zone (`usage --by day` maps them to days when it runs; a changed TZ needs no
// rebuild).
const SlotSeconds = 15 * 60

// Slot is the tokens one session's records spent in one 15-minute slot, by the
// records' own timestamps.
type Slot struct {
	At     int64 // Unix seconds of the slot's start (a multiple of SlotSeconds)
	Tokens Tokens
}

// Slots are a session's usage over time, sorted by At, one entry per slot with
// records. Their sum is the session's tokens (README "usage"): a parser adds
// every record it counts to the slot of its timestamp.
type Slots []Slot

// SlotOf is the slot of a Unix time in milliseconds.
func SlotOf(ms int64) int64 {
	s := ms / 1000
	if ms < 0 && ms%1000 != 0 {
		s--
	}
	r := s % SlotSeconds
	if r < 0 {
		r += SlotSeconds
	}
	return s - r
}

// SlotOfTime is SlotOf for a time.
func SlotOfTime(t time.Time) int64 { return SlotOf(t.UnixMilli()) }

// Add adds t to the slot starting at slot (see SlotOf). Records come mostly in
// time order, so the last slot is tried first.
func (s *Slots) Add(slot int64, t Tokens) {
	if t.Zero() {
		return
	}
	ss := *s
	if n := len(ss); n > 0 && ss[n-1].At == slot {
		ss[n-1].Tokens.Add(t)
		return
	}
	i := sort.Search(len(ss), func(i int) bool { return ss[i].At >= slot })
	if i < len(ss) && ss[i].At == slot {
		ss[i].Tokens.Add(t)
		return
	}
	ss = append(ss, Slot{})
	copy(ss[i+1:], ss[i:])
	ss[i] = Slot{At: slot, Tokens: t}
	*s = ss
}

// Sub removes t from the slot starting at slot (a replaced record: Claude Code's
// last line per request). A slot left empty is dropped.
func (s *Slots) Sub(slot int64, t Tokens) {
	ss := *s
	i := sort.Search(len(ss), func(i int) bool { return ss[i].At >= slot })
	if i == len(ss) || ss[i].At != slot {
		return
	}
	neg := Tokens{Input: -t.Input, Output: -t.Output, CacheRead: -t.CacheRead, CacheWrite: -t.CacheWrite}
	ss[i].Tokens.Add(neg)
	if ss[i].Tokens.Zero() {
		*s = append(ss[:i], ss[i+1:]...)
	}
}

// Merge adds every slot of o.
func (s *Slots) Merge(o Slots) {
	for _, x := range o {
		s.Add(x.At, x.Tokens)
	}
}

// Sum is the total over every slot.
func (s Slots) Sum() Tokens {
	var t Tokens
	for _, x := range s {
		t.Add(x.Tokens)
	}
	return t
}

// Clone returns a copy that shares no memory with s.
func (s Slots) Clone() Slots {
	if s == nil {
		return nil
	}
	return append(Slots(nil), s...)
}

// Encode appends s for the parse index: the count, then each slot as the
// distance in slots from the previous one and its four counts.
func (s Slots) Encode(e *index.Enc) {
	e.Uint(uint64(len(s)))
	prev := int64(0)
	for _, x := range s {
		e.Int((x.At - prev) / SlotSeconds)
		prev = x.At
		e.Int(x.Tokens.Input)
		e.Int(x.Tokens.Output)
		e.Int(x.Tokens.CacheRead)
		e.Int(x.Tokens.CacheWrite)
	}
}

// DecodeSlots reads what Encode wrote.
func DecodeSlots(d *index.Dec) Slots {
	n := d.Count()
	if n == 0 {
		return nil
	}
	s := make(Slots, n)
	prev := int64(0)
	for i := range s {
		prev += d.Int() * SlotSeconds
		s[i] = Slot{At: prev, Tokens: Tokens{Input: d.Int(), Output: d.Int(), CacheRead: d.Int(), CacheWrite: d.Int()}}
	}
	return s
}
