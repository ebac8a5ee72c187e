package discover

import (
	"encoding/binary"
	"math"
	"strings"
	"time"
)

//go:generate go run ./internal/sessiongen -src session.go -pack session_pack_gen.go

// packed is one adapter's sessions in a listing (List), kept encoded until they
// are printed: a Session is 536 bytes of fields, most of them empty, plus an
// allocation per string, time, token count and extra map, about 1 KB a session
// all told; encoded it is about a quarter of that. `list -a` holds every
// session until it has them all (they are printed newest first), so at 10,000
// sessions per agent the sessions were most of what it held.
//
// Each session is a run of bytes in one string (arena): its strings are views
// of it, or of the shared table for values many sessions repeat (directories,
// models, statuses: the fields Sharer shares), so a decoded session copies no
// string but its path. A session holding what the encoding does not know (a
// budget, usage slots, a time in another zone, an extra value of another type)
// is kept as it is, in spill.
//
// Which string fields go through the shared table and which are written in
// place is said by Session's tags (session_pack_gen.go, written by go generate).
type packed struct {
	arena  string
	off    []uint32 // session i starts at arena[off[i]]; spilled: spillBit|index in spill
	keys   []packKey
	shared []string
	boxes  []any // the shared table's entries as interface values
	spill  []Session
}

const spillBit = 1 << 31

// packKey is what sorting a listing needs of a session (Listing.sort).
type packKey struct {
	sec     int64
	nsec    int32
	alive   bool
	unknown bool // status unknown: alive for listing only while active in its window (Filter.keepAt)
}

func keyOf(s *Session) packKey {
	t := s.LastSeen()
	return packKey{sec: t.Unix(), nsec: int32(t.Nanosecond()), alive: Alive(s.Status), unknown: s.Status == StatusUnknown}
}

// The flags word: which of the optional values follow, in this order.
const (
	fInferred = 1 << iota
	fPID
	fStarted
	fLast
	fEnded
	fEndedIsLast // EndedAt is LastActivity (Sharer): decoded as the same pointer
	fExitCode
	fTokens
	fCost
	fModels
	fExtra
	fMeta
	fTitleIsPrompt
)

// Extra value kinds.
const (
	xString = iota
	xBool
	xInt
	xInt64
	xFloat64
	xTokens
)

// Zones of a time.
const (
	zUTC = iota
	zLocal
)

type packer struct {
	b      strings.Builder
	tmp    [binary.MaxVarintLen64]byte
	shared map[string]uint32 // a string written: its entry in at
	at     [][2]uint32       // the shared table's entries: offset and length
	p      *packed
	// last is each field's value in the session before and its entry: in a
	// listing the next session's is mostly the same, and comparing is cheaper
	// than looking it up. The last entry is the path's directory's.
	last [nShared + 1]struct {
		v   string
		ref uint32
	}
}

// packSessions encodes ss; ss is not used afterwards.
func packSessions(ss []Session) *packed {
	pk := &packer{shared: map[string]uint32{}, p: &packed{off: make([]uint32, len(ss)), keys: make([]packKey, len(ss))}}
	pk.b.Grow(len(ss) * 320) // about what a session takes
	for i := range ss {
		s := &ss[i]
		pk.p.keys[i] = keyOf(s)
		start := pk.b.Len()
		if start >= spillBit || !pk.session(s) {
			pk.p.off[i] = spillBit | uint32(len(pk.p.spill))
			pk.p.spill = append(pk.p.spill, *s)
			continue
		}
		pk.p.off[i] = uint32(start)
	}
	pk.p.arena = pk.b.String()
	pk.p.shared = make([]string, len(pk.at))
	pk.p.boxes = make([]any, len(pk.at))
	for i, a := range pk.at {
		pk.p.shared[i] = pk.p.arena[a[0] : a[0]+a[1]]
		pk.p.boxes[i] = pk.p.shared[i]
	}
	return pk.p
}

func (pk *packer) uvarint(v uint64) { pk.b.Write(binary.AppendUvarint(pk.tmp[:0], v)) }
func (pk *packer) varint(v int64)   { pk.b.Write(binary.AppendVarint(pk.tmp[:0], v)) }

// str writes an inline string: its length, then its bytes.
func (pk *packer) str(v string) {
	pk.uvarint(uint64(len(v)))
	pk.b.WriteString(v)
}

// sh writes a string many sessions may repeat: 0 for "", 2·ref+1 for one
// written before (an entry of the shared table), 2·len for one written here,
// which becomes an entry of the table. ok says v has an entry, ref.
func (pk *packer) sh(v string) (ref uint32, ok bool) {
	if v == "" {
		pk.uvarint(0)
		return 0, false
	}
	if ref, ok = pk.shared[v]; ok {
		pk.uvarint(uint64(ref)<<1 | 1)
		return ref, true
	}
	pk.uvarint(uint64(len(v)) << 1)
	if len(pk.shared) < 1<<20 && len(v) <= 512 {
		ref, ok = uint32(len(pk.at)), true
		pk.shared[v] = ref
		pk.at = append(pk.at, [2]uint32{uint32(pk.b.Len()), uint32(len(v))})
	}
	pk.b.WriteString(v)
	return ref, ok
}

