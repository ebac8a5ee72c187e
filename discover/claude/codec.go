package claude

import (
	"encoding/binary"
	"errors"
	"unique"
)

// The aggregate is the parse index payload of every transcript, and the index of
// a big history holds tens of thousands of them: decoding them by reflection
// (plain gob) cost more than stat'ing the files. gob calls these methods instead;
// the format is a flat sequence of varints and length-prefixed strings.
// TestAggCodecRoundTrip fills every field, so a field added to aggregate but not
// here fails the tests.

const aggCodecVersion = 1

var errAggCodec = errors.New("parse index entry: bad encoding")

// MarshalBinary encodes a for the parse index.
func (a *aggregate) MarshalBinary() ([]byte, error) {
	e := aggEnc{buf: make([]byte, 0, 256)}
	e.uint(aggCodecVersion)
	for _, s := range []string{a.Cwd, a.LastCwd, a.Model, a.Prompt, a.Enqueue, a.Slash, a.PromptTitle, a.CustomTitle, a.AgentName,
		a.AITitle, a.Summary, a.GitBranch, a.Version, a.Entrypoint, a.PermMode, a.PromptPermMode} {
		e.str(s)
	}
	e.bool(a.HasBranch)
	for _, n := range []int64{a.StartMs, a.LastMs, int64(a.Prompts), int64(a.ToolResults), int64(a.MetaUsers), int64(a.SideUsers),
		int64(a.AssistantLines), int64(a.Messages), int64(a.BadLines), int64(a.TooLong), a.LastTurnEnd} {
		e.int(n)
	}
	e.uint(uint64(len(a.ByModel)))
	for _, m := range a.ByModel {
		e.str(m.Model)
		e.usage(m.U)
	}
	if a.Recent == nil && a.recentRaw != nil {
		e.bytes(a.recentRaw) // never decoded: pass it through
	} else {
		e.bytes(encodeGroups(a.Recent))
	}
	e.uint(uint64(a.Last.Kind))
	e.int(a.Last.TS)
	e.int(a.Last.Off)
	e.str(a.Last.StopReason)
	e.str(a.Last.Text)
	return e.buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (a *aggregate) UnmarshalBinary(b []byte) error {
	d := aggDec{buf: b}
	if d.uint() != aggCodecVersion {
		return errAggCodec
	}
	// Directories, models, versions and modes repeat across a history's
	// transcripts, and a listing decodes all of them at once: one copy each.
	for _, s := range []*string{&a.Cwd, &a.LastCwd, &a.Model} {
		*s = d.shared()
	}
	for _, s := range []*string{&a.Prompt, &a.Enqueue, &a.Slash, &a.PromptTitle, &a.CustomTitle, &a.AgentName, &a.AITitle, &a.Summary} {
		*s = d.str()
	}
	for _, s := range []*string{&a.GitBranch, &a.Version, &a.Entrypoint, &a.PermMode, &a.PromptPermMode} {
		*s = d.shared()
	}
	a.HasBranch = d.bool()
	a.StartMs, a.LastMs = d.int(), d.int()
	for _, n := range []*int{&a.Prompts, &a.ToolResults, &a.MetaUsers, &a.SideUsers, &a.AssistantLines, &a.Messages, &a.BadLines, &a.TooLong} {
		*n = int(d.int())
	}
	a.LastTurnEnd = d.int()
	if n := d.count(); n > 0 {
		a.ByModel = make([]modelUsage, n)
		for i := range a.ByModel {
			a.ByModel[i].Model = d.shared()
			a.ByModel[i].U = d.usage()
		}
	}
	if raw := d.bytes(); len(raw) > 0 {
		a.recentRaw = append([]byte(nil), raw...) // gob reuses its buffer
	}
	a.Last = turnTail{Kind: uint8(d.uint()), TS: d.int(), Off: d.int(), StopReason: d.shared(), Text: d.str()}
	if d.err || len(d.buf) != 0 {
		return errAggCodec
	}
	return nil
}

func encodeGroups(gs []msgGroup) []byte {
	if len(gs) == 0 {
		return nil
	}
	e := aggEnc{buf: make([]byte, 0, 16*len(gs))}
	for _, g := range gs {
		e.uint(g.Key)
		e.int(int64(g.Model))
		e.usage(g.U)
	}
	return e.buf
}

// decodeGroups reads encodeGroups' output; a damaged one gives no groups (at
// worst the next line of an open group is counted again).
func decodeGroups(b []byte, models int) []msgGroup {
	d := aggDec{buf: b}
	var gs []msgGroup
	for len(d.buf) > 0 && !d.err {
		gs = append(gs, msgGroup{Key: d.uint(), Model: int(d.int()), U: d.usage()})
	}
	for _, g := range gs {
		if d.err || g.Model < 0 || g.Model >= models {
			return nil
		}
	}
	return gs
}

type aggEnc struct{ buf []byte }

func (e *aggEnc) uint(v uint64)  { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *aggEnc) int(v int64)    { e.buf = binary.AppendVarint(e.buf, v) }
func (e *aggEnc) str(s string)   { e.uint(uint64(len(s))); e.buf = append(e.buf, s...) }
func (e *aggEnc) bytes(b []byte) { e.uint(uint64(len(b))); e.buf = append(e.buf, b...) }
func (e *aggEnc) bool(v bool) {
	if v {
		e.uint(1)
	} else {
		e.uint(0)
	}
}
func (e *aggEnc) usage(u tokenCounts) {
	e.int(u.In)
	e.int(u.Out)
	e.int(u.CW5m)
	e.int(u.CW1h)
	e.int(u.CR)
}

// aggDec reads; after the first error every read returns zero and err stays set.
type aggDec struct {
	buf []byte
	err bool
}

func (d *aggDec) uint() uint64 {
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.err, d.buf = true, nil
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *aggDec) int() int64 {
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.err, d.buf = true, nil
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *aggDec) str() string {
	n := d.uint()
	if n > uint64(len(d.buf)) {
		d.err, d.buf = true, nil
		return ""
	}
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

// shared is str for values that repeat across transcripts: the canonical copy
// (unique.Make), allocated only the first time.
func (d *aggDec) shared() string {
	b := d.bytes()
	if len(b) == 0 {
		return ""
	}
	return unique.Make(string(b)).Value()
}

func (d *aggDec) bytes() []byte {
	n := d.uint()
	if n > uint64(len(d.buf)) {
		d.err, d.buf = true, nil
		return nil
	}
	b := d.buf[:n]
	d.buf = d.buf[n:]
	return b
}

func (d *aggDec) bool() bool { return d.uint() == 1 }

// count reads a slice length, bounded by what the remaining bytes can hold.
func (d *aggDec) count() int {
	n := d.uint()
	if n > uint64(len(d.buf)) {
		d.err, d.buf = true, nil
		return 0
	}
	return int(n)
}

func (d *aggDec) usage() tokenCounts {
	return tokenCounts{In: d.int(), Out: d.int(), CW5m: d.int(), CW1h: d.int(), CR: d.int()}
}
