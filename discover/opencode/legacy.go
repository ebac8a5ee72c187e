package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
)

// The legacy store (OpenCode ≤ 1.1.x, docs/agents/opencode.md §2.2): one JSON file per object
// under <data>/storage. 1.2+ imports it once, sometimes partially, so sessions may
// live only here. File names sort like ids (ascending by creation), so a session's
// first and last messages are the ends of a sorted listing. Tokens and cost need
// every message file: a session is read whole once into the parse index
// (legacyindex.go), and afterwards checked by the stamps of its session file and
// message directory.

// legacySession is storage/session/<projectID>/<ses>.json.
type legacySession struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectID"`
	Directory string `json:"directory"`
	ParentID  string `json:"parentID"`
	Title     string `json:"title"`
	Version   string `json:"version"`
	Slug      string `json:"slug"`
	Time      struct {
		Created  int64 `json:"created"`
		Updated  int64 `json:"updated"`
		Archived int64 `json:"archived"`
	} `json:"time"`
}

// budgetOf is discover.BudgetOf (tests run out of time on purpose).
var budgetOf = discover.BudgetOf

// scanLimit bounds how far a listing looks for the first prompt past message
// files that do not parse or are not the user's.
const scanLimit = 20

// isSessionID reports whether a file name's stem can be a session id:
// "ses_" and 26 characters (docs/agents/opencode.md, "Ids"). Other names are no
// session OpenCode wrote, and every listing and lookup skips them alike.
func isSessionID(stem string) bool {
	return len(stem) == len("ses_")+26 && strings.HasPrefix(stem, "ses_")
}

