package opencode

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/sqlitero"
)

// promptMax caps the first prompt carried in a listing (characters). Prompts can be
// megabytes (files pasted in); list shows 60 characters and status 200.
const promptMax = 2000

// record is one session as the listing needs it, from either store.
type record struct {
	ID, Dir, Title, Version, ParentID, ProjectID, Worktree, Agent, Slug string
	Model                                                               modelRef
	Cost                                                                *float64
	Tokens                                                              *tokenClasses
	// Slots spread Tokens over the assistant messages' times (Env.Slots, or
	// legacy storage; reasoning counted as output, as in Session.Tokens).
	Slots            discover.Slots
	Created, Updated int64 // epoch ms
	Archived         int64 // 0: not archived
	// Claimed is when an OpenCode 2 execution claimed the session
	// (session_v2.time_suspended; 0: none): set as its execution starts,
	// cleared as it ends.
	Claimed int64
	Last    lastMessage
	Prompt  *string
	// LastUserAt is the creation time of the latest user message (ms), for
	// matching a process started just before it (docs/agents/opencode.md §4.1 (3)).
	LastUserAt int64
	// Path is the store it came from (the db, or the legacy session file).
	Path   string
	Legacy bool
	// BadUsage counts messages left out of Tokens and Cost: legacy ones
	// (msgUsage.Bad), or summed in SQL for a schema without session totals.
	BadUsage int
}

// negative reports whether a store's session totals cannot be true: the
// store sums them itself, so one damaged message can make them negative. They
// are then left out, never clamped (issue 19).
func (t *tokenClasses) negative() bool {
	return t.Input < 0 || t.Output < 0 || t.Reasoning < 0 || t.CacheRead < 0 || t.CacheWrite < 0
}

type modelRef struct{ Provider, ID, Variant string }

func (m modelRef) String() string {
	switch {
	case m.Provider != "" && m.ID != "":
		return m.Provider + "/" + m.ID
	case m.Provider != "":
		// A bare -m value: OpenCode took it for a provider and kept an empty model id
		// (the session then failed with ProviderModelNotFoundError). Show what the
		// user typed rather than "fake-model/".
		return m.Provider
	}
	return m.ID
}

type tokenClasses struct{ Input, Output, Reasoning, CacheRead, CacheWrite int64 }

// lastMessage is the latest message of a session: what the turn state rests on.
type lastMessage struct {
	ID        string
	Role      string
	Created   int64
	Completed int64 // 0: time.completed absent
	Finish    string
	ErrName   string
	ErrMsg    string
	// Idle is an OpenCode 2 idle marker's outcome (Role "idle"): succeeded,
	// failed or interrupted.
	Idle string
	// Provider/ModelID of the message (assistant) or its model (user).
	Provider, ModelID string
}

// columns returns the column names of a table (empty when the table is missing).

// jsonFn builds json_extract calls. Rows whose data is not JSON must be skipped
// (docs/agents/opencode.md §2.1), but a guard (json_valid) on every call costs a third of the
// listing, so the listing runs unguarded first and, only if SQLite reports
// malformed JSON, again guarded. CASE is evaluated lazily, so a guarded
// json_extract never sees invalid text.
type jsonFn bool

func (guarded jsonFn) x(col, path string) string {
	if guarded {
		return fmt.Sprintf("(CASE WHEN json_valid(%s) THEN json_extract(%s, '%s') END)", col, col, path)
	}
	return fmt.Sprintf("json_extract(%s, '%s')", col, path)
}

func isMalformedJSON(err error) bool {
	return err != nil && strings.Contains(err.Error(), "malformed JSON")
}

