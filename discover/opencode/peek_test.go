package opencode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentctl/agentctl/discover"
)

const richSession = "ses_e0500000fffeRichPeekSess01"

// richDB adds to a copy of the home db one session with every part type peek
// renders: tools in each state, files, patches, sub-agents, compaction, errors.
func richDB(t *testing.T) (*discover.Env, discover.Session) {
	t.Helper()
	home, path := dataCopy(t, testdata(t, "home/.local/share/opencode"))
	w := writer(t, path)
	mustExec(t, w, `INSERT INTO session(id, project_id, slug, directory, title, version, time_created, time_updated, model)
		VALUES (?, 'global', 'rich', '/home/dev/rich', 'Rich', '1.18.33', 1795213000000, 1795213009000, '{"id":"m","providerID":"p","variant":"high"}')`, richSession)
	type part struct{ id, data string }
	msgs := []struct {
		id    string
		at    int64
		data  string
		parts []part
	}{
		{"msg_20000000a001aaaaaaaaaaaaaa", 1795213000100, `{"role":"user","time":{"created":1795213000100}}`, []part{
			{"prt_20000000a002aaaaaaaaaaaaaa", `{"type":"text","text":"<system-reminder>injected</system-reminder>","synthetic":true}`},
			{"prt_20000000a003aaaaaaaaaaaaaa", `{"type":"text","text":"run the tests"}`},
			{"prt_20000000a004aaaaaaaaaaaaaa", `{"type":"file","mime":"text/plain","filename":"main.go","url":"file:///home/dev/rich/main.go"}`},
		}},
		{"msg_20000000b001bbbbbbbbbbbbbb", 1795213001000, `{"role":"assistant","parentID":"msg_20000000a001aaaaaaaaaaaaaa","providerID":"p","modelID":"m","time":{"created":1795213001000,"completed":1795213003000},"finish":"tool-calls"}`, []part{
			{"prt_20000000b002bbbbbbbbbbbbbb", `{"type":"step-start"}`},
			{"prt_20000000b003bbbbbbbbbbbbbb", `{"type":"reasoning","text":"thinking hard"}`},
			{"prt_20000000b004bbbbbbbbbbbbbb", `{"type":"text","text":"Running them."}`},
			{"prt_20000000b005bbbbbbbbbbbbbb", `{"type":"tool","tool":"bash","callID":"call_1","state":{"status":"completed","input":{"command":"go test ./...","description":"tests"},"output":"\n  PASS\nok pkg 0.1s\n","title":"go test"}}`},
			{"prt_20000000b006bbbbbbbbbbbbbb", `{"type":"tool","tool":"read","callID":"call_2","state":{"status":"completed","input":{"filePath":"/home/dev/rich/main.go"},"output":"<file>\n00001| package main"}}`},
			{"prt_20000000b007bbbbbbbbbbbbbb", `{"type":"tool","tool":"bash","callID":"call_3","state":{"status":"error","input":{"command":"make"},"error":"exit status 2\nmake: *** no rule"}}`},
			{"prt_20000000b008bbbbbbbbbbbbbb", `{"type":"tool","tool":"webfetch","callID":"call_4","state":{"status":"error","input":{"url":"http://127.0.0.1/x"},"error":"Tool execution aborted"}}`},
			{"prt_20000000b009bbbbbbbbbbbbbb", `{"type":"tool","tool":"grep","callID":"call_5","state":{"status":"running","input":{"pattern":"TODO","path":"."}}}`},
			{"prt_20000000b00abbbbbbbbbbbbbb", `{"type":"step-finish","reason":"tool-calls","tokens":{"input":1,"output":1,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0}`},
		}},
		{"msg_20000000c001cccccccccccccc", 1795213004000, `{"role":"assistant","parentID":"msg_20000000a001aaaaaaaaaaaaaa","time":{"created":1795213004000,"completed":1795213005000},"error":{"name":"APIError","data":{"message":"Rate limit exceeded","statusCode":429}}}`, []part{
			{"prt_20000000c002cccccccccccccc", `{"type":"patch","hash":"abc","files":["/home/dev/rich/a.go","/home/dev/rich/b.go"]}`},
			{"prt_20000000c003cccccccccccccc", `{"type":"subtask","agent":"general","description":"find the bug","prompt":"look"}`},
			{"prt_20000000c004cccccccccccccc", `{"type":"text","text":"partial answer"}`},
		}},
		{"msg_20000000d001dddddddddddddd", 1795213006000, `{"role":"user","time":{"created":1795213006000}}`, []part{
			{"prt_20000000d002dddddddddddddd", `{"type":"compaction","auto":true}`},
		}},
		{"msg_20000000e001eeeeeeeeeeeeee", 1795213007000, `{"role":"system","time":{"created":1795213007000}}`, nil}, // unknown role: skipped
		{"msg_20000000f001ffffffffffffff", 1795213008000, `{"role":"assistant","parentID":"msg_20000000d001dddddddddddddd","time":{"created":1795213008000,"completed":1795213009000},"error":{"name":"MessageAbortedError","data":{"message":"Aborted"}}}`, nil},
	}
	for _, m := range msgs {
		mustExec(t, w, `INSERT INTO message(id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)`, m.id, richSession, m.at, m.at, m.data)
		for _, p := range m.parts {
			mustExec(t, w, `INSERT INTO part(id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)`, p.id, m.id, richSession, m.at, m.at, p.data)
		}
	}
	w.Close()
	env := newEnv(home, nil, noProcs())
	got, _ := list(t, env)
	return env, got[richSession]
}

