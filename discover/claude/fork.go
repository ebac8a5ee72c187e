package claude

import (
	"context"
	"hash/fnv"
	"io"
	"path/filepath"
	"sort"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// A fork (claude --resume X --fork-session) starts a new transcript with a copy
// of X's turns, message ids and requestIds kept (docs/agents/claude-code.md §3.1).
// Each session's own figures include what it copied; inherited says how much,
// so that a sum over sessions counts every API request once. The index keeps
// only each transcript's first usage key: transcripts sharing it are one family,
// and only families (rare) are read again to compare their requests. A fork is
// written to the bucket of the session it resumed, so families are per bucket
// (and `status` of one session needs only its bucket).

// groupKey is the (message.id, requestId) key of an assistant line.
func groupKey(msgID, requestID []byte) uint64 {
	h := fnv.New64a()
	h.Write(msgID)
	h.Write([]byte{0})
	h.Write(requestID)
	return h.Sum64()
}

// keyedUsage is one request's usage, by key, in file order.
type keyedUsage struct {
	keys  []uint64
	usage map[uint64]modelUsage
}

// readKeyed reads the deduplicated usage of every request with ids in path.
func readKeyed(path string) (*keyedUsage, error) {
	k := &keyedUsage{usage: map[uint64]modelUsage{}}
	_, _, err := jsonl.ReadFile(path, 0, func(line []byte, _ int64) error {
		var r record
		if parseRecord(line, &r) != nil || !strEq(r.Type, "assistant") || r.APIError {
			return nil
		}
		m := r.message()
		model := str(m.Model)
		if model == "<synthetic>" || len(m.ID) <= 2 || len(r.RequestID) <= 2 {
			return nil
		}
		u, tier := parseUsageTier(m.tokenCounts)
		key := groupKey(m.ID, r.RequestID)
		if _, seen := k.usage[key]; !seen {
			k.keys = append(k.keys, key)
		}
		k.usage[key] = modelUsage{Model: model, U: u, Tier: tier} // the last line of a group wins
		return nil
	})
	return k, err
}

// markInherited sets Inherited on the files of every fork family: the requests
// a transcript shares with a family member that started earlier (the one it was
// forked from, or that one's own parent) are inherited.
func markInherited(ctx context.Context, files []*fileState) {
	type family struct {
		dir string
		key uint64
	}
	families := map[family][]*fileState{}
	for _, f := range files {
		if f.Complete && f.Agg.FirstKey != 0 {
			k := family{filepath.Dir(f.Path), f.Agg.FirstKey}
			families[k] = append(families[k], f)
		}
	}
	for _, fam := range families {
		if len(fam) < 2 || ctx.Err() != nil {
			continue
		}
		sort.SliceStable(fam, func(i, j int) bool {
			if fam[i].Agg.StartMs != fam[j].Agg.StartMs {
				return fam[i].Agg.StartMs < fam[j].Agg.StartMs
			}
			return fam[i].ID < fam[j].ID
		})
		seen := map[uint64]bool{}
		for _, f := range fam {
			k, err := readKeyed(f.Path)
			if err != nil {
				continue // vanished meanwhile: nothing known to be inherited
			}
			var inh []modelUsage
			for _, key := range k.keys {
				if !seen[key] {
					seen[key] = true
					continue
				}
				inh = addModelUsage(inh, k.usage[key])
			}
			f.Inherited = inh
		}
	}
}

func addModelUsage(ms []modelUsage, u modelUsage) []modelUsage {
	for i := range ms {
		if ms[i].Model == u.Model && ms[i].Tier == u.Tier {
			ms[i].U.add(u.U)
			return ms
		}
	}
	return append(ms, u)
}

// inheritedExtra fills tokens_inherited and cost_inherited_usd.
func inheritedExtra(s *discover.Session, inh []modelUsage, prices *priceTable) {
	if len(inh) == 0 {
		return
	}
	var u tokenCounts
	for _, m := range inh {
		u.add(m.U)
	}
	if s.Extra == nil {
		s.Extra = map[string]any{}
	}
	s.Extra["tokens_inherited"] = discover.Tokens{Input: u.In, Output: u.Out, CacheRead: u.CR, CacheWrite: u.CW5m + u.CW1h}
	if s.CostUSD != nil {
		if usd, unknown := prices.cost(inh); len(unknown) == 0 {
			s.Extra["cost_inherited_usd"] = usd
		}
	}
}

// bucketSiblings loads the other transcripts in the buckets of the given files
// that may have fork relatives, so that Find marks inherited usage exactly as
// Discover does: those the bucket's fork table names (forktable.go) when it is
// fresh, else every transcript of the bucket.
func (s *scanner) bucketSiblings(ctx context.Context, files []*fileState, forks *index.Index[*forkTable]) []*fileState {
	have := map[string]bool{}
	keys := map[string]map[string]uint64{}
	for _, f := range files {
		have[f.Path] = true
		if f.Complete && f.Agg.FirstKey != 0 {
			dir := filepath.Dir(f.Path)
			if keys[dir] == nil {
				keys[dir] = map[string]uint64{}
			}
			keys[dir][filepath.Base(f.Path)] = f.Agg.FirstKey
		}
	}
	var sibs []*fileState
	for dir, ks := range keys {
		names, ok := forkCandidates(forks, dir, ks)
		if !ok {
			var err error
			if names, err = readNames(dir); err != nil {
				continue
			}
		}
		want := map[uint64]bool{}
		for _, k := range ks {
			want[k] = true
		}
		for _, name := range names {
			id := sessionIDOf(name)
			path := filepath.Join(dir, name)
			if id == "" || have[path] {
				continue
			}
			stamp, regular, err := index.StatPath(path)
			if err != nil || !regular {
				continue
			}
			if !ok && !s.mayShare(path, stamp, want) {
				continue // its first key is another: not of the family
			}
			sibs = append(sibs, &fileState{transcript: transcript{ID: id, Path: path}, Stamp: stamp, Mtime: time.Unix(0, stamp.MtimeNs)})
		}
	}
	loaded, _ := s.load(ctx, sibs, false)
	return loaded
}

// mayShare reports whether the transcript at path can have one of the first
// keys wanted: from its index entry when fresh, else from its first lines (up
// to the first request with ids), so that a lookup without a fork table parses
// only the transcripts of its family, not its whole bucket.
func (s *scanner) mayShare(path string, stamp index.Stamp, want map[uint64]bool) bool {
	if e, ok := s.ix.Get(path); ok && e.Payload != nil && e.Plan(stamp) == index.Fresh {
		return want[e.Payload.FirstKey]
	}
	f, err := agentfs.Open(path)
	if err != nil {
		return true // let load decide
	}
	defer f.Close()
	var a aggregate
	_, _, err = jsonl.Read(io.LimitReader(f, quickHead), 0, func(line []byte, at int64) error {
		a.consume(line, at)
		if a.FirstKey != 0 {
			return io.EOF
		}
		return nil
	})
	if a.FirstKey != 0 {
		return want[a.FirstKey]
	}
	// No request with ids in its head: one may follow beyond it (read it
	// whole), or the file has none (then it belongs to no family).
	return err != nil || stamp.Size > quickHead
}
