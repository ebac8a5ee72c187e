package opencode

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/e2e/synth"
	"github.com/agentctl/agentctl/internal/sqlitero"
)

// schemaOf lists every table, index and column of a database.
func schemaOf(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", sqlitero.DSN(path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT m.type, m.name, coalesce(c.name, ''), coalesce(c.type, ''), coalesce(c."notnull", 0), coalesce(c.pk, 0)
		FROM sqlite_master m LEFT JOIN pragma_table_info(m.name) c WHERE m.name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, name, col, ctype string
		var notnull, pk int
		if err := rows.Scan(&typ, &name, &col, &ctype, &notnull, &pk); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %s %s %d %d", typ, name, col, ctype, notnull, pk))
	}
	sort.Strings(out)
	return out
}

// The generated store for benchmarks has the real 1.18.33 schema, WAL mode and
// no side files, and reads like a real one.
func TestSynthStoreMatchesFixture(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteOpenCodeDB(path, 60, 7); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(schemaOf(t, testdata(t, "home/.local/share/opencode/opencode.db")), schemaOf(t, path)); diff != "" {
		t.Errorf("schema differs from the fixture (-fixture +synth):\n%s", diff)
	}
	if _, err := os.Stat(path + "-wal"); !os.IsNotExist(err) {
		t.Errorf("generated store left a -wal: %v", err)
	}
	got, warns := list(t, newEnv(home, nil, noProcs()))
	if len(got) != 60 || len(warns) > 0 {
		t.Fatalf("%d sessions, warnings %q", len(got), warns)
	}
	statuses := map[string]int{}
	for _, s := range got {
		statuses[s.Status]++
		if s.Prompt == "" || s.Model == "" || s.Tokens == nil || s.StartedAt == nil {
			t.Errorf("%s: incomplete %+v", s.ID, s)
		}
	}
	if statuses["stopped"] == 0 || statuses["failed"] == 0 {
		t.Errorf("statuses %v: want both finished and failed sessions", statuses)
	}
	if err := synth.WriteOpenCodeDB(path, 1, 1); err == nil {
		t.Error("overwrote an existing store")
	}
}
