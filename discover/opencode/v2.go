package opencode

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/sqlitero"
)

// OpenCode 2 keeps its sessions in session_v2 and their transcript in
// session_message (type, seq, data) inside the same opencode.db; the 1.x tables
// stay behind after its migration, holding copies of the sessions it moved
// (docs/agents/opencode.md §2.1.1). Sessions are read from session_v2 first and
// a 1.x row is kept only when session_v2 has no row of that id.

// turnTypes are the session_message types that move a turn: a prompt (user,
// synthetic), a reply (assistant) or its end (idle). Agent, model and location
// switches, system notes, skills, shell runs and compactions happen inside or
// between turns and say nothing about whether one is running.
const turnTypes = "('user', 'synthetic', 'assistant', 'idle')"

// v2Columns reports the session_v2 columns when OpenCode 2's tables are there
// with what a listing needs (nil otherwise: a 1.x database, where 1.18 already
// ships an empty session_message but no session_v2).
func v2Columns(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	sc, err := sqlitero.Columns(ctx, db, "session_v2")
	if err != nil || !sc["id"] || !sc["directory"] || !sc["time_created"] || !sc["time_updated"] {
		return nil, err
	}
	mc, err := sqlitero.Columns(ctx, db, "session_message")
	if err != nil || !mc["session_id"] || !mc["type"] || !mc["seq"] || !mc["data"] || !mc["time_created"] {
		return nil, err
	}
	return sc, nil
}

// listV2SQL builds the listing statement over session_v2. Per session it touches
// the row, its latest turn message and its first and latest user message, by the
// (session_id, seq) and (session_id, type, seq) indexes OpenCode 2 creates.
func listV2SQL(sc, pc map[string]bool, guarded jsonFn, where string) string {
	jx := guarded.x
	opt := func(c string) string {
		if sc[c] {
			return "s." + c
		}
		return "NULL"
	}
	// Numbers are read only where SQLite holds a number: a text in a numeric
	// column (or JSON field) is no value, never an error for the listing.
	num := func(x, as string) string {
		return "(CASE WHEN typeof(" + x + ") IN ('integer', 'real') THEN CAST(" + x + " AS " + as + ") END)"
	}
	i, f := func(c string) string { return num(opt(c), "INTEGER") }, func(c string) string { return num(opt(c), "REAL") }
	worktree, join := "NULL", ""
	if pc["worktree"] && sc["project_id"] {
		worktree, join = "p.worktree", "LEFT JOIN project p ON p.id = s.project_id"
	}
	cols := []string{
		"s.id", "s.directory", opt("title"), opt("version"), opt("parent_id"), opt("project_id"), worktree,
		opt("agent"), opt("slug"), opt("model"), f("cost"),
		i("tokens_input"), i("tokens_output"), i("tokens_reasoning"), i("tokens_cache_read"), i("tokens_cache_write"),
		"coalesce(" + i("time_created") + ", 0)", "coalesce(" + i("time_updated") + ", 0)", i("time_archived"),
		i("time_suspended"), i("time_idle"), opt("idle_outcome"), opt("idle_error_type"), "substr(" + opt("idle_error_message") + ", 1, 500)",
		"lm.id", "lm.type", num("lm.time_created", "INTEGER"), num(jx("lm.data", "$.time.completed"), "INTEGER"), jx("lm.data", "$.finish"),
		jx("lm.data", "$.error.type"), "substr(" + jx("lm.data", "$.error.message") + ", 1, 500)", jx("lm.data", "$.outcome"),
		jx("lm.data", "$.model.providerID"), jx("lm.data", "$.model.id"),
		"(SELECT " + num("u.time_created", "INTEGER") + " FROM session_message u WHERE u.session_id = s.id AND u.type = 'user' ORDER BY u.seq DESC LIMIT 1)",
		"(SELECT substr(" + jx("u.data", "$.text") + ", 1, " + fmt.Sprint(promptMax) + ") FROM session_message u" +
			" WHERE u.session_id = s.id AND u.type = 'user' ORDER BY u.seq LIMIT 1)",
	}
	return "SELECT " + strings.Join(cols, ", ") + `
FROM (SELECT s.*,
        (SELECT m.id FROM session_message m WHERE m.session_id = s.id AND m.type IN ` + turnTypes + `
          ORDER BY m.seq DESC LIMIT 1) AS last_id
      FROM session_v2 s` + where + `) s
LEFT JOIN session_message lm ON lm.id = s.last_id
` + join
}