// listSQL builds the one listing statement. Everything is aggregated in SQL: the
// session row carries OpenCode's own totals, and per session only the latest
// message, the first user message's first text part and one parent lookup are
// touched, through the (session_id, time_created, id) and (message_id, id)
// indexes. Parts are never scanned.
func listSQL(sc, pc map[string]bool, guarded jsonFn, where string) string {
	jx := guarded.x
	opt := func(c string) string {
		if sc[c] {
			return "s." + c
		}
		return "NULL"
	}
	worktree, join := "NULL", ""
	if pc["worktree"] {
		worktree, join = "p.worktree", "LEFT JOIN project p ON p.id = s.project_id"
	}
	cols := []string{
		"s.id", "s.directory", "s.title", opt("version"), opt("parent_id"), opt("project_id"), worktree,
		opt("agent"), opt("slug"), opt("model"), opt("cost"),
		opt("tokens_input"), opt("tokens_output"), opt("tokens_reasoning"), opt("tokens_cache_read"), opt("tokens_cache_write"),
		"s.time_created", "s.time_updated", opt("time_archived"),
		"lm.id", "lm.time_created",
		jx("lm.data", "$.role"), jx("lm.data", "$.time.completed"), jx("lm.data", "$.finish"),
		jx("lm.data", "$.error.name"), "substr(" + jx("lm.data", "$.error.data.message") + ", 1, 500)",
		"coalesce(" + jx("lm.data", "$.providerID") + ", " + jx("lm.data", "$.model.providerID") + ")",
		"coalesce(" + jx("lm.data", "$.modelID") + ", " + jx("lm.data", "$.model.modelID") + ")",
		// the latest user message: the latest message itself, or the one the latest
		// assistant message answers (its parentID), by primary key
		"(CASE WHEN " + jx("lm.data", "$.role") + " = 'user' THEN lm.time_created ELSE " +
			"(SELECT um.time_created FROM message um WHERE um.id = " + jx("lm.data", "$.parentID") + ") END)",
		"(SELECT substr(" + jx("pt.data", "$.text") + ", 1, " + fmt.Sprint(promptMax) + ") FROM part pt" +
			" WHERE pt.message_id = s.first_user AND " + jx("pt.data", "$.type") + " = 'text'" +
			" AND coalesce(" + jx("pt.data", "$.synthetic") + ", 0) = 0 ORDER BY pt.id LIMIT 1)",
	}
	return "SELECT " + strings.Join(cols, ", ") + `
FROM (SELECT s.*,
        (SELECT m.id FROM message m WHERE m.session_id = s.id
          ORDER BY m.time_created DESC, m.id DESC LIMIT 1) AS last_id,
        (SELECT m.id FROM message m WHERE m.session_id = s.id AND ` + jx("m.data", "$.role") + ` = 'user'
          ORDER BY m.time_created, m.id LIMIT 1) AS first_user
      FROM session s` + where + `) s
LEFT JOIN message lm ON lm.id = s.last_id
` + join
}

// listDB reads every session of one database.
func listDB(ctx context.Context, db *sql.DB, path string, q *discover.Query, slots bool) ([]record, error) {
	v2, err := v2Columns(ctx, db)
	if err != nil {
		return nil, err
	}
	var out []record
	if v2 != nil {
		if out, err = listV2(ctx, db, v2, path, q, slots); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	sc, err := sqlitero.Columns(ctx, db, "session")
	if err != nil {
		return nil, err
	}
	if !sc["id"] || !sc["directory"] || !sc["title"] || !sc["time_created"] || !sc["time_updated"] {
		if v2 != nil {
			return out, nil // an OpenCode 2 database without the 1.x tables
		}
		return nil, fmt.Errorf("%s: no OpenCode session table (is this an opencode.db?)", path)
	}
	v1, err := listV1(ctx, db, sc, path, q, slots, v2 != nil)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return v1, nil
	}
	// A session OpenCode 2 migrated keeps its 1.x copy: the session_v2 row wins.
	have := make(map[string]bool, len(out))
	for _, r := range out {
		have[r.ID] = true
	}
	for _, r := range v1 {
		if !have[r.ID] {
			out = append(out, r)
		}
	}
	return out, nil
}

// sqlWhere is q.SQLWhere, plus, for a prefix lookup, the range of ids that
// start with the prefix (ids compare bytewise), so that SQLite finds them by
// index instead of testing every id: a lookup reads the rows of the sessions
// it names and no others.
func sqlWhere(q *discover.Query, col string) (string, []any) {
	where, args := q.SQLWhere(col)
	if q == nil || q.Prefix == "" || len(q.IDs) > 0 {
		return where, args
	}
	p := q.Prefix
	last := p[len(p)-1]
	if last == 0xff {
		return where, args
	}
	upper := p[:len(p)-1] + string([]byte{last + 1})
	return where + " AND " + col + " >= ? AND " + col + " < ?", append(args, p, upper)
}

// v1Where filters the 1.x sessions to those q names and, with v2, to those
// session_v2 does not have (one primary-key probe per session).
func v1Where(q *discover.Query, v2 bool) (string, []any) {
	where, args := sqlWhere(q, "s.id")
	if !v2 {
		return where, args
	}
	const notV2 = "NOT EXISTS (SELECT 1 FROM session_v2 v WHERE v.id = s.id)"
	if where == "" {
		return " WHERE " + notV2, args
	}
	return " WHERE (" + strings.TrimPrefix(where, " WHERE ") + ") AND " + notV2, args
}

