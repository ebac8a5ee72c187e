package synth

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/agentctl/agentctl/internal/sqlitero"
)

// WriteOpenCodeLegacy writes the same sessions WriteOpenCodeDB would, as
// OpenCode ≤ 1.1 stored them: the JSON tree under storage (session/<project>/<ses>.json,
// message/<ses>/<msg>.json, part/<msg>/<prt>.json, project/<id>.json;
// docs/agents/opencode.md §2.2). Each session has its real message and part counts
// (a few to a few dozen messages, several parts each), so a listing that walked
// the message or part trees would pay for them. storage must not exist yet.
func WriteOpenCodeLegacy(storage string, sessions int, seed int64) error {
	if _, err := os.Stat(storage); err == nil {
		return fmt.Errorf("%s exists; WriteOpenCodeLegacy writes a new tree only", storage)
	}
	tmp, err := os.MkdirTemp("", "synth-opencode")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dbPath := filepath.Join(tmp, "opencode.db")
	if err := WriteOpenCodeDB(dbPath, sessions, seed); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", sqlitero.DSN(dbPath, true))
	if err != nil {
		return err
	}
	defer db.Close()
	w := newTreeWriter()
	defer w.wait() // on an early return too
	write := w.write
	rows, err := db.Query(`SELECT id, worktree, time_created FROM project`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, wt string
		var created int64
		if err := rows.Scan(&id, &wt, &created); err != nil {
			rows.Close()
			return err
		}
		if err := write(filepath.Join(storage, "project", id+".json"), map[string]any{"id": id, "worktree": wt, "time": map[string]any{"created": created}}); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()

	rows, err = db.Query(`SELECT id, project_id, coalesce(parent_id, ''), slug, directory, title, version,
		time_created, time_updated, coalesce(time_archived, 0) FROM session`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, project, parent, slug, dir, title, version string
		var created, updated, archived int64
		if err := rows.Scan(&id, &project, &parent, &slug, &dir, &title, &version, &created, &updated, &archived); err != nil {
			rows.Close()
			return err
		}
		tm := map[string]any{"created": created, "updated": updated}
		if archived > 0 {
			tm["archived"] = archived
		}
		s := map[string]any{"id": id, "slug": slug, "version": "1.1.12", "projectID": project, "directory": dir, "title": title, "time": tm}
		if parent != "" {
			s["parentID"] = parent
		}
		if err := write(filepath.Join(storage, "session", project, id+".json"), s); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()

	// Messages and parts carry their ids (and their owners') inside, as the tree did.
	for _, t := range []struct{ table, owner, ownerKey, dir string }{
		{"message", "session_id", "sessionID", "message"},
		{"part", "message_id", "messageID", "part"},
	} {
		extra := ""
		if t.table == "part" {
			extra = ", session_id"
		}
		rows, err := db.Query(`SELECT id, ` + t.owner + `, data` + extra + ` FROM ` + t.table)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id, owner, data, sid string
			dest := []any{&id, &owner, &data}
			if extra != "" {
				dest = append(dest, &sid)
			}
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return err
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(data), &v); err != nil {
				rows.Close()
				return err
			}
			v["id"] = id
			v[t.ownerKey] = owner
			if sid != "" {
				v["sessionID"] = sid
			}
			if err := write(filepath.Join(storage, t.dir, owner, id+".json"), v); err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
	}
	return w.wait()
}

// treeWriter writes many small JSON files from several goroutines (the legacy
// tree of 10,000 sessions is over half a million files): the generator's cost is
// then the file system's, not one goroutine's encoding and system calls.
type treeWriter struct {
	jobs chan treeFile
	wg   sync.WaitGroup
	mu   sync.Mutex
	dirs map[string]bool
	err  error
	once sync.Once
}

type treeFile struct {
	path string
	v    any
}

func newTreeWriter() *treeWriter {
	w := &treeWriter{jobs: make(chan treeFile, 1024), dirs: map[string]bool{}}
	for range max(4, 2*runtime.NumCPU()) {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for f := range w.jobs {
				if err := w.writeNow(f); err != nil {
					w.mu.Lock()
					if w.err == nil {
						w.err = err
					}
					w.mu.Unlock()
				}
			}
		}()
	}
	return w
}

func (w *treeWriter) write(path string, v any) error {
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err != nil {
		return err
	}
	w.jobs <- treeFile{path, v}
	return nil
}

func (w *treeWriter) writeNow(f treeFile) error {
	b, err := json.Marshal(f.v)
	if err != nil {
		return err
	}
	dir := filepath.Dir(f.path)
	w.mu.Lock()
	made := w.dirs[dir]
	w.mu.Unlock()
	if !made {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		w.mu.Lock()
		w.dirs[dir] = true
		w.mu.Unlock()
	}
	return os.WriteFile(f.path, b, 0o644)
}

// wait finishes every write and returns the first error.
func (w *treeWriter) wait() error {
	w.once.Do(func() {
		close(w.jobs)
		w.wg.Wait()
	})
	return w.err
}
