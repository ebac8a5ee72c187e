// Package sqlitero reads the agents' SQLite databases (OpenCode's store, Codex's
// state and history dbs) strictly read-only: no write, no lock taken that a
// writer could wait on, and no -wal/-shm file ever created next to the user's
// database.
package sqlitero

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"time"

	_ "modernc.org/sqlite" // pure-Go SQLite: static, cross-compilable binary
)

// dbState is what a lock-free read depends on: the database file and whether its
// side files exist.
type dbState struct {
	size    int64
	mtime   time.Time
	wal     bool
	walSize int64
	walTime time.Time
	shm     bool
	journal bool
}

func statDB(path string) (dbState, error) {
	st, err := os.Stat(path)
	if err != nil {
		return dbState{}, err
	}
	s := dbState{size: st.Size(), mtime: st.ModTime()}
	if w, err := os.Stat(path + "-wal"); err == nil {
		s.wal, s.walSize, s.walTime = true, w.Size(), w.ModTime()
	}
	_, err = os.Stat(path + "-shm")
	s.shm = err == nil
	_, err = os.Stat(path + "-journal")
	s.journal = err == nil
	return s, nil
}

// immutable reports whether the read can (and must) go without SQLite's locks.
//
// The agents' databases are in WAL mode. SQLite opens a WAL database read-only
// only through its -wal and -shm files and creates them when they are missing
// (and leaves them behind) — next to the user's database, which agentctl must
// never write to. Tested: with mode=ro, a fully checkpointed opencode.db in a
// read-only directory gained opencode.db-wal and opencode.db-shm when read as
// root, and cannot be opened at all by a user who may not create them.
//
// So: when the side files exist (the agent is running, or died without cleaning
// up), open normally with mode=ro: SQLite uses them and creates nothing, and rows
// not yet checkpointed are visible (immutable=1 would hide them: docs/agents/opencode.md
// §2.3, docs/agents/codex.md pitfall 19).
// When there is no -wal file, every committed row is in the main file (SQLite
// deletes the WAL only after a full checkpoint), so immutable=1 reads exactly what
// mode=ro would, without touching the directory; Read re-checks afterwards that
// no writer appeared meanwhile.
func (s dbState) immutable() bool {
	switch {
	case s.wal && s.shm:
		return false
	case s.wal:
		return true // a -wal without its -shm: see walUnreadable
	case s.journal:
		return false // a rollback journal: never OpenCode's, let SQLite decide
	}
	return true
}

// walUnreadable: the -wal has frames but there is no -shm, and reading them would
// create one. Such a pair is left only by a crash or a copy; say so. Unless the
// main file was written after the -wal: the last connection of a writer
// checkpoints everything into the main file, then unlinks the -shm, then the
// -wal, and a writer that exited between the two (a process ending while its
// pool closes) leaves a -wal whose frames are all in the main file already.
func (s dbState) walUnreadable() bool { // main file strictly newer: checkpointed
	return s.wal && !s.shm && s.walSize > 0 && !s.walTime.Before(s.mtime)
}

func (s dbState) same(o dbState) bool {
	return s.size == o.size && s.mtime.Equal(o.mtime) && s.wal == o.wal && s.shm == o.shm && s.journal == o.journal
}

// DSN opens read-only. The page cache is kept small: listing touches each page
// about once (index lookups per session), and SQLite's default of 2 MB per
// connection was a tenth of `list`'s memory.
func DSN(path string, immutable bool) string {
	d := "file:" + url.PathEscape(path) + "?mode=ro&_pragma=busy_timeout(3000)&_pragma=query_only(1)&_pragma=cache_size(-256)"
	if immutable {
		d += "&immutable=1"
	}
	return d
}

// Read runs fn over one read-only connection to the database at path and closes
// it. fn must not keep state across calls: after a lock-free read whose database
// changed underneath it (a writer started), Read runs it again, now through the
// writer's WAL. note is a warning for the user ("" when there is none).
func Read(ctx context.Context, path string, fn func(ctx context.Context, db *sql.DB) error) (note string, err error) {
	for attempt := 0; ; attempt++ {
		before, err := statDB(path)
		if err != nil {
			return "", err
		}
		if before.walUnreadable() && attempt < 2 && settling(path, before) {
			continue // a writer closing: SQLite unlinks the -shm just before the -wal
		}
		imm := before.immutable()
		note = ""
		if before.walUnreadable() {
			note = fmt.Sprintf("%s-wal holds %d bytes but %s-shm is missing (left by a crash or a copy); sessions written since the last checkpoint are not shown, because reading them would create files next to the agent's database", path, before.walSize, path)
		}
		db, err := sql.Open("sqlite", DSN(path, imm))
		if err != nil {
			return note, fmt.Errorf("open %s: %w", path, err)
		}
		db.SetMaxOpenConns(1)
		err = fn(ctx, db)
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
		if !imm || attempt == 2 {
			return note, err
		}
		after, serr := statDB(path)
		if serr == nil && after.same(before) {
			return note, err
		}
	}
}

// settling reports whether a -wal without its -shm changes within a moment: the
// last connection of a writer that closes removes the -shm, then the -wal, and
// a read between the two must not be told of a crash. A pair left by a crash or
// a copy stays as it is, and costs this wait once per read.
func settling(path string, before dbState) bool {
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		if now, err := statDB(path); err != nil || !now.same(before) {
			return true
		}
	}
	return false
}

// Columns returns the column names of table: agents add columns between versions,
// so queries are built from what is there.
func Columns(ctx context.Context, db *sql.DB, table string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		cols[n] = true
	}
	return cols, rows.Err()
}
