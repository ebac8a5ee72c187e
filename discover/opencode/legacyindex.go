package opencode

import (
	"math"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// legacyIndexVersion changes whenever legacyEntry's meaning changes.
const legacyIndexVersion = 5 // 2: msgUsage.Bad; 3: binary format; 4: msgUsage.At; 5: one entry per session (legacyEntry)

// racyWindow: file system timestamps are coarse (a clock tick), so a change made
// in the same tick as the stamp taken when an entry was built can leave that
// stamp as it was. An entry any of whose stamps is this recent is kept but
// rebuilt by the next listing (index.Entry.Partial), as git treats racy entries.
const racyWindow = 2 * time.Second

// legacyEntry is the parse index payload of one legacy session, keyed by its
// session file and stamped by it: what a listing shows of the session (from the
// session file, the message files and the first prompt's part files), and the
// stamps that prove it still holds. How OpenCode ≤ 1.1 writes the tree
// (docs/agents/opencode.md §2.2, "How the tree changes") makes these enough:
//   - Msgs, the message directory's stamp: a message file created, deleted, or
//     written by a rename changes it;
//   - Watch, the files OpenCode may still rewrite in place, stat'ed on every
//     listing: an assistant message without time.completed (it is rewritten as
//     its turn streams), a message file that does not parse (possibly caught
//     half written), the first prompt's part directory while no text part is
//     found in it.
//
// A warm listing then costs two stat calls per session (its session file and
// message directory) plus one per watched file, and reads nothing else.
type legacyEntry struct {
	Rec   record // without Path, Worktree and Legacy: the listing sets them
	Msgs  index.Stamp
	Watch []watched
	// newest is the latest modification time of the message files read (ns;
	// not encoded): one as recent as racyWindow may change again unseen.
	newest int64
}

// watched is a file or directory under storage/ and its stamp (zero: absent).
type watched struct {
	Rel   string
	Stamp index.Stamp
}

// racy reports whether a stamp may still miss a change (see racyWindow).
func racy(s index.Stamp, now time.Time) bool {
	return s.MtimeNs > now.Add(-racyWindow).UnixNano()
}

// addUsage counts one assistant message's tokens and cost into r.
func addUsage(r *record, m *msgData) {
	if m.Role != "assistant" {
		return
	}
	if m.Tokens != nil {
		t := m.Tokens
		if !discover.UsageOK(t.Input, t.Output, t.Reasoning, t.Cache.Read, t.Cache.Write) {
			r.BadUsage++ // left out of the totals entirely, its cost too (issue 19)
			return
		}
		if r.Tokens == nil {
			r.Tokens = &tokenClasses{}
		}
		tok := r.Tokens
		tok.Input = discover.SatAdd(tok.Input, t.Input)
		tok.Output = discover.SatAdd(tok.Output, t.Output)
		tok.Reasoning = discover.SatAdd(tok.Reasoning, t.Reasoning)
		tok.CacheRead = discover.SatAdd(tok.CacheRead, t.Cache.Read)
		tok.CacheWrite = discover.SatAdd(tok.CacheWrite, t.Cache.Write)
		at := m.Time.Completed
		if at <= 0 {
			at = m.Time.Created
		}
		if at > 0 {
			r.Slots.Add(discover.SlotOf(at), discover.Tokens{Input: t.Input, Output: t.Output + t.Reasoning,
				CacheRead: t.Cache.Read, CacheWrite: t.Cache.Write})
		}
	}
	if m.Cost != nil {
		if r.Cost == nil {
			r.Cost = new(float64)
		}
		*r.Cost += *m.Cost
	}
}

func encStamp(e *index.Enc, s index.Stamp) {
	e.Uint(s.Dev)
	e.Uint(s.Ino)
	e.Int(s.Size)
	e.Int(s.MtimeNs)
}

func decStamp(d *index.Dec) index.Stamp {
	return index.Stamp{Dev: d.Uint(), Ino: d.Uint(), Size: d.Int(), MtimeNs: d.Int()}
}

// MarshalBinary encodes l for the parse index (decoded only when asked for).
func (l *legacyEntry) MarshalBinary() ([]byte, error) {
	var e index.Enc
	r := &l.Rec
	for _, s := range []string{r.ID, r.Dir, r.Title, r.Version, r.ParentID, r.ProjectID, r.Slug,
		r.Model.Provider, r.Model.ID, r.Model.Variant,
		r.Last.ID, r.Last.Role, r.Last.Finish, r.Last.ErrName, r.Last.ErrMsg, r.Last.Provider, r.Last.ModelID} {
		e.Str(s)
	}
	for _, n := range []int64{r.Created, r.Updated, r.Archived, r.Last.Created, r.Last.Completed, r.LastUserAt, int64(r.BadUsage)} {
		e.Int(n)
	}
	e.Bool(r.Cost != nil)
	if r.Cost != nil {
		e.Uint(math.Float64bits(*r.Cost))
	}
	e.Bool(r.Tokens != nil)
	if t := r.Tokens; t != nil {
		for _, n := range []int64{t.Input, t.Output, t.Reasoning, t.CacheRead, t.CacheWrite} {
			e.Int(n)
		}
	}
	e.Bool(r.Prompt != nil)
	if r.Prompt != nil {
		e.Str(*r.Prompt)
	}
	r.Slots.Encode(&e)
	encStamp(&e, l.Msgs)
	e.Uint(uint64(len(l.Watch)))
	for _, w := range l.Watch {
		e.Str(w.Rel)
		encStamp(&e, w.Stamp)
	}
	return e.Buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (l *legacyEntry) UnmarshalBinary(b []byte) error {
	d := index.NewDec(b)
	var out legacyEntry
	r := &out.Rec
	r.ID, r.Dir, r.Title, r.Version = d.Str(), d.Shared(), d.Str(), d.Shared()
	r.ParentID, r.ProjectID, r.Slug = d.Str(), d.Shared(), d.Str()
	r.Model = modelRef{Provider: d.Shared(), ID: d.Shared(), Variant: d.Shared()}
	r.Last.ID, r.Last.Role, r.Last.Finish, r.Last.ErrName, r.Last.ErrMsg = d.Str(), d.Shared(), d.Shared(), d.Shared(), d.Str()
	r.Last.Provider, r.Last.ModelID = d.Shared(), d.Shared()
	r.Created, r.Updated, r.Archived = d.Int(), d.Int(), d.Int()
	r.Last.Created, r.Last.Completed, r.LastUserAt, r.BadUsage = d.Int(), d.Int(), d.Int(), int(d.Int())
	if d.Bool() {
		c := math.Float64frombits(d.Uint())
		r.Cost = &c
	}
	if d.Bool() {
		r.Tokens = &tokenClasses{d.Int(), d.Int(), d.Int(), d.Int(), d.Int()}
	}
	if d.Bool() {
		p := d.Str()
		r.Prompt = &p
	}
	r.Slots = discover.DecodeSlots(&d)
	out.Msgs = decStamp(&d)
	n := d.Count()
	for i := 0; i < n && !d.Bad(); i++ {
		out.Watch = append(out.Watch, watched{Rel: d.Str(), Stamp: decStamp(&d)})
	}
	if !d.Done() {
		return index.ErrEncoding
	}
	*l = out
	return nil
}
