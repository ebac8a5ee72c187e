package sqlitero_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/sqlitero"
)

// newWAL makes a WAL-mode database with table t(id) holding ids, checkpointed
// and closed: a main file and no side files, as an agent leaves it on exit.
func newWAL(t *testing.T, ids ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.db")
	w := open(t, "file:"+path+"?_pragma=journal_mode(wal)")
	exec(t, w, "CREATE TABLE t(id TEXT PRIMARY KEY, extra TEXT)")
	for _, id := range ids {
		exec(t, w, "INSERT INTO t(id) VALUES (?)", id)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + side); err == nil {
			t.Fatalf("premise: %s%s left after close", path, side)
		}
	}
	return path
}

// writer is a live agent: a connection that keeps the -wal and -shm open and
// never checkpoints, so its rows are only in the WAL.
func writer(t *testing.T, path string) *sql.DB {
	t.Helper()
	w := open(t, "file:"+path+"?_pragma=journal_mode(wal)&_pragma=wal_autocheckpoint(0)")
	w.SetMaxOpenConns(1)
	t.Cleanup(func() { w.Close() })
	exec(t, w, "SELECT count(*) FROM t") // opens the WAL and creates -shm
	return w
}

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// ids reads every id of t through Read.
func ids(t *testing.T, path string) ([]string, string) {
	t.Helper()
	var out []string
	note, err := sqlitero.Read(context.Background(), path, func(ctx context.Context, db *sql.DB) error {
		out = nil // Read may run fn again
		rows, err := db.QueryContext(ctx, "SELECT id FROM t ORDER BY id")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			out = append(out, id)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return out, note
}

// dirFiles lists the names in dir.
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// readLeavesDirAlone reads the ids at path, wants exactly want with no note, and
// wants the database's directory unchanged by the read.
func readLeavesDirAlone(t *testing.T, path string, want ...string) {
	t.Helper()
	before := dirFiles(t, filepath.Dir(path))
	got, note := ids(t, path)
	if diff := cmp.Diff(want, got); diff != "" || note != "" {
		t.Errorf("ids (-want +got):\n%s\nnote %q", diff, note)
	}
	if diff := cmp.Diff(before, dirFiles(t, filepath.Dir(path))); diff != "" {
		t.Errorf("the database's directory changed (-before +after):\n%s", diff)
	}
}

// A checkpointed database reads whole and nothing appears next to it, even in a
// directory the reader could write to.
func TestReadCreatesNoSideFiles(t *testing.T) {
	path := newWAL(t, "a", "b")
	readLeavesDirAlone(t, path, []string{"a", "b"}...)
}

// Rows a running agent has not checkpointed yet are read through its -wal and
// -shm, and the read leaves the side files as they were.
func TestReadSeesUncheckpointedRows(t *testing.T) {
	path := newWAL(t, "a")
	w := writer(t, path)
	exec(t, w, "INSERT INTO t(id) VALUES ('in-wal')")
	readLeavesDirAlone(t, path, []string{"a", "in-wal"}...)
}

// A -wal with frames but no -shm (a crash, a copy) is not read, since reading it
// would create the -shm; the main file still is, with a note saying why rows
// may be missing.
func TestReadWALWithoutSHM(t *testing.T) {
	path := newWAL(t, "a")
	w := writer(t, path)
	exec(t, w, "INSERT INTO t(id) VALUES ('in-wal')")
	// Copy the pair as a backup would, without the -shm.
	dir := t.TempDir()
	cp := filepath.Join(dir, "agent.db")
	for _, side := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + side)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cp+side, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, note := ids(t, cp)
	if diff := cmp.Diff([]string{"a"}, got); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if !strings.Contains(note, "-shm is missing") {
		t.Errorf("note %q does not say the -shm is missing", note)
	}
	if diff := cmp.Diff([]string{"agent.db", "agent.db-wal"}, dirFiles(t, dir)); diff != "" {
		t.Errorf("files next to the copy (-want +got):\n%s", diff)
	}
}

// A -wal without its -shm whose frames a closing writer already checkpointed
// (the main file is newer than the -wal: the writer exited between unlinking
// the -shm and the -wal) loses nothing: the main file is read, with no note
// of a crash, and nothing is created next to it.
func TestReadCheckpointedWALWithoutSHM(t *testing.T) {
	path := newWAL(t, "a")
	w := writer(t, path)
	exec(t, w, "INSERT INTO t(id) VALUES ('in-wal')")
	dir := t.TempDir()
	cp := filepath.Join(dir, "agent.db")
	for _, side := range []string{"-wal", ""} {
		b, err := os.ReadFile(path + side)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cp+side, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The checkpoint: the row in the main file, written after the -wal.
	cw, err := sql.Open("sqlite", "file:"+cp+"?_pragma=journal_mode(delete)")
	if err != nil {
		t.Fatal(err)
	}
	os.Rename(cp+"-wal", cp+"-wal.keep")
	exec(t, cw, "INSERT INTO t(id) VALUES ('in-wal')")
	cw.Close()
	os.Rename(cp+"-wal.keep", cp+"-wal")
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(cp+"-wal", old, old); err != nil {
		t.Fatal(err)
	}
	got, note := ids(t, cp)
	if diff := cmp.Diff([]string{"a", "in-wal"}, got); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if note != "" {
		t.Errorf("note %q for a -wal the main file is newer than", note)
	}
	if diff := cmp.Diff([]string{"agent.db", "agent.db-wal"}, dirFiles(t, dir)); diff != "" {
		t.Errorf("files next to the copy (-want +got):\n%s", diff)
	}
}

// A missing database is an error the adapter can report, never an empty one
// created in its place.
func TestReadMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	_, err := sqlitero.Read(context.Background(), path, func(context.Context, *sql.DB) error { return nil })
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want not-exist", err)
	}
	if _, serr := os.Stat(path); serr == nil {
		t.Error("Read created the database")
	}
}

