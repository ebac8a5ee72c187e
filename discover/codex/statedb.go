package codex

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	_ "modernc.org/sqlite" // pure-Go SQLite: keeps the binary static

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/internal/sqlitero"
)

// threadRow is one row of state_<N>.sqlite's threads table. Columns change between
// releases, so only those PRAGMA table_info reports are selected; absent ones stay
// zero.
type threadRow struct {
	ID, RolloutPath, Cwd, Model, Provider    string
	Title, Name, FirstUserMessage            string
	TokensUsed                               int64
	HasTokens                                bool
	CreatedMS, UpdatedMS                     int64 // 0 = unknown
	Archived                                 bool
	GitBranch                                string
	Source, Originator, CLIVersion, Approval string
	ParentID                                 string // attached_thread_parent_id / thread_spawn_edges
}

// latestTurn is the newest row of thread_history's thread_turns for a thread.
type latestTurn struct {
	Status    string
	ErrorJSON string
	Ordinal   int64
}

// history is the thread_history projection: per thread its latest turn and the
// rollout byte offset the projection has consumed.
type history struct {
	Turns     map[string]latestTurn
	Projected map[string]int64
}

// newestDB returns the path of the <prefix><N>.sqlite with the highest N in dir.
func newestDB(dir, prefix string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	best, bestN := "", -1
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ".sqlite") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, prefix), ".sqlite"))
		if err != nil || n < bestN {
			continue
		}
		best, bestN = filepath.Join(dir, name), n
	}
	return best
}

type colSpec struct {
	name  string
	isInt bool
	set   func(r *threadRow, s string, n int64, valid bool)
}

var threadCols = []colSpec{
	{"id", false, func(r *threadRow, s string, _ int64, _ bool) { r.ID = s }},
	{"rollout_path", false, func(r *threadRow, s string, _ int64, _ bool) { r.RolloutPath = s }},
	{"cwd", false, func(r *threadRow, s string, _ int64, _ bool) { r.Cwd = s }},
	{"model", false, func(r *threadRow, s string, _ int64, _ bool) { r.Model = s }},
	{"model_provider", false, func(r *threadRow, s string, _ int64, _ bool) { r.Provider = s }},
	{"title", false, func(r *threadRow, s string, _ int64, _ bool) { r.Title = s }},
	{"name", false, func(r *threadRow, s string, _ int64, _ bool) { r.Name = s }},
	{"first_user_message", false, func(r *threadRow, s string, _ int64, _ bool) { r.FirstUserMessage = s }},
	{"tokens_used", true, func(r *threadRow, _ string, n int64, v bool) { r.TokensUsed, r.HasTokens = n, v }},
	{"created_at", true, func(r *threadRow, _ string, n int64, v bool) {
		if v && r.CreatedMS == 0 {
			r.CreatedMS = n * 1000
		}
	}},
	{"updated_at", true, func(r *threadRow, _ string, n int64, v bool) {
		if v && r.UpdatedMS == 0 {
			r.UpdatedMS = n * 1000
		}
	}},
	// The ms columns come after the s columns in this list so they win.
	{"created_at_ms", true, func(r *threadRow, _ string, n int64, v bool) {
		if v {
			r.CreatedMS = n
		}
	}},
	{"updated_at_ms", true, func(r *threadRow, _ string, n int64, v bool) {
		if v {
			r.UpdatedMS = n
		}
	}},
	{"archived", true, func(r *threadRow, _ string, n int64, _ bool) { r.Archived = n != 0 }},
	{"git_branch", false, func(r *threadRow, s string, _ int64, _ bool) { r.GitBranch = s }},
	{"source", false, func(r *threadRow, s string, _ int64, _ bool) { r.Source = s }},
	{"originator", false, func(r *threadRow, s string, _ int64, _ bool) { r.Originator = s }},
	{"cli_version", false, func(r *threadRow, s string, _ int64, _ bool) { r.CLIVersion = s }},
	{"approval_mode", false, func(r *threadRow, s string, _ int64, _ bool) { r.Approval = s }},
	{"attached_thread_parent_id", false, func(r *threadRow, s string, _ int64, _ bool) { r.ParentID = s }},
}

