package opencode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/agentfs"
	"github.com/agentctl/agentctl/discover/index"
)

// The legacy store (OpenCode ≤ 1.1.x, docs/agents/opencode.md §2.2): one JSON file per object
// under <data>/storage. 1.2+ imports it once, sometimes partially, so sessions may
// live only here. File names sort like ids (ascending by creation), so a session's
// first and last messages are the ends of a sorted listing: list reads those for
// the turn state and prompt. Tokens and cost need every message file: each is
// read once into the parse index (legacytokens.go) and afterwards only stat'ed.

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

// scanLimit bounds how far list walks from either end of a message listing past
// files that do not parse.
const scanLimit = 20

// listLegacy reads the sessions of the legacy tree that q names (nil: every
// one). A session file is named by its id (<ses>.json), so a lookup picks its
// files from the directory listings and opens only those: never another
// session's file, message or part tree. A file whose id is not its name is not
// a session OpenCode wrote and is skipped by every listing alike, as are files
// that do not fit the shapes (0.x formats, partial writes).
func listLegacy(ctx context.Context, storage string, ix *index.Index[*msgUsage], q *discover.Query) ([]record, error) {
	projects, err := os.ReadDir(filepath.Join(storage, "session"))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	// Names first (one listing per project), then every session read on
	// several cores: a session's message files are most of a cold listing's work.
	var paths []string
	for _, pd := range projects {
		if !pd.IsDir() {
			continue
		}
		pdir := filepath.Join(storage, "session", pd.Name())
		var names []string
		if q != nil {
			// A lookup: only the names q matches become strings (index.EachName).
			_ = index.EachName(pdir, func(b []byte, _ index.EntryKind) {
				name := unsafe.String(unsafe.SliceData(b), len(b)) // a view, used only here
				if stem, ok := strings.CutSuffix(name, ".json"); ok && strings.HasPrefix(stem, "ses_") && q.Match(stem) {
					names = append(names, string(b))
				}
			})
			sort.Strings(names)
		} else {
			files, err := os.ReadDir(pdir)
			if err != nil {
				continue
			}
			for _, f := range files {
				if stem, ok := strings.CutSuffix(f.Name(), ".json"); ok && strings.HasPrefix(stem, "ses_") {
					names = append(names, f.Name())
				}
			}
		}
		for _, name := range names {
			paths = append(paths, filepath.Join(pdir, name))
		}
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
	recs := make([]record, len(paths))
	ok := make([]bool, len(paths))
	if !discover.Parallel(ctx, len(paths), func(i int) {
		path := paths[i]
		stem := strings.TrimSuffix(filepath.Base(path), ".json")
		var ls legacySession
		if !readJSON(path, &ls) || ls.ID != stem || ls.Time.Created == 0 ||
			ls.Directory == "" || ls.ProjectID == "" {
			return
		}
		r := record{ID: ls.ID, Dir: ls.Directory, Title: ls.Title, Version: ls.Version, ParentID: ls.ParentID,
			ProjectID: ls.ProjectID, Slug: ls.Slug, Created: ls.Time.Created, Updated: ls.Time.Updated,
			Archived: ls.Time.Archived, Path: path, Legacy: true}
		if r.Updated == 0 {
			r.Updated = r.Created
		}
		r.Worktree = worktree(ls.ProjectID)
		legacyMessages(storage, &r, ix)
		recs[i], ok[i] = r, true
	}) {
		return nil, ctx.Err()
	}
	out := make([]record, 0, len(paths))
	for i := range recs {
		if ok[i] {
			out = append(out, recs[i])
		}
	}
	return out, nil
}

// legacyMessages fills the latest message, the latest prompt's time, the model and
// the first prompt from the two ends of the session's message listing.
func legacyMessages(storage string, r *record, ix *index.Index[*msgUsage]) {
	dir := filepath.Join(storage, "message", r.ID)
	names := jsonNames(dir)
	legacyUsage(ix, dir, names, r)
	for i, n := 0, len(names)-1; n >= 0 && i < scanLimit; i, n = i+1, n-1 {
		var m msgData
		if !readJSON(filepath.Join(dir, names[n]), &m) || (m.Role != "user" && m.Role != "assistant") {
			continue
		}
		if m.ID == "" {
			m.ID = strings.TrimSuffix(names[n], ".json")
		}
		r.Last = m.last()
		r.Model = modelRef{Provider: r.Last.Provider, ID: r.Last.ModelID}
		switch {
		case m.Role == "user":
			r.LastUserAt = m.Time.Created
		case m.ParentID != "":
			var u msgData
			if readJSON(filepath.Join(dir, m.ParentID+".json"), &u) {
				r.LastUserAt = u.Time.Created
			}
		}
		break
	}
	for i := 0; i < len(names) && i < scanLimit; i++ {
		var m msgData
		if !readJSON(filepath.Join(dir, names[i]), &m) || m.Role != "user" {
			continue
		}
		id := m.ID
		if id == "" {
			id = strings.TrimSuffix(names[i], ".json")
		}
		pdir := filepath.Join(storage, "part", id)
		for _, pn := range jsonNames(pdir) {
			var p partData
			if readJSON(filepath.Join(pdir, pn), &p) && p.Type == "text" && !p.Synthetic {
				t := p.Text
				if len([]rune(t)) > promptMax {
					t = string([]rune(t)[:promptMax])
				}
				r.Prompt = &t
				break
			}
		}
		break
	}
}

// jsonNames lists dir's *.json names, sorted (os.ReadDir sorts by name).
func jsonNames(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			out = append(out, e.Name())
		}
	}
	return out
}

func readJSON(path string, v any) bool {
	b, err := agentfs.ReadFile(path)
	return err == nil && json.Unmarshal(b, v) == nil
}

// legacyStorage is where a legacy session file's tree starts: the file is
// <storage>/session/<projectID>/<ses>.json.
func legacyStorage(sessionFile string) string {
	return filepath.Dir(filepath.Dir(filepath.Dir(sessionFile)))
}
