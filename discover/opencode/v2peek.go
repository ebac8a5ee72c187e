package opencode

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// peekTypes are the session_message types peek shows (docs/agents/opencode.md §5).
const peekTypes = "('user', 'assistant', 'idle', 'compaction', 'shell')"

// v2Row is one session_message row.
type v2Row struct {
	ID, Type string
	Seq      int64
	Created  int64
	Data     []byte
	Raw      json.RawMessage
}

// peekV2 reads the last n shown rows of an OpenCode 2 session (n <= 0: all),
// oldest first. found is false when session_v2 has no such session (or no
// session_v2 table at all).
func peekV2(ctx context.Context, db *sql.DB, id string, n int) (rows []v2Row, found bool, err error) {
	if sc, err := v2Columns(ctx, db); err != nil || sc == nil {
		return nil, false, err
	}
	if err := db.QueryRowContext(ctx, "SELECT 1 FROM session_v2 WHERE id = ?", id).Scan(new(int)); err != nil {
		if err == sql.ErrNoRows {
			return nil, false, nil
		}
		return nil, false, err
	}
	limit := int64(n)
	if n <= 0 {
		limit = -1
	}
	rs, err := db.QueryContext(ctx, `SELECT id, session_id, type, seq, time_created, time_updated, data FROM (
  SELECT * FROM session_message WHERE session_id = ? AND type IN `+peekTypes+` ORDER BY seq DESC LIMIT ?)
ORDER BY seq`, id, limit)
	if err != nil {
		return nil, true, err
	}
	defer rs.Close()
	for rs.Next() {
		var r v2Row
		var sid, data string
		var updated int64
		if err := rs.Scan(&r.ID, &sid, &r.Type, &r.Seq, &r.Created, &updated, &data); err != nil {
			return nil, true, err
		}
		r.Data = []byte(data)
		r.Raw = rowJSON([]kv{{"id", r.ID}, {"session_id", sid}, {"type", r.Type}, {"seq", r.Seq},
			{"time_created", r.Created}, {"time_updated", updated}}, data)
		rows = append(rows, r)
	}
	return rows, true, rs.Err()
}

// v2Data is a session_message row's data: the fields of the types peek shows
// (OpenCode 2's Session.Message schema, without type and id, which are columns).
type v2Data struct {
	Time struct {
		Created int64 `json:"created"`
	} `json:"time"`
	// user, synthetic
	Text string `json:"text"`
	// assistant
	Content []v2Content `json:"content"`
	Error   *v2Error    `json:"error"`
	// idle
	Outcome string `json:"outcome"`
	// shell
	Command string `json:"command"`
	Status  string `json:"status"`
	// compaction
	Reason string `json:"reason"`
}

type v2Error struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (e *v2Error) String() string {
	if e.Message == "" {
		return e.Type
	}
	return e.Type + ": " + e.Message
}

type v2Content struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	State struct {
		Status  string          `json:"status"`
		Input   json.RawMessage `json:"input"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Error *v2Error `json:"error"`
	} `json:"state"`
}

// itemsV2 turns OpenCode 2 rows into peek items: a user prompt, an assistant
// reply (text and tools; reasoning not shown), an error item for an assistant
// error or an idle marker that failed or was interrupted, a system item for a
// compaction or a shell command. Rows whose data does not parse are skipped.
func itemsV2(rows []v2Row) []discover.Message {
	var out []discover.Message
	for _, r := range rows {
		var d v2Data
		if json.Unmarshal(r.Data, &d) != nil {
			continue
		}
		ts := r.Created
		if d.Time.Created != 0 {
			ts = d.Time.Created
		}
		base := discover.Message{TS: time.UnixMilli(ts).UTC(), MessageID: r.ID, Raw: []json.RawMessage{r.Raw}}
		switch r.Type {
		case "user":
			m := base
			m.Kind, m.Text = "user", d.Text
			out = append(out, m)
		case "assistant":
			var text []string
			var tools []discover.ToolCall
			for _, c := range d.Content {
				switch c.Type {
				case "text":
					text = append(text, c.Text)
				case "tool":
					tools = append(tools, v2Tool(c))
				}
			}
			if len(text) > 0 || len(tools) > 0 || d.Error == nil {
				m := base
				m.Kind, m.Text, m.Tools = "assistant", strings.Join(text, "\n"), tools
				out = append(out, m)
			}
			if d.Error != nil {
				m := base
				m.Kind, m.IsError, m.Text, m.MessageID = "error", true, d.Error.String(), r.ID+":error"
				out = append(out, m)
			}
		case "idle":
			if d.Outcome == "failed" || d.Outcome == "interrupted" {
				m := base
				m.Kind, m.IsError, m.Text = "error", true, d.Outcome
				if d.Error != nil {
					m.Text += ": " + d.Error.String()
				}
				out = append(out, m)
			}
		case "compaction":
			m := base
			m.Kind, m.Text = "system", "context compacted"
			out = append(out, m)
		case "shell":
			m := base
			m.Kind, m.Text = "system", "shell: "+d.Command
			out = append(out, m)
		}
	}
	return out
}

// v2Tool renders an assistant's tool content: name, input summary, result.
func v2Tool(c v2Content) discover.ToolCall {
	tc := discover.ToolCall{ID: c.ID, Name: c.Name, Summary: inputSummary(c.Name, c.State.Input)}
	var result string
	for _, x := range c.State.Content {
		if x.Text != "" {
			result = x.Text
			break
		}
	}
	switch c.State.Status {
	case "completed":
		tc.HasResult, tc.Result = true, discover.FirstLine(result, 100)
	case "error":
		tc.HasResult, tc.IsError = true, true
		msg := result
		if c.State.Error != nil {
			msg = c.State.Error.String()
			tc.Interrupted = c.State.Error.Type == "aborted"
		}
		tc.Result = discover.FirstLine(msg, 100)
	}
	return tc
}