// The connection is read-only: a write through it fails and changes nothing.
func TestReadIsReadOnly(t *testing.T) {
	path := newWAL(t, "a")
	_, err := sqlitero.Read(context.Background(), path, func(ctx context.Context, db *sql.DB) error {
		_, err := db.ExecContext(ctx, "INSERT INTO t(id) VALUES ('x')")
		return err
	})
	if err == nil {
		t.Fatal("a write through Read succeeded")
	}
	if got, _ := ids(t, path); !cmp.Equal(got, []string{"a"}) {
		t.Errorf("ids after the refused write: %v", got)
	}
}

func TestColumns(t *testing.T) {
	path := newWAL(t)
	var cols map[string]bool
	if _, err := sqlitero.Read(context.Background(), path, func(ctx context.Context, db *sql.DB) (err error) {
		cols, err = sqlitero.Columns(ctx, db, "t")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]bool{"id": true, "extra": true}, cols); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
}

func TestDSN(t *testing.T) {
	d := sqlitero.DSN("/a b/x.db", false)
	if !strings.HasPrefix(d, "file:%2Fa%20b%2Fx.db?") || !strings.Contains(d, "mode=ro") || !strings.Contains(d, "query_only(1)") || strings.Contains(d, "immutable") {
		t.Errorf("DSN = %q", d)
	}
	if d := sqlitero.DSN("/x.db", true); !strings.HasSuffix(d, "&immutable=1") {
		t.Errorf("immutable DSN = %q", d)
	}
}

// Query.SQLWhere selects exactly the ids Query.Match names: the prefix byte for
// byte ('_' and '%' are not wildcards, case matters), plus the listed ids.
func TestQuerySQLWhereMatchesMatch(t *testing.T) {
	all := []string{"ses_ab", "sesXab", "SES_ab", "ses%x", "ses_", "other", "exact-1", "exact-10"}
	path := newWAL(t, all...)
	for _, q := range []*discover.Query{
		nil,
		{Prefix: "ses_"},
		{Prefix: "ses%"},
		{Prefix: "exact-1"},
		{IDs: []string{"exact-1", "other"}},
		{Prefix: "SES", IDs: []string{"ses_"}},
		{},
	} {
		var want []string
		for _, id := range all {
			if q == nil || q.Match(id) {
				want = append(want, id)
			}
		}
		sort.Strings(want)
		var got []string
		_, err := sqlitero.Read(context.Background(), path, func(ctx context.Context, db *sql.DB) error {
			got = nil
			where, args := q.SQLWhere("id")
			rows, err := db.QueryContext(ctx, "SELECT id FROM t"+where+" ORDER BY id", args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					return err
				}
				got = append(got, id)
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("query %+v (-Match +SQLWhere):\n%s", q, diff)
		}
	}
}
