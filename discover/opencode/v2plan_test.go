package opencode

import (
	"strings"
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/sqlitero"
)

// TestV2LookupTouchesOneSession: every statement a lookup of one session runs
// on an OpenCode 2 database reaches rows only through an index keyed by that
// session (SQLite's query plan has SEARCH steps, never a SCAN of a table), so
// the lookup reads that session's rows and no other's however big the store.
// For contrast, the same statements for a whole listing do scan.
func TestV2LookupTouchesOneSession(t *testing.T) {
	_, dbPath := v2Home(t)
	db := writer(t, dbPath)
	ctx := t.Context()
	sc, err := v2Columns(ctx, db)
	if err != nil || sc == nil {
		t.Fatalf("v2Columns: %v %v", sc, err)
	}
	v1c, err := sqlitero.Columns(ctx, db, "session")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := sqlitero.Columns(ctx, db, "project")
	if err != nil {
		t.Fatal(err)
	}
	statements := func(q *discover.Query) map[string][]any {
		out := map[string][]any{}
		for _, g := range []jsonFn{false, true} {
			where, args := sqlWhere(q, "s.id")
			out[listV2SQL(sc, pc, g, where)] = args
			w1, a1 := v1Where(q, true)
			out[listSQL(v1c, pc, g, w1)] = a1
			recs := []record{{ID: v2Done}}
			for _, mt := range []messageTable{v2Messages, v1Messages(g)} {
				m := newMessageSQL(recs, g, q)
				out[sumSQL(mt, m, g.x)] = m.args
				out[slotsSQL(mt, m, []string{"sum(1)"})] = m.args
			}
		}
		return out
	}
	plan := func(stmt string, args []any) []string {
		rows, err := db.Query("EXPLAIN QUERY PLAN "+stmt, args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stmt)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			out = append(out, detail)
		}
		return out
	}
	scans := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if strings.HasPrefix(l, "SCAN ") && !strings.HasPrefix(l, "SCAN CONSTANT ROW") {
				out = append(out, l)
			}
		}
		return out
	}
	for _, q := range []*discover.Query{{IDs: []string{v2Done}}, {Prefix: v2Done[:16]}} {
		for stmt, args := range statements(q) {
			if s := scans(plan(stmt, args)); len(s) > 0 {
				t.Errorf("lookup %+v scans %q:\n%s", *q, s, stmt)
			}
		}
	}
	scanned := 0
	for stmt, args := range statements(nil) {
		if len(scans(plan(stmt, args))) > 0 {
			scanned++
		}
	}
	if scanned == 0 {
		t.Error("no whole-listing statement scans: the plan check proves nothing")
	}
}
