package codex

import (
	"bytes"
	"io"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// Forks (docs/agents/codex.md §1.1). thread/fork makes a thread with its own
// id and rollout whose session_meta names the thread it came from
// (forked_from_id) and, as history_base, the parent's rollout and the offset
// its history is taken up to. Codex seeds the fork's token totals with the
// parent's at that point, so the fork's cumulative total includes them: what
// it inherited is the parent's last total_token_usage before history_base's
// offset (tokens_inherited, as Claude forks say it; Session.Own takes it off).

// forkHead is how far into a rollout forked_from_id is looked for: Codex
// writes session_meta's id fields before base_instructions.
const forkHead = 4 << 10

// forkedFrom returns session_meta.forked_from_id from a rollout's first bytes
// ("" when there is none).
func forkedFrom(r io.ReaderAt, size int64) string {
	n := min(size, forkHead)
	if n <= 0 {
		return ""
	}
	b := make([]byte, n)
	k, _ := r.ReadAt(b, 0)
	b = b[:k]
	if nl := bytes.IndexByte(b, '\n'); nl >= 0 {
		b = b[:nl]
	}
	if !bytes.Contains(b, []byte(`"type":"session_meta"`)) {
		return ""
	}
	const key = `"forked_from_id":"`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return ""
	}
	return uuidAt(string(b[i+len(key):min(len(b), i+len(key)+36)]), 0)
}

// inheritedUsage is the parent's cumulative usage a fork starts from: the last
// valid total_token_usage in the part of the chain before the fork's first
// rollout (chain[len-1]), newest part first. ok is false when none is found.
func inheritedUsage(chain []segment) (usage, bool) {
	for i := len(chain) - 2; i >= 0; i-- {
		seg := chain[i]
		f, err := agentfs.Open(seg.path)
		if err != nil {
			return usage{}, false
		}
		end := seg.end
		if fi, err := f.Stat(); err != nil {
			f.Close()
			return usage{}, false
		} else if end < 0 || end > fi.Size() {
			end = fi.Size()
		}
		var last usage
		found := false
		_, _, _ = jsonl.Read(io.NewSectionReader(f, 0, end), 0, func(line []byte, _ int64) error {
			if !bytes.Contains(line, []byte(`"token_count"`)) {
				return nil
			}
			var u usage
			if totalUsage(line, &u) && u.valid() {
				last, found = u, true
			}
			return nil
		})
		f.Close()
		if found {
			return last, true
		}
	}
	return usage{}, false
}

// forkExtra fills forked_from, tokens_inherited and cost_inherited_usd of a
// fork's session from its history chain (first rollout of the fork last).
func (st *state) forkExtra(s *discover.Session, parent string, chain []segment) {
	if s.Extra == nil {
		s.Extra = map[string]any{}
	}
	s.Extra["forked_from"] = parent
	u, ok := inheritedUsage(chain)
	if !ok {
		return
	}
	tok := tokensOf(&u)
	s.Extra["tokens_inherited"] = tok
	if s.CostUSD != nil {
		if est, priced := estimate(st.prices, s.Model, tok); priced {
			s.Extra["cost_inherited_usd"] = est
		}
	}
}
