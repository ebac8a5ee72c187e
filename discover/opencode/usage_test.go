package opencode

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

// Issue 19: a legacy message whose tokens cannot be true (discover.UsageOK) is left
// out of the session's totals, its cost too, never clamped, and named in a warning;
// a warm parse index gives the same.
func TestLegacyImpossibleUsageLeftOut(t *testing.T) {
	const good = `"input": 1500`
	for _, tc := range []struct {
		name, to string
		bad      bool
	}{
		{"valid", `"input": 1501`, false},
		{"negative input", `"input": -1500`, true},
		{"over 10^9", `"input": 1000000001`, true},
		{"int64 max", `"input": 9223372036854775807`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			storage := filepath.Join(home, ".local", "share", "opencode", "storage")
			discovertest.CopyTree(t, testdata(t, "legacy/storage"), storage)
			p := filepath.Join(storage, "message", legacyOnly, "msg_0e9a1b2d1001DDDDDDDDDDDDDD.json")
			replaceIn(t, p, good, tc.to)
			env := newEnv(home, nil, noProcs())
			env.StateDir = filepath.Join(t.TempDir(), "state")
			want, wantCost := &discover.Tokens{Input: 1000, Output: 200, CacheRead: 300}, 0.0123
			if !tc.bad {
				want, wantCost = &discover.Tokens{Input: 2501, Output: 300, CacheRead: 300}, 0.0323
			}
			for _, pass := range []string{"cold", "warm"} {
				got, warns := list(t, env)
				s := got[legacyOnly]
				if diff := cmp.Diff(want, s.Tokens); diff != "" {
					t.Errorf("%s: tokens (-want +got):\n%s", pass, diff)
				}
				if s.CostUSD == nil || *s.CostUSD != wantCost {
					t.Errorf("%s: cost %v, want %v", pass, s.CostUSD, wantCost)
				}
				warned := strings.Contains(strings.Join(warns, "\n"), "session "+legacyOnly+": 1 message(s) with a negative or impossible token count left out of its totals")
				if warned != tc.bad {
					t.Errorf("%s: warned %v, want %v: %q", pass, warned, tc.bad, warns)
				}
			}
		})
	}
}

// Issue 19: the SQLite store sums a session's totals itself; negative ones (a
// damaged message) are left out, with a warning naming the session.
func TestStoreNegativeTotalsLeftOut(t *testing.T) {
	home, db := dataCopy(t, testdata(t, "home/.local/share/opencode"))
	clean, _ := list(t, newEnv(home, nil, noProcs()))
	var id string
	for k, s := range clean {
		if s.Tokens != nil && s.Tokens.Input > 0 {
			id = k
			break
		}
	}
	if id == "" {
		t.Fatal("premise: no fixture session with tokens")
	}
	for _, col := range []string{"tokens_input", "tokens_output", "tokens_reasoning", "tokens_cache_read", "tokens_cache_write"} {
		t.Run(col, func(t *testing.T) {
			w := writer(t, db)
			mustExec(t, w, `UPDATE session SET `+col+` = -5 WHERE id = ?`, id)
			w.Close()
			got, warns := list(t, newEnv(home, nil, noProcs()))
			if s := got[id]; s.Tokens != nil || s.CostUSD != nil {
				t.Errorf("negative %s: tokens %+v cost %v, want both left out", col, s.Tokens, s.CostUSD)
			}
			if !strings.Contains(strings.Join(warns, "\n"), "session "+id+": the store's token totals are negative; left out") {
				t.Errorf("no warning: %q", warns)
			}
			for k, s := range clean {
				if k != id && !cmp.Equal(s.Tokens, got[k].Tokens) {
					t.Errorf("session %s changed: %+v → %+v", k, s.Tokens, got[k].Tokens)
				}
			}
			w = writer(t, db)
			mustExec(t, w, `UPDATE session SET `+col+` = ? WHERE id = ?`, 0, id)
			w.Close()
		})
	}
}

// replaceIn replaces from with to once in the file at p; from must be there.
func replaceIn(t *testing.T, p, from, to string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), from) {
		t.Fatalf("premise: %s has no %q", p, from)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue 19: a schema without session totals sums assistant messages in SQL; a
// message whose tokens cannot be true is left out of the sums (cost included)
// and counted in the warning, and one near the int64 limit cannot make SQLite's
// sum overflow and fail the whole store.
func TestSchemaWithoutTotalsImpossibleUsage(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	w := writer(t, path)
	mustExec(t, w, `CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL,
		directory text NOT NULL, title text NOT NULL, version text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL)`)
	mustExec(t, w, `CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL)`)
	mustExec(t, w, `CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL)`)
	const id = "ses_e0400000fffeOldSchemaBad1"
	mustExec(t, w, `INSERT INTO session VALUES ('`+id+`', 'global', NULL, 's', '/w', 'Old', '1.2.0', 1000, 9000)`)
	asst := func(tokens string, cost float64) string {
		return `{"role":"assistant","parentID":"m1","providerID":"anthropic","modelID":"claude-sonnet-4-5","cost":` + strconv.FormatFloat(cost, 'g', -1, 64) +
			`,"tokens":` + tokens + `,"time":{"created":1200,"completed":1300},"finish":"stop"}`
	}
	for i, d := range []string{
		`{"role":"user","time":{"created":1100},"model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}`,
		asst(`{"input":10,"output":5,"reasoning":2,"cache":{"read":100,"write":7}}`, 0.5),
		asst(`{"input":-10,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}`, 1),
		asst(`{"input":9223372036854775807,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}`, 2),
		asst(`{"input":9223372036854775807,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}`, 4),
		asst(`{"input":1,"output":1,"reasoning":0,"cache":{"read":1000000001,"write":0}}`, 8),
		asst(`{"input":20,"output":6,"reasoning":0,"cache":{"read":200,"write":0}}`, 0.25),
	} {
		mustExec(t, w, `INSERT INTO message VALUES (?, ?, ?, ?, ?)`, "m"+itoa(int64(i+1)), id, 1100+int64(i)*100, 1100+int64(i)*100, d)
	}
	w.Close()
	got, warns := list(t, newEnv(home, nil, noProcs()))
	s := got[id]
	want := discover.Tokens{Input: 30, Output: 13, CacheRead: 300, CacheWrite: 7}
	if s.Tokens == nil || *s.Tokens != want || s.CostUSD == nil || *s.CostUSD != 0.75 {
		t.Errorf("tokens %+v cost %v, want %+v and 0.75 (valid messages only); warnings %q", s.Tokens, s.CostUSD, want, warns)
	}
	if !strings.Contains(strings.Join(warns, "\n"), "session "+id+": 4 message(s) with a negative or impossible token count left out of its totals") {
		t.Errorf("warnings %q", warns)
	}
}