func ts(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

var richItems = []discover.Message{
	{TS: ts(1795213000100), Kind: "user", Text: "run the tests\n[file: main.go]", MessageID: "msg_20000000a001aaaaaaaaaaaaaa"},
	{TS: ts(1795213001000), Kind: "assistant", Text: "Running them.", MessageID: "msg_20000000b001bbbbbbbbbbbbbb", Tools: []discover.ToolCall{
		{ID: "call_1", Name: "bash", Summary: "go test ./...", HasResult: true, Result: "PASS"},
		{ID: "call_2", Name: "read", Summary: "/home/dev/rich/main.go", HasResult: true, Result: "<file>"},
		{ID: "call_3", Name: "bash", Summary: "make", HasResult: true, IsError: true, Result: "exit status 2"},
		{ID: "call_4", Name: "webfetch", Summary: `{"url":"http://127.0.0.1/x"}`, HasResult: true, IsError: true, Interrupted: true, Result: "Tool execution aborted"},
		{ID: "call_5", Name: "grep", Summary: `{"pattern":"TODO","path":"."}`},
	}},
	{TS: ts(1795213004000), Kind: "assistant", Text: "[patch: 2 files]\npartial answer", MessageID: "msg_20000000c001cccccccccccccc",
		Tools: []discover.ToolCall{{Name: "subagent", Summary: "general find the bug"}}},
	{TS: ts(1795213004000), Kind: "error", Text: "APIError: Rate limit exceeded", IsError: true, MessageID: "msg_20000000c001cccccccccccccc:error"},
	{TS: ts(1795213006000), Kind: "user", MessageID: "msg_20000000d001dddddddddddddd"},
	{TS: ts(1795213006000), Kind: "system", Text: "context compacted", MessageID: "msg_20000000d001dddddddddddddd:compaction"},
	{TS: ts(1795213008000), Kind: "error", Text: "MessageAbortedError: Aborted", IsError: true, MessageID: "msg_20000000f001ffffffffffffff:error"},
}

func TestPeekRendersEveryPartType(t *testing.T) {
	env, s := richDB(t)
	if s.Model != "p/m" || s.Extra["model_variant"] != "high" {
		t.Errorf("model %q variant %v", s.Model, s.Extra["model_variant"])
	}
	got := peek(t, env, s, 0)
	if diff := cmp.Diff(richItems, got, cmpopts.IgnoreFields(discover.Message{}, "Raw")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// -n counts items, not lines, parts or native messages.
func TestPeekN(t *testing.T) {
	env, s := richDB(t)
	for _, n := range []int{1, 2, 3, 4, 7, 50} {
		got := peek(t, env, s, n)
		want := richItems
		if n < len(want) {
			want = want[len(want)-n:]
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(discover.Message{}, "Raw")); diff != "" {
			t.Errorf("n=%d (-want +got):\n%s", n, diff)
		}
	}
}

// Raw holds the native rows: the message row (ids as columns, data inlined) and
// then each of its parts' rows, in id order.
func TestPeekRaw(t *testing.T) {
	env, s := richDB(t)
	got := peek(t, env, s, 0)
	first := got[0]
	if len(first.Raw) != 4 {
		t.Fatalf("user item has %d raw rows, want the message and its 3 parts", len(first.Raw))
	}
	var row struct {
		ID          string `json:"id"`
		Session     string `json:"session_id"`
		MessageID   string `json:"message_id"`
		TimeCreated int64  `json:"time_created"`
		Data        struct {
			Role, Type, Text string
		} `json:"data"`
	}
	if err := json.Unmarshal(first.Raw[0], &row); err != nil {
		t.Fatal(err)
	}
	if row.ID != "msg_20000000a001aaaaaaaaaaaaaa" || row.Session != richSession || row.TimeCreated != 1795213000100 || row.Data.Role != "user" {
		t.Errorf("message row %+v", row)
	}
	row.Data.Type = ""
	if err := json.Unmarshal(first.Raw[2], &row); err != nil {
		t.Fatal(err)
	}
	if row.ID != "prt_20000000a003aaaaaaaaaaaaaa" || row.MessageID != "msg_20000000a001aaaaaaaaaaaaaa" || row.Data.Text != "run the tests" {
		t.Errorf("part row %+v", row)
	}
	for _, m := range got {
		for _, r := range m.Raw {
			if !json.Valid(r) || strings.Contains(string(r), "\n") {
				t.Errorf("raw record is not one line of JSON: %s", r)
			}
		}
	}
}

func TestPeekFixtureSessions(t *testing.T) {
	env := newEnv(testdata(t, "home"), nil, noProcs())
	got, _ := list(t, env)
	// Killed mid-reply: the prompt and an empty, open assistant message.
	ms := peek(t, env, got[sesTERM], 0)
	want := []discover.Message{
		{TS: ts(1795211229104), Kind: "user", Text: `"Signal test TERM"`, MessageID: "msg_1faed77b0001tlbGqndtJ20CST"},
		{TS: ts(1795211230586), Kind: "assistant", MessageID: "msg_1faed7d7a001SJSl5ZvcHaLtti"},
	}
	if diff := cmp.Diff(want, ms, cmpopts.IgnoreFields(discover.Message{}, "Raw")); diff != "" {
		t.Errorf("killed session (-want +got):\n%s", diff)
	}
	// A session whose prompt parts were never written: one empty user item.
	ms = peek(t, env, got[sesEarly], 0)
	if len(ms) != 1 || ms[0].Kind != "user" || ms[0].Text != "" || len(ms[0].Raw) != 1 {
		t.Errorf("early session: %+v", ms)
	}
	// A session with no messages at all: ErrNoSession.
	_, err := testAdapter().Peek(context.Background(), env, discover.Session{ID: "ses_e0000000fffeNoSuchSession00", Adapter: Name}, 0)
	if err != discover.ErrNoSession {
		t.Errorf("unknown session: %v", err)
	}
}

// A session known only by id (e.g. from a launch record, no Path yet) is found in
// the stores.
func TestPeekWithoutPath(t *testing.T) {
	env := newEnv(testdata(t, "home"), nil, noProcs())
	ms := peek(t, env, discover.Session{ID: sesDone, Adapter: Name}, 1)
	if len(ms) != 1 || ms[0].Text != "Hello from the fake server." {
		t.Errorf("%+v", ms)
	}
}
