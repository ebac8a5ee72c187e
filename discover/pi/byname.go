package pi

import (
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/agentctl/agentctl/discover"
)

// nameKey is what a file's name says of its session's id (docs/agents/pi.md
// §2, §9): Pi names the file <header timestamp>_<id>.jsonl, pi-rust
// <timestamp>_<first 8 characters of the id>.jsonl. "" when the name says
// nothing (a file renamed by hand): only its header tells.
func nameKey(path string) string {
	base := path // a lookup asks it of bare names: no backward scan for a separator
	if strings.IndexByte(path, '/') >= 0 || strings.IndexByte(path, filepath.Separator) >= 0 {
		base = filepath.Base(path)
	}
	stem := strings.TrimSuffix(base, ".jsonl")
	i := strings.IndexByte(stem, '_')
	if i < 0 {
		return ""
	}
	k := stem[i+1:]
	if (len(k) == 36 && isUUID(k)) || (len(k) == 8 && isHex(k)) {
		return k
	}
	return ""
}

// isUUID reports whether s is a UUID in lower case; isHex whether s is a
// non-empty run of lower-case hex digits.
func isUUID(s string) bool { return discover.IsUUID(s) }
func isHex(s string) bool  { return discover.IsLowerHex(s) }

// keyHolds reports whether a file whose name says key can hold session id.
func keyHolds(key, id string) bool {
	return key == "" || strings.HasPrefix(id, key)
}

// nameKeyOf is nameKey of a bare file name, the key of Pi's kept listings
// (discover/dirnames).
func nameKeyOf(name []byte) []byte {
	k := nameKey(unsafe.String(unsafe.SliceData(name), len(name))) // a view, used only here
	if k == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(k), len(k)) // a part of name
}

// keyPrefixes are prefixes of every key keyMayMatch accepts for q (keys are
// 8 or 36 characters): a key that starts with the prefix or that the prefix
// starts with starts with its first 8 characters, and so does a key an id
// starts with.
func keyPrefixes(q *discover.Query) []string {
	var out []string
	first8 := func(s string) string {
		if len(s) > 8 {
			return s[:8]
		}
		return s
	}
	if q.Prefix != "" {
		out = append(out, first8(q.Prefix))
	}
	for _, id := range q.IDs {
		out = append(out, first8(id))
	}
	return out
}

// keyMayMatch reports whether a file whose name says key can hold a session q
// names.
func keyMayMatch(key string, q *discover.Query) bool {
	if key == "" {
		return true
	}
	if q.Prefix != "" && (strings.HasPrefix(key, q.Prefix) || strings.HasPrefix(q.Prefix, key)) {
		return true
	}
	for _, id := range q.IDs {
		if keyHolds(key, id) {
			return true
		}
	}
	return false
}

// byName keeps the files that can hold a session q names: those whose name
// says a matching id (or id prefix), and those whose name says none (read to
// learn their id). A file whose name says another id holds that session or
// none (misnamed), so a lookup opens O(1) files whatever the history's size.
func byName(paths []string, q *discover.Query) []string {
	out := paths[:0]
	for _, p := range paths {
		if keyMayMatch(nameKey(p), q) {
			out = append(out, p)
		}
	}
	return out
}

// misnamed drops the files whose name says one session id and whose header
// another: Pi never writes such a file (a copy saved under another session's
// name), and listing it under its header id would make that session depend on
// a file no lookup by its id would open. Every listing drops them alike, with a
// warning when the listing shows the name's session.
func misnamed(env *discover.Env, files []*file, q *discover.Query) []*file {
	out := files[:0]
	for _, f := range files {
		if key := nameKey(f.Path); !keyHolds(key, f.Sum.Header.ID) {
			if q == nil || keyMayMatch(key, q) {
				env.Warnf("%s holds session %s, not the %s its name says; skipped (rename it to end in _%s.jsonl to list it)", f.Path, f.Sum.Header.ID, key, f.Sum.Header.ID)
			}
			continue
		}
		out = append(out, f)
	}
	return out
}
