package opencode

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/discover"
)

// FuzzV2Store: the data of an OpenCode 2 session's user, assistant and idle rows,
// its session_v2 model and idle_outcome are the fuzzer's. Listing must still
// list every session once and never fail; peek must not panic; tokens and cost
// stay sane.
func FuzzV2Store(f *testing.F) {
	_, tmpl := v2Home(f)
	base, err := os.ReadFile(tmpl)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(`{"time":{"created":1},"text":"hi","files":[],"agents":[],"skills":[]}`,
		`{"time":{"created":2,"completed":3},"agent":"build","model":{"id":"m1","providerID":"fake"},"content":[{"type":"tool","id":"c","name":"shell","state":{"status":"error","input":{"command":"ls"},"error":{"type":"aborted","message":"x"}}}],"finish":"stop","cost":0.1,"tokens":{"input":1,"output":2,"reasoning":3,"cache":{"read":4,"write":5}}}`,
		`{"time":{"created":4},"outcome":"succeeded"}`, `{"id":"m1","providerID":"fake"}`, "succeeded")
	f.Add(`{`, `[]`, `null`, `{{`, "")
	f.Add(`{"text":{"a":1},"time":{"created":"x"}}`, `{"content":[{"type":"tool","state":{"content":"no","input":[1]}}],"error":"boom","tokens":{"input":-5,"output":1e300}}`,
		`{"outcome":7,"error":{"type":[],"message":{}}}`, `"m"`, "exploded")
	f.Fuzz(func(t *testing.T, user, assistant, idle, model, outcome string) {
		home := t.TempDir()
		data := filepath.Join(home, ".local", "share", "opencode")
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		dbPath := filepath.Join(data, "opencode.db")
		if err := os.WriteFile(dbPath, base, 0o600); err != nil {
			t.Fatal(err)
		}
		w := writer(t, dbPath)
		for typ, d := range map[string]string{"user": user, "assistant": assistant, "idle": idle} {
			mustExec(t, w, `UPDATE session_message SET data = ? WHERE session_id = ? AND type = ?`, d, v2Done, typ)
		}
		mustExec(t, w, `UPDATE session_v2 SET model = ?, idle_outcome = ? WHERE id = ?`, model, outcome, v2Done)
		w.Close()
		env := newEnv(home, nil, noProcs()).WithWarn(func(string) {})
		ss, err := testAdapter().Discover(context.Background(), env)
		if err != nil {
			t.Fatalf("Discover: %v", err)
		}
		n := 0
		for _, s := range ss {
			if s.ID == v2Done {
				n++
			}
			if tk := s.Tokens; tk != nil && (tk.Input < 0 || tk.Output < 0 || tk.CacheRead < 0 || tk.CacheWrite < 0) {
				t.Errorf("%s: negative tokens %+v", s.ID, *tk)
			}
			if c := s.CostUSD; c != nil && !(*c >= 0 && *c < 1e12) {
				t.Errorf("%s: cost %v", s.ID, *c)
			}
			if _, err := testAdapter().Peek(context.Background(), env, s, 20); err != nil && err != discover.ErrNoSession {
				t.Errorf("peek %s: %v", s.ID, err)
			}
		}
		if n != 1 || len(ss) != 7 {
			t.Errorf("%s listed %d times, %d sessions in all (want once, 7)", v2Done, n, len(ss))
		}
	})
}
