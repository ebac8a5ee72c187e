package pi

import (
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/discover"
)

// nameID is the session id a file's name carries: Pi and pi-rust name a
// session's file <header timestamp>_<id>.jsonl (docs/agents/pi.md §2). "" when
// the name carries none (a file renamed by hand).
func nameID(path string) string {
	stem := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	i := strings.LastIndexByte(stem, '_')
	if i < 0 || !isUUID(stem[i+1:]) {
		return ""
	}
	return stem[i+1:]
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// byName keeps the files that can hold a session q names: those whose name
// carries a matching id, and those whose name carries none (read to learn
// their id). A file whose name carries another id holds that session or none
// (misnamed), so a lookup opens O(1) files whatever the history's size.
func byName(paths []string, q *discover.Query) []string {
	out := paths[:0]
	for _, p := range paths {
		if id := nameID(p); id == "" || q.Match(id) {
			out = append(out, p)
		}
	}
	return out
}

// misnamed drops the files whose name carries one session id and whose header
// another: Pi never writes such a file (a copy saved under another session's
// name), and listing it under its header id would make that session depend on
// a file no lookup by its id would open. Every listing drops them alike, with a
// warning when the listing shows the name's session.
func misnamed(env *discover.Env, files []*file, q *discover.Query) []*file {
	out := files[:0]
	for _, f := range files {
		if id := nameID(f.Path); id != "" && f.Sum.Header.ID != id {
			if q == nil || q.Match(id) {
				env.Warnf("%s holds session %s, not the %s its name says; skipped (rename it to end in _%s.jsonl to list it)", f.Path, f.Sum.Header.ID, id, f.Sum.Header.ID)
			}
			continue
		}
		out = append(out, f)
	}
	return out
}