// listV1 reads the 1.x session table; with v2, only the sessions session_v2
// does not have (the copies OpenCode 2's migration left are not read).
func listV1(ctx context.Context, db *sql.DB, sc map[string]bool, path string, q *discover.Query, slots, v2 bool) ([]record, error) {
	if mc, err := sqlitero.Columns(ctx, db, "message"); err != nil || !mc["data"] || !mc["session_id"] {
		return nil, fmt.Errorf("%s: no OpenCode message table", path)
	}
	pc, err := sqlitero.Columns(ctx, db, "project")
	if err != nil {
		return nil, err
	}
	where, args := v1Where(q, v2)
	out, err := listRows(ctx, db, listSQL(sc, pc, false, where), path, args)
	if isMalformedJSON(err) {
		out, err = listRows(ctx, db, listSQL(sc, pc, true, where), path, args)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !sc["tokens_input"] || !sc["cost"] {
		// An older schema without the stored totals: sum the assistant messages.
		err := sumFromMessages(ctx, db, out, false, q, v1Messages(false))
		if isMalformedJSON(err) {
			err = sumFromMessages(ctx, db, out, true, q, v1Messages(true))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if slots {
		err := slotsFromMessages(ctx, db, out, false, q, v1Messages(false))
		if isMalformedJSON(err) {
			err = slotsFromMessages(ctx, db, out, true, q, v1Messages(true))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}

// tokenPaths are an assistant message's token counts in its data JSON.
var tokenPaths = []string{"$.tokens.input", "$.tokens.output", "$.tokens.reasoning", "$.tokens.cache.read", "$.tokens.cache.write"}

// messageSQL is what the queries over the message table share: the records by
// session id, the query's session filter as an AND clause and its arguments,
// and ok, the condition that a message's tokens can be true (discover.UsageOK).
type messageSQL struct {
	idx    map[string]int
	filter string
	args   []any
	ok     string
}

// messageTable names where a store keeps its messages' usage: the table and the
// condition that picks assistant messages.
type messageTable struct{ table, assistant string }

// v1Messages is OpenCode 1.x's message table, the role inside data.
func v1Messages(guarded jsonFn) messageTable {
	return messageTable{table: "message", assistant: guarded.x("data", "$.role") + " = 'assistant'"}
}

func newMessageSQL(recs []record, guarded jsonFn, q *discover.Query) messageSQL {
	m := messageSQL{idx: make(map[string]int, len(recs))}
	for i, r := range recs {
		m.idx[r.ID] = i
	}
	m.filter, m.args = sqlWhere(q, "session_id")
	if m.filter != "" {
		m.filter = " AND (" + strings.TrimPrefix(m.filter, " WHERE ") + ")"
	}
	var okParts []string
	for _, p := range tokenPaths {
		okParts = append(okParts, fmt.Sprintf("coalesce(%s, 0) BETWEEN 0 AND %d", guarded.x("data", p), discover.MaxTokensPerRequest))
	}
	m.ok = "(" + strings.Join(okParts, " AND ") + ")"
	return m
}

// slotsSQL sums the assistant messages' token classes (sums) per session and slot.
func slotsSQL(mt messageTable, m messageSQL, sums []string) string {
	return `SELECT session_id, (time_created / ` + fmt.Sprint(discover.SlotSeconds*1000) + `) * ` + fmt.Sprint(discover.SlotSeconds) + ` AS slot,
	    ` + strings.Join(sums, ", ") + `
	  FROM ` + mt.table + ` WHERE ` + mt.assistant + ` AND time_created > 0 AND ` + m.ok + m.filter + `
	  GROUP BY session_id, slot`
}

// slotsFromMessages fills each record's Slots: its assistant messages' tokens
// summed per 15-minute slot of the message's time_created, in SQL. A message
// whose tokens cannot be true is left out, as sumFromMessages leaves it out.
func slotsFromMessages(ctx context.Context, db *sql.DB, recs []record, guarded jsonFn, q *discover.Query, mt messageTable) error {
	jx := guarded.x
	m := newMessageSQL(recs, guarded, q)
	var sums []string
	for _, p := range tokenPaths {
		sums = append(sums, "sum(coalesce("+jx("data", p)+", 0))")
	}
	rows, err := db.QueryContext(ctx, slotsSQL(mt, m, sums), m.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var slot, ti, to, tr, tcr, tcw int64
		if err := rows.Scan(&id, &slot, &ti, &to, &tr, &tcr, &tcw); err != nil {
			return err
		}
		if i, ok := m.idx[id]; ok {
			recs[i].Slots.Add(slot, discover.Tokens{Input: ti, Output: to + tr, CacheRead: tcr, CacheWrite: tcw})
		}
	}
	return rows.Err()
}

func listRows(ctx context.Context, db *sql.DB, query, path string, args []any) ([]record, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []record
	for rows.Next() {
		var (
			r                                              record
			version, parent, project, worktree, agent, slg sql.NullString
			model                                          sql.NullString
			cost                                           sql.NullFloat64
			ti, to, tr, tcr, tcw, archived                 sql.NullInt64
			lmID, role, finish, errName, errMsg, prov, mid sql.NullString
			lmCreated, completed, lastUser                 sql.NullInt64
			prompt                                         sql.NullString
		)
		if err := rows.Scan(&r.ID, &r.Dir, &r.Title, &version, &parent, &project, &worktree,
			&agent, &slg, &model, &cost, &ti, &to, &tr, &tcr, &tcw,
			&r.Created, &r.Updated, &archived,
			&lmID, &lmCreated, &role, &completed, &finish, &errName, &errMsg, &prov, &mid,
			&lastUser, &prompt); err != nil {
			return nil, err
		}
		r.Version, r.ParentID, r.ProjectID, r.Worktree = version.String, parent.String, project.String, worktree.String
		r.Agent, r.Slug = agent.String, slg.String
		r.Model = parseModel(model.String)
		if cost.Valid {
			c := cost.Float64
			r.Cost = &c
		}
		if ti.Valid || to.Valid {
			r.Tokens = &tokenClasses{ti.Int64, to.Int64, tr.Int64, tcr.Int64, tcw.Int64}
		}
		r.Archived = archived.Int64
		r.Last = lastMessage{ID: lmID.String, Role: role.String, Created: lmCreated.Int64, Completed: completed.Int64,
			Finish: finish.String, ErrName: errName.String, ErrMsg: errMsg.String, Provider: prov.String, ModelID: mid.String}
		r.LastUserAt = lastUser.Int64
		if prompt.Valid {
			p := prompt.String
			r.Prompt = &p
		}
		r.Path = path
		out = append(out, r)
	}
	return out, rows.Err()
}

// parseModel reads session.model, JSON {"id","providerID","variant"}.
func parseModel(s string) modelRef {
	var m struct {
		ID         string `json:"id"`
		ProviderID string `json:"providerID"`
		Variant    string `json:"variant"`
	}
	if s == "" || json.Unmarshal([]byte(s), &m) != nil {
		return modelRef{}
	}
	return modelRef{Provider: m.ProviderID, ID: m.ID, Variant: m.Variant}
}

// sumSQL sums the assistant messages' tokens and cost per session, counting
// the messages left out.
func sumSQL(mt messageTable, m messageSQL, jx func(col, path string) string) string {
	paths, ok := tokenPaths, m.ok
	okSum := func(x string) string { return "sum(CASE WHEN " + ok + " THEN " + x + " END)" }
	return `SELECT session_id,
	    ` + okSum(jx("data", paths[0])) + `, ` + okSum(jx("data", paths[1])) + `,
	    ` + okSum(jx("data", paths[2])) + `, ` + okSum(jx("data", paths[3])) + `,
	    ` + okSum(jx("data", paths[4])) + `, ` + okSum(jx("data", "$.cost")) + `,
	    sum(CASE WHEN ` + ok + ` THEN 0 ELSE 1 END)
	  FROM ` + mt.table + ` WHERE ` + mt.assistant + m.filter + ` GROUP BY session_id`
}

// sumFromMessages fills tokens and cost from assistant messages, for schemas that
// do not store session totals (docs/agents/opencode.md §2.3).
func sumFromMessages(ctx context.Context, db *sql.DB, recs []record, guarded jsonFn, q *discover.Query, mt messageTable) error {
	jx := guarded.x
	m := newMessageSQL(recs, guarded, q)
	// A message whose tokens cannot be true (discover.UsageOK: negative, over 10⁹,
	// or not a number) is left out of the sums, cost included, and counted; this
	// also keeps SQLite's integer sum from overflowing (an error for the listing).
	rows, err := db.QueryContext(ctx, sumSQL(mt, m, jx), m.args...)
	idx := m.idx
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var ti, to, tr, tcr, tcw sql.NullInt64
		var cost sql.NullFloat64
		var bad int
		if err := rows.Scan(&id, &ti, &to, &tr, &tcr, &tcw, &cost, &bad); err != nil {
			return err
		}
		i, ok := idx[id]
		if !ok {
			continue
		}
		if recs[i].Tokens == nil {
			recs[i].Tokens = &tokenClasses{ti.Int64, to.Int64, tr.Int64, tcr.Int64, tcw.Int64}
			recs[i].BadUsage = bad
		}
		if recs[i].Cost == nil && cost.Valid {
			c := cost.Float64
			recs[i].Cost = &c
		}
	}
	return rows.Err()
}
