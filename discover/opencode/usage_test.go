package opencode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
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
			copyTree(t, testdata(t, "legacy/storage"), storage)
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