// readThreads reads the threads table, selecting only the columns this schema
// generation has (docs/agents/codex.md pitfall 20).
func readThreads(ctx context.Context, db *sql.DB, q *discover.Query) (map[string]*threadRow, error) {
	cols, err := sqlitero.Columns(ctx, db, "threads")
	if err != nil {
		return nil, err
	}
	if !cols["id"] {
		return nil, fmt.Errorf("no threads table with an id column")
	}
	// Every column costs per row; the second-resolution times only when the ms
	// ones are missing.
	skip := map[string]bool{"created_at": cols["created_at_ms"], "updated_at": cols["updated_at_ms"]}
	var specs []colSpec
	var names []string
	for _, c := range threadCols {
		if cols[c.name] && !skip[c.name] {
			specs = append(specs, c)
			names = append(names, `"`+c.name+`"`)
		}
	}
	where, args := sqlWhere(q, "id")
	rows, err := db.QueryContext(ctx, "SELECT "+strings.Join(names, ", ")+" FROM threads"+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]*threadRow{}
	strs := make([]sql.NullString, len(specs))
	ints := make([]sql.NullInt64, len(specs))
	dest := make([]any, len(specs))
	for i, c := range specs {
		if c.isInt {
			dest[i] = &ints[i]
		} else {
			dest[i] = &strs[i]
		}
	}
	// The same directories, models and versions repeat across thousands of rows,
	// and every value is kept until the listing is printed: one copy of each.
	shared := map[string]string{}
	share := func(p *string) {
		if c, ok := shared[*p]; ok {
			*p = c
		} else if len(shared) < 1<<14 {
			shared[*p] = *p
		}
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		r := &threadRow{}
		for i, c := range specs {
			c.set(r, strs[i].String, ints[i].Int64, ints[i].Valid)
		}
		if r.ID == "" {
			continue
		}
		for _, p := range [...]*string{&r.Cwd, &r.Model, &r.Provider, &r.GitBranch, &r.Source, &r.Originator, &r.CLIVersion, &r.Approval} {
			share(p)
		}
		if r.Title == r.FirstUserMessage {
			r.Title = r.FirstUserMessage
		}
		out[r.ID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Sub-agents: a thread that is some edge's child.
	if ecols, err := sqlitero.Columns(ctx, db, "thread_spawn_edges"); err == nil && ecols["parent_thread_id"] && ecols["child_thread_id"] {
		where, args := sqlWhere(q, "child_thread_id")
		if erows, err := db.QueryContext(ctx, "SELECT parent_thread_id, child_thread_id FROM thread_spawn_edges"+where, args...); err == nil {
			for erows.Next() {
				var p, c sql.NullString
				if erows.Scan(&p, &c) == nil {
					if r := out[c.String]; r != nil && r.ParentID == "" {
						r.ParentID = p.String
					}
				}
			}
			erows.Close()
		}
	}
	return out, nil
}

// readHistory reads the latest turn of every thread and the projection offsets.
func readHistory(ctx context.Context, db *sql.DB, q *discover.Query) (*history, error) {
	tcols, err := sqlitero.Columns(ctx, db, "thread_turns")
	if err != nil {
		return nil, err
	}
	for _, c := range []string{"thread_id", "rollout_ordinal", "status"} {
		if !tcols[c] {
			return nil, fmt.Errorf("thread_turns has no %s column", c)
		}
	}
	errCol := "NULL"
	if tcols["error_json"] {
		errCol = "error_json"
	}
	h := &history{Turns: map[string]latestTurn{}, Projected: map[string]int64{}}
	where, args := sqlWhere(q, "thread_id")
	rows, err := db.QueryContext(ctx, "SELECT thread_id, rollout_ordinal, status, "+errCol+" FROM thread_turns"+where, args...)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, status, ej sql.NullString
		var ord sql.NullInt64
		if err := rows.Scan(&id, &ord, &status, &ej); err != nil {
			rows.Close()
			return nil, err
		}
		if cur, ok := h.Turns[id.String]; ok && cur.Ordinal > ord.Int64 {
			continue
		}
		h.Turns[id.String] = latestTurn{Status: status.String, ErrorJSON: ej.String, Ordinal: ord.Int64}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	pcols, err := sqlitero.Columns(ctx, db, "thread_history_projection_state")
	if err == nil && pcols["thread_id"] && pcols["next_rollout_byte_offset"] {
		prows, err := db.QueryContext(ctx, "SELECT thread_id, next_rollout_byte_offset FROM thread_history_projection_state"+where, args...)
		if err == nil {
			for prows.Next() {
				var id sql.NullString
				var off sql.NullInt64
				if prows.Scan(&id, &off) == nil && off.Valid {
					h.Projected[id.String] = off.Int64
				}
			}
			prows.Close()
		}
	}
	return h, nil
}

// sqliteHome is where Codex keeps its databases: $CODEX_SQLITE_HOME, else the
// top-level sqlite_home key of config.toml, else CODEX_HOME.
func sqliteHome(env func(string) string, codexHome string) string {
	if d := env("CODEX_SQLITE_HOME"); d != "" {
		return d
	}
	if d := configSQLiteHome(filepath.Join(codexHome, "config.toml")); d != "" {
		if !filepath.IsAbs(d) {
			d = filepath.Join(codexHome, d)
		}
		return d
	}
	return codexHome
}

// configSQLiteHome reads the top-level `sqlite_home = "…"` of config.toml. Only
// that key is needed, so this is a line reader, not a TOML parser: top-level keys
// end at the first [table] header.
func configSQLiteHome(path string) string {
	b, err := agentfs.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			break
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "sqlite_home" {
			continue
		}
		v = strings.TrimSpace(v)
		if i := strings.Index(v, " #"); i >= 0 && (strings.HasPrefix(v, "'") || strings.Count(v[:i], `"`)%2 == 0) {
			v = strings.TrimSpace(v[:i])
		}
		if s, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
			return s
		}
		if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			return v[1 : len(v)-1]
		}
		return v
	}
	return ""
}

// sortedIDs returns map keys in order (deterministic warnings and tests).
func sortedIDs[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sqlWhere is q.SQLWhere with the prefix also as a range of col (col >= prefix
// AND col < the prefix's successor): SQLite then reads the few index entries
// in that range instead of every row, so a lookup among tens of thousands of
// threads costs what one thread costs. The byte-for-byte prefix test stays:
// the range only narrows.
func sqlWhere(q *discover.Query, col string) (string, []any) {
	if q == nil || q.Prefix == "" {
		return q.SQLWhere(col)
	}
	rng, args := col+" >= ?", []any{q.Prefix}
	if hi, ok := successor(q.Prefix); ok {
		rng += " AND " + col + " < ?"
		args = append(args, hi)
	}
	cond := "(" + rng + " AND substr(CAST(" + col + " AS BLOB), 1, ?) = CAST(? AS BLOB))"
	args = append(args, len(q.Prefix), q.Prefix)
	if len(q.IDs) > 0 {
		cond += " OR " + col + " IN (?" + strings.Repeat(", ?", len(q.IDs)-1) + ")"
		for _, id := range q.IDs {
			args = append(args, id)
		}
	}
	return " WHERE " + cond, args
}

// successor is the least string greater than every string starting with p
// (false: none, p is all 0xff bytes).
func successor(p string) (string, bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}