// shField is sh for the string field f (an index into last).
func (pk *packer) shField(f int, v string) {
	if l := &pk.last[f]; v != "" && v == l.v {
		pk.uvarint(uint64(l.ref)<<1 | 1)
		return
	}
	if ref, ok := pk.sh(v); ok {
		pk.last[f].v, pk.last[f].ref = v, ref
	}
}

// zone is the encoding of t's location; ok is false for one it does not know.
func zone(t *time.Time) (z byte, ok bool) {
	switch t.Location() {
	case time.UTC:
		return zUTC, true
	case time.Local:
		return zLocal, true
	}
	return 0, false
}

func (pk *packer) time(t *time.Time, z byte) {
	pk.varint(t.Unix())
	pk.uvarint(uint64(t.Nanosecond()))
	pk.b.WriteByte(z)
}

// session writes s; it reports false, before writing anything, for a session
// the encoding cannot hold exactly.
func (pk *packer) session(s *Session) bool {
	if s.Budget != nil || s.Slots != nil {
		return false
	}
	var flags uint64
	var zones [3]byte
	for i, t := range [...]*time.Time{s.StartedAt, s.LastActivity, s.EndedAt} {
		if t == nil {
			continue
		}
		z, ok := zone(t)
		if !ok {
			return false
		}
		zones[i] = z
		flags |= fStarted << i
	}
	if s.EndedAt != nil && s.EndedAt == s.LastActivity {
		flags = flags&^fEnded | fEndedIsLast
	}
	for _, v := range s.Extra {
		switch v.(type) {
		case string, bool, int, int64, float64, Tokens:
		default:
			return false
		}
	}
	for _, c := range [...]struct {
		set  bool
		flag uint64
	}{{s.Inferred, fInferred}, {s.PID != 0, fPID}, {s.ExitCode != nil, fExitCode}, {s.Tokens != nil, fTokens},
		{s.CostUSD != nil, fCost}, {s.Models != nil, fModels}, {s.Extra != nil, fExtra}, {s.Meta != nil, fMeta},
		{s.Title == s.Prompt, fTitleIsPrompt}} {
		if c.set {
			flags |= c.flag
		}
	}
	pk.str(s.ID)
	pk.uvarint(flags)
	for f, v := range sharedStrings(s) {
		pk.shField(f, v)
	}
	for _, v := range inlineStrings(s) {
		pk.str(v)
	}
	if flags&fTitleIsPrompt == 0 {
		pk.str(s.Title)
	}
	// A path is its directory, which sessions share, and its name.
	dir, name := "", s.Path
	if i := strings.LastIndexByte(s.Path, '/'); i > 0 {
		dir, name = s.Path[:i], s.Path[i+1:]
	}
	pk.shField(len(pk.last)-1, dir)
	pk.str(name)
	if flags&fPID != 0 {
		pk.varint(int64(s.PID))
	}
	for i, t := range [...]*time.Time{s.StartedAt, s.LastActivity, s.EndedAt} {
		if flags&(fStarted<<i) != 0 {
			pk.time(t, zones[i])
		}
	}
	if flags&fExitCode != 0 {
		pk.varint(int64(*s.ExitCode))
	}
	if flags&fTokens != 0 {
		pk.tokens(*s.Tokens)
	}
	if flags&fCost != 0 {
		pk.uvarint(math.Float64bits(*s.CostUSD))
	}
	if flags&fModels != 0 {
		pk.uvarint(uint64(len(s.Models)))
		for _, m := range s.Models {
			pk.sh(m)
		}
	}
	if flags&fExtra != 0 {
		pk.uvarint(uint64(len(s.Extra)))
		for k, v := range s.Extra {
			pk.sh(k)
			switch v := v.(type) {
			case string:
				pk.b.WriteByte(xString)
				pk.sh(v)
			case bool:
				pk.b.WriteByte(xBool)
				if v {
					pk.b.WriteByte(1)
				} else {
					pk.b.WriteByte(0)
				}
			case int:
				pk.b.WriteByte(xInt)
				pk.varint(int64(v))
			case int64:
				pk.b.WriteByte(xInt64)
				pk.varint(v)
			case float64:
				pk.b.WriteByte(xFloat64)
				pk.uvarint(math.Float64bits(v))
			case Tokens:
				pk.b.WriteByte(xTokens)
				pk.tokens(v)
			}
		}
	}
	if flags&fMeta != 0 {
		pk.uvarint(uint64(len(s.Meta)))
		for k, v := range s.Meta {
			pk.sh(k)
			pk.sh(v)
		}
	}
	return true
}

func (pk *packer) tokens(t Tokens) {
	pk.varint(t.Input)
	pk.varint(t.Output)
	pk.varint(t.CacheRead)
	pk.varint(t.CacheWrite)
}

// Len is the number of sessions.
func (p *packed) Len() int { return len(p.off) }

// id is session i's id, without decoding the rest.
func (p *packed) id(i int) string {
	if o := p.off[i]; o&spillBit != 0 {
		return p.spill[o&^spillBit].ID
	}
	d := unpacker{p: p, at: int(p.off[i])}
	return d.str()
}

