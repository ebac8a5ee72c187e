package opencode

import (
	"bytes"
	"slices"
)

// lreader reads the legacy tree for one worker of a listing, reusing its
// buffers from file to file: a cold listing reads about fifteen files per
// session, and on a machine where a fresh heap page costs microseconds a
// buffer allocated per file (os.ReadFile) costs more than the read. Files are
// opened relative to their directory's descriptor where the platform allows
// (openat), sparing the kernel the path walk. What it returns is valid until
// its next call.
type lreader struct {
	buf   []byte   // the last file read
	names []byte   // the last listing's names, each followed by a NUL
	spans [][2]int // each name's start and end in names, sorted by name
	dents []byte   // the directory reading buffer
	// strs interns the strings of message files that repeat across messages
	// (roles, models, finish reasons, session ids).
	strs map[string]string
	msg  msgData // the message being read (a local would escape to the heap)
}

// name is the i-th name of the last listing.
func (r *lreader) name(i int) []byte { return r.names[r.spans[i][0]:r.spans[i][1]] }

// addName keeps a name of a listing (a *.json name that is not a directory).
func (r *lreader) addName(b []byte) {
	start := len(r.names)
	r.names = append(append(r.names, b...), 0)
	r.spans = append(r.spans, [2]int{start, start + len(b)})
}

// sortNames sorts the listing by name (ids sort by creation) and returns its length.
func (r *lreader) sortNames() int {
	slices.SortFunc(r.spans, func(a, b [2]int) int {
		return bytes.Compare(r.names[a[0]:a[1]], r.names[b[0]:b[1]])
	})
	return len(r.spans)
}

// intern returns b as a string, the same string for the same bytes. Message
// and session ids (as many as there are messages and sessions) are not kept.
func (r *lreader) intern(b []byte) string {
	if bytes.HasPrefix(b, []byte("msg_")) || bytes.HasPrefix(b, []byte("ses_")) {
		return string(b)
	}
	if s, ok := r.strs[string(b)]; ok {
		return s
	}
	if r.strs == nil {
		r.strs = map[string]string{}
	}
	if len(r.strs) > 4096 { // bounded: a tree of unusual values must not grow it
		clear(r.strs)
	}
	s := string(b)
	r.strs[s] = s
	return s
}