// listV2 reads every session of session_v2 (those q names, when q is set).
func listV2(ctx context.Context, db *sql.DB, sc map[string]bool, path string, q *discover.Query, slots bool) ([]record, error) {
	pc, err := sqlitero.Columns(ctx, db, "project")
	if err != nil {
		return nil, err
	}
	where, args := sqlWhere(q, "s.id")
	out, err := listV2Rows(ctx, db, listV2SQL(sc, pc, false, where), path, args)
	if isMalformedJSON(err) {
		out, err = listV2Rows(ctx, db, listV2SQL(sc, pc, true, where), path, args)
	}
	if err != nil {
		return nil, err
	}
	// Totals the row does not carry (no such columns, or all zero: OpenCode 2
	// persists them after each completed step; pre-release 2.x builds did
	// not) are summed from the session's assistant rows; a session with none
	// keeps its zeros.
	var unsummed []int
	for i := range out {
		r := &out[i]
		if r.Tokens == nil || (*r.Tokens == tokenClasses{} && (r.Cost == nil || *r.Cost == 0)) {
			unsummed = append(unsummed, i)
			r.Tokens, r.Cost = nil, nil
		}
	}
	// Only those sessions' rows are read, a few hundred ids per statement.
	for start := 0; start < len(unsummed); start += 500 {
		batch := unsummed[start:min(start+500, len(unsummed))]
		sub := discover.Query{IDs: make([]string, len(batch))}
		for k, i := range batch {
			sub.IDs[k] = out[i].ID
		}
		err := sumFromMessages(ctx, db, out, false, &sub, v2Messages)
		if isMalformedJSON(err) {
			err = sumFromMessages(ctx, db, out, true, &sub, v2Messages)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, i := range unsummed {
		if out[i].Tokens == nil && sc["tokens_input"] {
			out[i].Tokens = &tokenClasses{} // the store's zeros
		}
	}
	if slots {
		err := slotsFromMessages(ctx, db, out, false, q, v2Messages)
		if isMalformedJSON(err) {
			err = slotsFromMessages(ctx, db, out, true, q, v2Messages)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func listV2Rows(ctx context.Context, db *sql.DB, query, path string, args []any) ([]record, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []record
	for rows.Next() {
		var (
			r                                                     record
			title, version, parent, project, worktree, agent, slg sql.NullString
			model                                                 sql.NullString
			cost                                                  sql.NullFloat64
			ti, to, tr, tcr, tcw, archived, claimed, idleAt       sql.NullInt64
			idleOutcome, idleErrType, idleErrMsg                  sql.NullString
			lmID, lmType, finish, errType, errMsg, outcome        sql.NullString
			prov, mid                                             sql.NullString
			lmCreated, completed, lastUser                        sql.NullInt64
			prompt                                                sql.NullString
		)
		if err := rows.Scan(&r.ID, &r.Dir, &title, &version, &parent, &project, &worktree,
			&agent, &slg, &model, &cost, &ti, &to, &tr, &tcr, &tcw,
			&r.Created, &r.Updated, &archived,
			&claimed, &idleAt, &idleOutcome, &idleErrType, &idleErrMsg,
			&lmID, &lmType, &lmCreated, &completed, &finish, &errType, &errMsg, &outcome, &prov, &mid,
			&lastUser, &prompt); err != nil {
			return nil, err
		}
		r.Title, r.Version, r.ParentID, r.ProjectID, r.Worktree = title.String, version.String, parent.String, project.String, worktree.String
		r.Agent, r.Slug = agent.String, slg.String
		r.Model = parseModel(model.String)
		if cost.Valid {
			c := cost.Float64
			r.Cost = &c
		}
		if ti.Valid || to.Valid {
			r.Tokens = &tokenClasses{ti.Int64, to.Int64, tr.Int64, tcr.Int64, tcw.Int64}
		}
		r.Archived, r.Claimed = archived.Int64, claimed.Int64
		r.Last = v2Last(lmID.String, lmType.String, lmCreated.Int64, completed.Int64, finish.String,
			errType.String, errMsg.String, outcome.String)
		r.Last.Provider, r.Last.ModelID = prov.String, mid.String
		if idleAt.Valid && idleOutcome.Valid && idleAt.Int64 >= r.Last.Created {
			// The session row's own idle state, written when its execution ended:
			// it is the newest word on the turn unless a prompt came after it.
			r.Last.Role, r.Last.Idle, r.Last.Created, r.Last.Completed = "idle", idleOutcome.String, idleAt.Int64, idleAt.Int64
			if idleErrType.Valid || idleErrMsg.Valid {
				r.Last.ErrName, r.Last.ErrMsg = idleErrType.String, idleErrMsg.String
			}
		}
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

// v2Last maps a session_message row onto lastMessage, which turnOf reads: a
// prompt is a user message, an idle marker carries its outcome, an assistant
// message its completion, finish and error ({type, message} in OpenCode 2).
func v2Last(id, typ string, created, completed int64, finish, errType, errMsg, outcome string) lastMessage {
	l := lastMessage{ID: id, Created: created}
	switch typ {
	case "":
	case "user", "synthetic":
		l.Role = "user"
	case "assistant":
		l.Role, l.Completed, l.Finish = "assistant", completed, finish
		l.ErrName, l.ErrMsg = errType, errMsg
	case "idle":
		l.Role, l.Idle, l.Completed = "idle", outcome, created
		l.ErrName, l.ErrMsg = errType, errMsg
	default:
		l.Role = typ
	}
	return l
}

// v2Messages is where OpenCode 2 keeps an assistant message's usage: the
// session_message rows of type assistant, tokens and cost in data as 1.x has them.
var v2Messages = messageTable{table: "session_message", assistant: "type = 'assistant'"}

// claimVerdict is the status of an OpenCode 2 session whose turn is open and
// whose execution is claimed (session_v2.time_suspended, which OpenCode 2 sets
// as an execution starts and clears as it ends), when the process tie left it
// unknown: every process that could run it is a server or TUI (the background
// service hosts any directory). A live claimant is running it; the claim
// outlives only a claimant that died, and then no process is alive to be a
// candidate.
func claimVerdict(r record, procs []ocProc, v discover.Verdict, tdetail string) (discover.Verdict, bool) {
	if r.Claimed <= 0 || v.Status != discover.StatusUnknown {
		return discover.Verdict{}, false
	}
	cands := candidatesFor(r, procs)
	if len(cands) == 0 {
		return discover.Verdict{}, false
	}
	for _, c := range cands {
		if c.Kind != kindHost && c.Kind != kindTUI {
			return discover.Verdict{}, false
		}
	}
	out := discover.Verdict{Status: discover.StatusRunning, Evidence: discover.EvidenceProcess, Inferred: true,
		Detail: fmt.Sprintf("execution claimed at %s (session_v2.time_suspended) and %s alive; %s",
			time.UnixMilli(r.Claimed).UTC().Format(time.RFC3339), cands[0], tdetail)}
	if len(cands) == 1 {
		out.PID = cands[0].PID
	}
	return out, true
}