// session decodes session i into a Session of its own: changing it changes
// nothing in p.
func (p *packed) session(i int) *Session {
	return p.sessionInto(i, new(unpacked))
}

// sessionInto decodes session i into u, reusing what u holds from the session
// decoded into it before (whose values it overwrites), and returns it.
func (p *packed) sessionInto(i int, u *unpacked) *Session {
	if o := p.off[i]; o&spillBit != 0 {
		u.s = p.spill[o&^spillBit]
		return &u.s
	}
	d := unpacker{p: p, at: int(p.off[i])}
	d.session(u)
	return &u.s
}

type unpacker struct {
	p  *packed
	at int
}

func (d *unpacker) uvarint() uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		c := d.p.arena[d.at]
		d.at++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
}

func (d *unpacker) varint() int64 {
	u := d.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *unpacker) str() string {
	n := int(d.uvarint())
	d.at += n
	return d.p.arena[d.at-n : d.at]
}

// ref reads what sh wrote: an entry of the shared table (ref >= 0), or the
// string itself.
func (d *unpacker) ref() (ref int, s string) {
	v := d.uvarint()
	switch {
	case v == 0:
		return -1, ""
	case v&1 != 0:
		return int(v >> 1), ""
	}
	n := int(v >> 1)
	d.at += n
	return -1, d.p.arena[d.at-n : d.at]
}

func (d *unpacker) sh() string {
	ref, s := d.ref()
	if ref >= 0 {
		s = d.p.shared[ref]
	}
	return s
}

func (d *unpacker) byte() byte {
	c := d.p.arena[d.at]
	d.at++
	return c
}

// unpacked is a decoded session with room for what its pointers point at: one
// allocation instead of one per value, and none when it is decoded into again.
type unpacked struct {
	s      Session
	times  [3]time.Time
	tokens Tokens
	cost   float64
	exit   int
	extra  map[string]any
	models []string
}

func (d *unpacker) session(u *unpacked) {
	u.s = Session{}
	s := &u.s
	s.ID = d.str()
	flags := d.uvarint()
	for _, p := range sharedStringPtrs(s) {
		*p = d.sh()
	}
	for _, p := range inlineStringPtrs(s) {
		*p = d.str()
	}
	s.Title = s.Prompt
	if flags&fTitleIsPrompt == 0 {
		s.Title = d.str()
	}
	dir, name := d.sh(), d.str()
	s.Path = name
	if dir != "" {
		s.Path = dir + "/" + name
	}
	s.Inferred = flags&fInferred != 0
	if flags&fPID != 0 {
		s.PID = int(d.varint())
	}
	for i, p := range [...]**time.Time{&s.StartedAt, &s.LastActivity, &s.EndedAt} {
		if flags&(fStarted<<i) == 0 {
			continue
		}
		sec := d.varint()
		nsec := int64(d.uvarint())
		t := time.Unix(sec, nsec)
		if d.byte() == zUTC {
			t = t.UTC()
		}
		u.times[i] = t
		*p = &u.times[i]
	}
	if flags&fEndedIsLast != 0 {
		s.EndedAt = s.LastActivity
	}
	if flags&fExitCode != 0 {
		u.exit = int(d.varint())
		s.ExitCode = &u.exit
	}
	if flags&fTokens != 0 {
		u.tokens = d.tokens()
		s.Tokens = &u.tokens
	}
	if flags&fCost != 0 {
		u.cost = math.Float64frombits(d.uvarint())
		s.CostUSD = &u.cost
	}
	if flags&fModels != 0 {
		n := int(d.uvarint())
		if cap(u.models) < n || u.models == nil {
			u.models = make([]string, max(n, 4))
		}
		s.Models = u.models[:n:n]
		for i := range s.Models {
			s.Models[i] = d.sh()
		}
	}
	if flags&fExtra != 0 {
		n := int(d.uvarint())
		if u.extra == nil {
			u.extra = make(map[string]any, max(n, 8))
		}
		clear(u.extra)
		s.Extra = u.extra
		for range n {
			k := d.sh()
			switch d.byte() {
			case xString:
				// The shared table's entries are boxed once (boxes).
				if ref, v := d.ref(); ref >= 0 {
					s.Extra[k] = d.p.boxes[ref]
				} else {
					s.Extra[k] = v
				}
			case xBool:
				s.Extra[k] = d.byte() == 1
			case xInt:
				s.Extra[k] = int(d.varint())
			case xInt64:
				s.Extra[k] = d.varint()
			case xFloat64:
				s.Extra[k] = math.Float64frombits(d.uvarint())
			case xTokens:
				s.Extra[k] = d.tokens()
			}
		}
	}
	if flags&fMeta != 0 {
		n := int(d.uvarint())
		s.Meta = make(map[string]string, n)
		for range n {
			k := d.sh()
			s.Meta[k] = d.sh()
		}
	}
}

func (d *unpacker) tokens() Tokens {
	return Tokens{Input: d.varint(), Output: d.varint(), CacheRead: d.varint(), CacheWrite: d.varint()}
}