// exactIDs returns the session ids q can name when it names only complete ids
// (a prefix as long as an id matches that id alone): a lookup then stats their
// files instead of listing every session name. exact is false for a listing or
// a shorter prefix.
func exactIDs(q *discover.Query) (ids []string, exact bool) {
	if q == nil || (q.Prefix != "" && len(q.Prefix) < len("ses_")+26) {
		return nil, false
	}
	seen := map[string]bool{}
	for _, id := range append([]string{q.Prefix}, q.IDs...) {
		if isSessionID(id) && !seen[id] && !strings.ContainsAny(id, `/\`) {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, true
}

// legacyCand is one session file to read: its project directory (open, for
// stat calls relative to it) and its name.
type legacyCand struct {
	dir  *index.Dir
	ld   ldir // the same directory, to read the file relative to it
	path string
	name string
}

// listLegacy reads the sessions of the legacy tree that q names (nil: every
// one). A session file is named by its id (<ses>.json), so a lookup picks its
// files from the directory listings and opens only those: never another
// session's file, message or part tree. A file whose id is not its name is not
// a session OpenCode wrote and is skipped by every listing alike, as are files
// that do not fit the shapes (0.x formats, partial writes).
//
// A session whose index entry still holds (legacyEntry) is not read at all;
// any other is read whole, once, and indexed.
//
// A cold index can hold a listing past its timeout: past the first half of the
// time left (discover.Budget) sessions are summarised from the ends of their
// message listings instead, every field but the token totals (which need every
// message file) as a full read shows it, and not indexed; past three quarters
// the sessions not reached are left out, except those must names (nil:
// none), which are read first. warnf names both.
func listLegacy(ctx context.Context, storage string, ix *index.Index[*legacyEntry], q *discover.Query, warnf func(string, ...any), must mustRead) ([]record, error) {
	projects, err := os.ReadDir(filepath.Join(storage, "session"))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	// Names first (one listing per project), then every session on several
	// cores. Only the names that are sessions (or that q matches) become strings.
	var cands []legacyCand
	var dirs []*index.Dir
	var lds []ldir
	defer func() {
		for _, d := range dirs {
			d.Close()
		}
		for _, d := range lds {
			d.close()
		}
	}()
	for _, pd := range projects {
		if !pd.IsDir() {
			continue
		}
		pdir := filepath.Join(storage, "session", pd.Name())
		n0 := len(cands)
		if ids, exact := exactIDs(q); exact {
			// Complete ids name their files: one stat per id, not a listing.
			for _, id := range ids {
				name := id + ".json"
				if _, regular, err := index.StatPath(filepath.Join(pdir, name)); err == nil && regular {
					cands = append(cands, legacyCand{path: filepath.Join(pdir, name), name: name})
				}
			}
		} else {
			_ = index.EachName(pdir, func(b []byte, kind index.EntryKind) {
				name := unsafe.String(unsafe.SliceData(b), len(b)) // a view, used only here
				// A folder is no session file (a cold listing, which stats nothing
				// before reading, would otherwise count it among those it had no
				// time for).
				if stem, ok := strings.CutSuffix(name, ".json"); ok && kind != index.KindDir && isSessionID(stem) && (q == nil || q.Match(stem)) {
					name = string(b)
					cands = append(cands, legacyCand{path: filepath.Join(pdir, name), name: name})
				}
			})
		}
		if len(cands) == n0 {
			continue // a lookup opens only the directories holding what it names
		}
		d, err := index.OpenDir(pdir)
		if err != nil {
			cands = cands[:n0]
			continue
		}
		dirs = append(dirs, d)
		ld := rootDir(pdir)
		lds = append(lds, ld)
		for i := n0; i < len(cands); i++ {
			cands[i].dir, cands[i].ld = d, ld
		}
		added := cands[n0:]
		sort.Slice(added, func(i, j int) bool { return added[i].name < added[j].name })
	}
	var msgRoot *index.Dir
	if d, err := index.OpenDir(filepath.Join(storage, "message")); err == nil {
		msgRoot = d
		dirs = append(dirs, d)
	}
	var mu sync.Mutex
	worktrees := map[string]string{}
	worktree := func(project string) string {
		mu.Lock()
		wt, ok := worktrees[project]
		mu.Unlock()
		if ok {
			return wt
		}
		var p struct {
			Worktree string `json:"worktree"`
		}
		readJSON(filepath.Join(storage, "project", project+".json"), &p)
		mu.Lock()
		worktrees[project] = p.Worktree
		mu.Unlock()
		return p.Worktree
	}
	// First every session that has an entry checked against it (two stat
	// calls each, spread evenly over the cores), then the sessions that changed
	// or have none read whole (uneven work, handed out one at a time), their
	// stamps taken as they are read (legacyMessages).
	recs := make([]record, len(cands))
	ok := make([]bool, len(cands))
	stale := make([]bool, len(cands))
	if !discover.Spread(ctx, len(cands), func(i int) {
		c := cands[i]
		e, have := ix.Get(c.path)
		if !have || e.Payload == nil {
			stale[i] = true // read whole: its stamps are taken as it is read
			return
		}
		stamp, regular, err := c.dir.Stat(c.name)
		if err != nil || !regular {
			return
		}
		var msgs index.Stamp
		if msgRoot != nil {
			msgs, _, _ = msgRoot.Stat(c.name[:len(c.name)-len(".json")]) // zero when the session has no messages
		}
		if e.Plan(stamp) == index.Fresh && e.Payload.Msgs == msgs && unchanged(storage, e.Payload.Watch) {
			recs[i], ok[i] = e.Payload.Rec, true
			return
		}
		stale[i] = true
	}) {
		return nil, ctx.Err()
	}
	roots := lroots{storage: storage, msg: rootDir(filepath.Join(storage, "message")), part: rootDir(filepath.Join(storage, "part"))}
	defer roots.msg.close()
	defer roots.part.close()
	var todo []int
	for i, s := range stale {
		if s {
			todo = append(todo, i)
		}
	}
	// The sessions a live process may serve are read first, and never left
	// out when the budget gives up (legacyMustRead).
	var first func(int) bool
	if must != nil {
		first = func(i int) bool {
			c := cands[i]
			st, _, _ := c.dir.Stat(c.name)
			return must(strings.TrimSuffix(c.name, ".json"), time.Unix(0, st.MtimeNs))
		}
	}
	kept := discover.MustFirst(todo, first)
	now := time.Now()
	budget := budgetOf(ctx)
	var late sync.Mutex
	var summarised, skipped []string
	if !discover.ParallelWith(ctx, len(todo), func(k int, r *lreader) {
		i := todo[k]
		c := cands[i]
		id := strings.TrimSuffix(c.name, ".json")
		if budget.GivenUp() && !kept[k] {
			late.Lock()
			skipped = append(skipped, id)
			late.Unlock()
			return
		}
		full := !budget.Over()
		ent, stamp, valid := readLegacySession(r, roots, c.ld, c.name, id, full)
		if !valid {
			return
		}
		recs[i], ok[i] = ent.Rec, true
		if !full {
			late.Lock()
			summarised = append(summarised, id)
			late.Unlock()
			return
		}
		msgs := ent.Msgs
		partial := racy(stamp, now) || racy(msgs, now) || racy(index.Stamp{MtimeNs: ent.newest}, now)
		for _, w := range ent.Watch {
			partial = partial || racy(w.Stamp, now)
		}
		ix.Put(c.path, index.Entry[*legacyEntry]{Stamp: stamp, Offset: stamp.Size, Partial: partial, Payload: ent})
	}) {
		return nil, ctx.Err()
	}
	if w := discover.NameIncomplete(summarised, "OpenCode sessions of the legacy storage/ tree"); w != "" {
		warnf("%s", w)
	}
	if w := discover.NameLeftOut(skipped, "OpenCode sessions of the legacy storage/ tree"); w != "" {
		warnf("%s", w)
	}
	for i := range recs {
		if ok[i] {
			r := &recs[i]
			r.Path, r.Legacy = cands[i].path, true
			r.Worktree = worktree(r.ProjectID)
		}
	}
	out := make([]record, 0, len(cands))
	for i := range recs {
		if ok[i] {
			out = append(out, recs[i])
		}
	}
	return out, nil
}

// unchanged reports whether every watched file still has its stamp.
func unchanged(storage string, ws []watched) bool {
	for _, w := range ws {
		if stampOf(filepath.Join(storage, w.Rel)) != w.Stamp {
			return false
		}
	}
	return true
}

// stampOf is the stamp of path, zero when it is missing.
func stampOf(path string) index.Stamp {
	s, _, err := index.StatPath(path)
	if err != nil {
		return index.Stamp{}
	}
	return s
}

// lroots are the legacy tree and its message and part folders, open for a
// listing: a session's folders are opened relative to them.
type lroots struct {
	storage   string
	msg, part ldir
}

// subDir opens the folder name of root, and returns the stamp it has before it
// is listed: that of what a stat finds there when it is no folder (zero:
// nothing).
func subDir(root ldir, name string) (ldir, index.Stamp, bool) {
	d, err := openDirAt(root, name)
	if err != nil {
		return d, stampOf(filepath.Join(root.path(), name)), false
	}
	return d, d.stamp(), true
}

// readLegacySession reads a session file (name in dir) and its message files into an index
// entry, with r's buffers, and returns the session file's stamp. valid is
// false for a file that is not a session OpenCode wrote: unparsable, its id
// not its name, or missing the fields every session has.
//
// full false summarises the session from the ends of its message listing:
// every field a full read fills but the token and cost totals.
func readLegacySession(r *lreader, roots lroots, dir ldir, name, id string, full bool) (ent *legacyEntry, stamp index.Stamp, valid bool) {
	var ls legacySession
	b, fid, err := r.readName(dir, name)
	if err != nil || json.Unmarshal(b, &ls) != nil || ls.ID != id || ls.Time.Created == 0 || ls.Directory == "" || ls.ProjectID == "" {
		return nil, index.Stamp{}, false
	}
	ent = &legacyEntry{Rec: record{ID: ls.ID, Dir: ls.Directory, Title: ls.Title, Version: ls.Version, ParentID: ls.ParentID,
		ProjectID: ls.ProjectID, Slug: ls.Slug, Created: ls.Time.Created, Updated: ls.Time.Updated,
		Archived: ls.Time.Archived}}
	if ent.Rec.Updated == 0 {
		ent.Rec.Updated = ent.Rec.Created
	}
	if full {
		legacyMessages(r, roots, ent)
	} else {
		legacyEnds(r, roots, &ent.Rec)
	}
	return ent, index.Stamp(fid), true
}

// legacyMessages reads every message file of the session once, in name (=
// creation) order, keeping no more than one at a time: the token and cost
// totals, the latest message (the turn state), the latest prompt's time, the
// model, and the first prompt from the first user message's parts. It lists in
// ent.Watch the files OpenCode may still rewrite in place (legacyEntry).
func legacyMessages(r *lreader, roots lroots, ent *legacyEntry) {
	rec := &ent.Rec
	rel := filepath.Join("message", rec.ID)
	d, msgs, ok := subDir(roots.msg, rec.ID)
	ent.Msgs = msgs // zero when the session has no messages
	if !ok {
		return
	}
	defer d.close()
	n := r.list(d)
	// created is each parsed file's time.created by its index in the listing:
	// an assistant's parentID names its prompt by file stem.
	created := make([]int64, n)
	parsed := make([]bool, n)
	var last msgData
	haveLast := false
	firstUser := ""
	for i := range n {
		b, id, err := r.read(d, i)
		if err != nil {
			continue // vanished since the listing: the directory's stamp changed
		}
		ent.newest = max(ent.newest, id.MtimeNs)
		m := &r.msg
		if !decodeMsg(b, m, r.intern) {
			ent.Watch = append(ent.Watch, watched{Rel: filepath.Join(rel, string(r.name(i))), Stamp: index.Stamp(id)})
			continue
		}
		stem := r.name(i)[:len(r.name(i))-len(".json")]
		if m.ID == "" {
			m.ID = string(stem)
		}
		created[i], parsed[i] = m.Time.Created, true
		if m.Role == "assistant" && m.Time.Completed == 0 {
			ent.Watch = append(ent.Watch, watched{Rel: filepath.Join(rel, string(r.name(i))), Stamp: index.Stamp(id)})
		}
		addUsage(rec, m)
		if m.Role == "user" || m.Role == "assistant" {
			last, haveLast = *m, true
		}
		if firstUser == "" && i < scanLimit && m.Role == "user" {
			firstUser = m.ID
		}
	}
	if haveLast {
		rec.setLast(&last, func(parent string) (int64, bool) {
			for i := range n {
				if parsed[i] && string(r.name(i)) == parent {
					return created[i], true
				}
			}
			return 0, false
		})
	}
	if firstUser == "" {
		return
	}
	if pstamp, found := firstPrompt(r, roots, firstUser, rec); !found {
		// No prompt yet: its part may still be written.
		ent.Watch = append(ent.Watch, watched{Rel: filepath.Join("part", firstUser), Stamp: pstamp})
	}
}

// setLast records m, the session's last user or assistant message: its model,
// and LastUserAt, m's own time for a prompt, else that of the prompt it
// answers, when its file (parent, "<id>.json") is one of the listing's and
// parses (createdOf: false when not).
func (rec *record) setLast(m *msgData, createdOf func(parent string) (int64, bool)) {
	rec.Last = m.last()
	rec.Model = modelRef{Provider: rec.Last.Provider, ID: rec.Last.ModelID}
	switch {
	case m.Role == "user":
		rec.LastUserAt = m.Time.Created
	case m.ParentID != "":
		if t, ok := createdOf(m.ParentID + ".json"); ok {
			rec.LastUserAt = t
		}
	}
}

// firstPrompt sets rec.Prompt from the first text part of message msg that
// OpenCode did not inject, and returns the stamp its part directory had before
// it was listed (zero: none).
func firstPrompt(r *lreader, roots lroots, msg string, rec *record) (index.Stamp, bool) {
	d, pstamp, ok := subDir(roots.part, msg)
	if !ok {
		return pstamp, false
	}
	defer d.close()
	for i, n := 0, r.list(d); i < n; i++ {
		var p partData
		if b, _, err := r.read(d, i); err == nil && json.Unmarshal(b, &p) == nil && p.Type == "text" && !p.Synthetic {
			t := p.Text
			if len([]rune(t)) > promptMax {
				t = string([]rune(t)[:promptMax])
			}
			rec.Prompt = &t
			return pstamp, true
		}
	}
	return pstamp, false
}

// legacyEnds is legacyMessages without the totals, for a listing short of
// time: it reads the latest message that parses (from the end of the sorted
// listing), its prompt's time, and the first prompt (from the start). Only a
// session ending in more than scanLimit files that do not parse differs. It
// reads as legacyMessages does (r's buffers, files opened relative to their
// folder, the same decoder), a few files instead of every one: a summary must
// cost a fraction of a full read, or a listing short of time runs out of it
// before every session is summarised.
func legacyEnds(r *lreader, roots lroots, rec *record) {
	d, _, ok := subDir(roots.msg, rec.ID)
	if !ok {
		return
	}
	defer d.close()
	n := r.list(d)
	for i, k := 0, n-1; k >= 0 && i < scanLimit; i, k = i+1, k-1 {
		b, _, err := r.read(d, k)
		m := &r.msg
		if err != nil || !decodeMsg(b, m, r.intern) || (m.Role != "user" && m.Role != "assistant") {
			continue
		}
		if m.ID == "" {
			name := r.name(k)
			m.ID = string(name[:len(name)-len(".json")])
		}
		rec.setLast(m, func(parent string) (int64, bool) {
			for j := range n {
				if string(r.name(j)) != parent {
					continue
				}
				var u msgData
				if b, _, err := r.read(d, j); err == nil && decodeMsg(b, &u, r.intern) {
					return u.Time.Created, true
				}
				break
			}
			return 0, false
		})
		break
	}
	for i := 0; i < n && i < scanLimit; i++ {
		b, _, err := r.read(d, i)
		m := &r.msg
		if err != nil || !decodeMsg(b, m, r.intern) || m.Role != "user" {
			continue
		}
		id := m.ID
		if id == "" {
			name := r.name(i)
			id = string(name[:len(name)-len(".json")])
		}
		firstPrompt(r, roots, id, rec)
		break
	}
}

// jsonNames lists dir's *.json names that are not directories, sorted (ids
// sort by creation).
func jsonNames(dir string) []string {
	var out []string
	_ = index.EachName(dir, func(b []byte, kind index.EntryKind) {
		if kind != index.KindDir && bytes.HasSuffix(b, []byte(".json")) {
			out = append(out, string(b))
		}
	})
	sort.Strings(out)
	return out
}

func readJSON(path string, v any) bool {
	b, _, err := agentfs.ReadFileID(path)
	return err == nil && json.Unmarshal(b, v) == nil
}

// legacyStorage is where a legacy session file's tree starts: the file is
// <storage>/session/<projectID>/<ses>.json.
func legacyStorage(sessionFile string) string {
	return filepath.Dir(filepath.Dir(filepath.Dir(sessionFile)))
}
