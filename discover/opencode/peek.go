package opencode

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/internal/agentfs"
)

// peekDB reads the last n messages of a session (n <= 0: all) with their parts,
// oldest first (docs/agents/opencode.md §5). found is false when the session is not in db.
func peekDB(ctx context.Context, db *sql.DB, id string, n int) (msgs []nativeMsg, found bool, err error) {
	if err := db.QueryRowContext(ctx, "SELECT 1 FROM session WHERE id = ?", id).Scan(new(int)); err != nil {
		if err == sql.ErrNoRows {
			return nil, false, nil
		}
		return nil, false, err
	}
	limit := int64(n)
	if n <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := db.QueryContext(ctx, `WITH last AS (
  SELECT id, session_id, time_created, time_updated, data FROM message
  WHERE session_id = ? ORDER BY time_created DESC, id DESC LIMIT ?)
SELECT last.id, last.session_id, last.time_created, last.time_updated, last.data,
       p.id, p.message_id, p.session_id, p.time_created, p.time_updated, p.data
FROM last LEFT JOIN part p ON p.message_id = last.id
ORDER BY last.time_created, last.id, p.id`, id, limit)
	if err != nil {
		return nil, true, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			mid, msid, mdata       string
			mcreated, mupdated     int64
			pid, pmid, psid, pdata sql.NullString
			pcreated, pupdated     sql.NullInt64
		)
		if err := rows.Scan(&mid, &msid, &mcreated, &mupdated, &mdata, &pid, &pmid, &psid, &pcreated, &pupdated, &pdata); err != nil {
			return nil, true, err
		}
		if len(msgs) == 0 || msgs[len(msgs)-1].ID != mid {
			msgs = append(msgs, nativeMsg{ID: mid, Created: mcreated, Data: []byte(mdata),
				Raw: rowJSON([]kv{{"id", mid}, {"session_id", msid}, {"time_created", mcreated}, {"time_updated", mupdated}}, mdata)})
		}
		if pid.Valid {
			m := &msgs[len(msgs)-1]
			m.Parts = append(m.Parts, nativePart{ID: pid.String, Data: []byte(pdata.String),
				Raw: rowJSON([]kv{{"id", pid.String}, {"message_id", pmid.String}, {"session_id", psid.String},
					{"time_created", pcreated.Int64}, {"time_updated", pupdated.Int64}}, pdata.String)})
		}
	}
	return msgs, true, rows.Err()
}

type kv struct {
	k string
	v any
}

// rowJSON renders a row as one JSON object, its data column inlined as JSON (or
// as a string when it is not valid JSON).
func rowJSON(cols []kv, data string) json.RawMessage {
	var b strings.Builder
	b.WriteByte('{')
	for _, c := range cols {
		k, _ := json.Marshal(c.k)
		v, _ := json.Marshal(c.v)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
		b.WriteByte(',')
	}
	b.WriteString(`"data":`)
	if json.Valid([]byte(data)) {
		b.WriteString(data)
	} else {
		s, _ := json.Marshal(data)
		b.Write(s)
	}
	b.WriteByte('}')
	return json.RawMessage(b.String())
}

// peekLegacy reads the last n message files of a legacy session (n <= 0: all)
// that parse, newest first from the end of the sorted listing, and their parts.
func peekLegacy(ctx context.Context, storage, id string, n int) ([]nativeMsg, error) {
	dir := filepath.Join(storage, "message", id)
	names := jsonNames(dir)
	var out []nativeMsg
	for i := len(names) - 1; i >= 0 && (n <= 0 || len(out) < n); i-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := agentfs.ReadFile(filepath.Join(dir, names[i]))
		if err != nil {
			continue
		}
		var m msgData
		if json.Unmarshal(b, &m) != nil || (m.Role != "user" && m.Role != "assistant") {
			continue
		}
		mid := m.ID
		if mid == "" {
			mid = strings.TrimSuffix(names[i], ".json")
		}
		nm := nativeMsg{ID: mid, Created: m.Time.Created, Data: b, Raw: compact(b)}
		pdir := filepath.Join(storage, "part", mid)
		for _, pn := range jsonNames(pdir) {
			pb, err := agentfs.ReadFile(filepath.Join(pdir, pn))
			if err != nil || !json.Valid(pb) {
				continue
			}
			nm.Parts = append(nm.Parts, nativePart{ID: strings.TrimSuffix(pn, ".json"), Data: pb, Raw: compact(pb)})
		}
		out = append(out, nm)
	}
	slices.Reverse(out)
	return out, nil
}

// compact makes a (pretty-printed) JSON file one line, as --raw prints one record
// per line.
func compact(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return json.RawMessage(b)
	}
	return buf.Bytes()
}
