package claude

import (
	"path/filepath"
	"slices"

	"github.com/agentctl/agentctl/discover/index"
)

// A lookup must mark inherited usage as a listing does (fork.go), which needs
// the transcripts of the session's bucket that share its first usage key. A full
// listing records, per bucket directory, which transcripts have which first key
// (a fork table), stamped with the directory's stamp taken before its names were
// read. While the directory's stamp is unchanged no transcript was created,
// removed or renamed in it, and a transcript's first key never changes once it
// has one (Claude Code only appends), so a lookup reads only the transcripts
// sharing its key plus the unsettled ones (no key yet, or not fully parsed when
// the table was made), instead of the whole bucket. Any other change of the
// directory makes the table stale and the lookup reads the whole bucket.

const forkIndexVersion = 1

// forkTable is one bucket's fork table.
type forkTable struct {
	Keys      map[uint64][]string // first usage key → transcript names (only keys two or more share)
	Unsettled []string
}

// loadForks opens the fork tables: a lookup reads only its buckets' tables.
func loadForks(dir string, point bool) *index.Index[*forkTable] {
	if point {
		return index.LoadPoint[*forkTable](dir, Name+"-forks", forkIndexVersion)
	}
	return index.Load[*forkTable](dir, Name+"-forks", forkIndexVersion)
}

// forkCandidates returns the transcript names of dir that can share the first
// key of the transcripts named (names → keys), and false when dir has no fresh
// table or one of them was unsettled when it was made (its key then was not
// known, so neither are the transcripts sharing it).
func forkCandidates(forks *index.Index[*forkTable], dir string, keys map[string]uint64) ([]string, bool) {
	now, _, err := index.StatPath(dir)
	if err != nil {
		return nil, false
	}
	e, ok := forks.Get(dir)
	if !ok || e.Payload == nil || e.Plan(now) != index.Fresh {
		return nil, false
	}
	t := e.Payload
	out := slices.Clone(t.Unsettled)
	for name, k := range keys {
		if slices.Contains(t.Unsettled, name) {
			return nil, false
		}
		out = append(out, t.Keys[k]...)
	}
	return out, true
}

// recordForks puts the fork table of every bucket the listing read whole.
// stamps are the directories' stamps taken before their names were read; files
// are the transcripts loaded, listed those listed.
func recordForks(forks *index.Index[*forkTable], stamps map[string]index.Stamp, listed, files []*fileState) {
	loaded := make(map[*fileState]bool, len(files))
	for _, f := range files {
		loaded[f] = true
	}
	byKey := map[string]map[uint64][]string{}
	unsettled := map[string][]string{}
	for _, f := range listed {
		dir, name := filepath.Dir(f.Path), filepath.Base(f.Path)
		if !loaded[f] || !f.Complete || f.Agg == nil || f.Agg.FirstKey == 0 {
			unsettled[dir] = append(unsettled[dir], name)
			continue
		}
		if byKey[dir] == nil {
			byKey[dir] = map[uint64][]string{}
		}
		byKey[dir][f.Agg.FirstKey] = append(byKey[dir][f.Agg.FirstKey], name)
	}
	for dir, st := range stamps {
		t := &forkTable{Keys: map[uint64][]string{}, Unsettled: unsettled[dir]}
		for k, names := range byKey[dir] {
			if len(names) > 1 {
				t.Keys[k] = names
			}
		}
		forks.Put(dir, index.Entry[*forkTable]{Stamp: st, Payload: t})
	}
}

// MarshalBinary encodes t for the index.
func (t *forkTable) MarshalBinary() ([]byte, error) {
	var e index.Enc
	keys := make([]uint64, 0, len(t.Keys))
	for k := range t.Keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.Uint(uint64(len(keys)))
	for _, k := range keys {
		e.Uint64(k)
		e.Uint(uint64(len(t.Keys[k])))
		for _, n := range t.Keys[k] {
			e.Str(n)
		}
	}
	e.Uint(uint64(len(t.Unsettled)))
	for _, n := range t.Unsettled {
		e.Str(n)
	}
	return e.Buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (t *forkTable) UnmarshalBinary(b []byte) error {
	d := index.NewDec(b)
	out := forkTable{Keys: map[uint64][]string{}}
	for n := d.Count(); n > 0 && !d.Bad(); n-- {
		k := d.Uint64()
		names := make([]string, d.Count())
		for i := range names {
			names[i] = d.Str()
		}
		out.Keys[k] = names
	}
	if n := d.Count(); n > 0 {
		out.Unsettled = make([]string, n)
		for i := range out.Unsettled {
			out.Unsettled[i] = d.Str()
		}
	}
	if !d.Done() {
		return index.ErrEncoding
	}
	*t = out
	return nil
}
