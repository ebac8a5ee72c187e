package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/e2e/synth"
)

// usageFromList is what `usage --by by` must print, computed here from `list -a
// --json` for the same window: each session's tokens and cost less what a fork
// inherited (extra tokens_inherited, cost_inherited_usd).
func usageFromList(t *testing.T, env map[string]string, home, since string, by []string, extra ...string) map[string]usageRow {
	t.Helper()
	out, stderr, code := runCLI(t, env, append([]string{"--home", home, "list", "-a", "--since", since, "--json"}, extra...)...)
	if code != 0 {
		t.Fatalf("list: exit %d\n%s", code, stderr)
	}
	var ss []discover.Session
	if err := json.Unmarshal([]byte(out), &ss); err != nil {
		t.Fatal(err)
	}
	want := map[string]usageRow{}
	for i := range ss {
		s := &ss[i]
		var parts []string
		for _, k := range by {
			var v string
			switch k {
			case "adapter":
				v = s.Adapter
			case "model":
				v = orDash(s.Model)
			case "day", "week", "month":
				continue // split by records' times: compareUsage sums over them
			case "cwd":
				v = orDash(s.Cwd)
			}
			parts = append(parts, k+"="+v)
		}
		key := strings.Join(parts, ",")
		r := want[key]
		r.Sessions++
		if s.Tokens != nil {
			tk := *s.Tokens
			if inh, ok := s.Extra["tokens_inherited"].(map[string]any); ok {
				tk.Input -= int64(inh["input"].(float64))
				tk.Output -= int64(inh["output"].(float64))
				tk.CacheRead -= int64(inh["cache_read"].(float64))
				tk.CacheWrite -= int64(inh["cache_write"].(float64))
			}
			r.Tokens.Add(tk)
			r.TokensTotal += tk.Input + tk.Output + tk.CacheRead + tk.CacheWrite
		}
		if s.CostUSD != nil {
			c := *s.CostUSD
			if inh, ok := s.Extra["cost_inherited_usd"].(float64); ok {
				c -= inh
			}
			r.CostUSD += c
		}
		want[key] = r
	}
	return want
}

func usageRows(t *testing.T, env map[string]string, home string, args ...string) usageOut {
	t.Helper()
	out, stderr, code := runCLI(t, env, append([]string{"--home", home, "usage", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("usage %v: exit %d\n%s", args, code, stderr)
	}
	var u usageOut
	if err := json.Unmarshal([]byte(out), &u); err != nil {
		t.Fatalf("usage --json: %v\n%s", err, out)
	}
	return u
}

func compareUsage(t *testing.T, what string, got usageOut, want map[string]usageRow) {
	t.Helper()
	seen := map[string]bool{}
	var total usageRow
	// A session's tokens spread over the days, weeks and months of its records:
	// list cannot tell them apart, so the rows are compared summed over those
	// keys (sessions are then counted once per row they appear in).
	timed := false
	merged := map[string]usageRow{}
	var keys []string
	for _, r := range got.Rows {
		var parts []string
		for _, k := range got.By {
			if k == "day" || k == "week" || k == "month" {
				timed = true
				continue
			}
			parts = append(parts, k+"="+r.Key[k])
		}
		key := strings.Join(parts, ",")
		m, ok := merged[key]
		if !ok {
			keys = append(keys, key)
		}
		m.Sessions += r.Sessions
		m.Tokens.Add(r.Tokens)
		m.TokensTotal += r.TokensTotal
		m.CostUSD += r.CostUSD
		merged[key] = m
		total.Sessions += r.Sessions
		total.TokensTotal += r.TokensTotal
	}
	for _, key := range keys {
		r := merged[key]
		seen[key] = true
		w, ok := want[key]
		if !ok {
			t.Errorf("%s: usage has a row %s that list does not", what, key)
			continue
		}
		if timed && r.Sessions >= w.Sessions {
			r.Sessions = w.Sessions // a session over several days is in several rows
		}
		if r.Sessions != w.Sessions || r.Tokens != w.Tokens || r.TokensTotal != w.TokensTotal || math.Abs(r.CostUSD-w.CostUSD) > 1e-9 {
			t.Errorf("%s: row %s = %d sessions %+v (%d) $%v; list says %d %+v (%d) $%v", what, key,
				r.Sessions, r.Tokens, r.TokensTotal, r.CostUSD, w.Sessions, w.Tokens, w.TokensTotal, w.CostUSD)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("%s: list has sessions for %s, usage has no row", what, k)
		}
	}
	if (!timed && got.Total.Sessions != total.Sessions) || got.Total.Sessions > total.Sessions || got.Total.TokensTotal != total.TokensTotal {
		t.Errorf("%s: total %+v is not the sum of the rows (%d sessions, %d tokens)", what, got.Total, total.Sessions, total.TokensTotal)
	}
}

// usage over the recorded homes equals the sums of list -a --json, grouped
// every way, in the wide window and the default one.
func TestUsageMatchesList(t *testing.T) {
	home, state := fixtureHome(t)
	env := map[string]string{"AGENTCTL_HOME": state, "HOME": home, "TZ": "UTC"}
	for _, by := range [][]string{{"adapter"}, {"model"}, {"day", "model"}, {"adapter", "cwd"}} {
		got := usageRows(t, env, home, "--since", "3650d", "--by", strings.Join(by, ","))
		want := usageFromList(t, env, home, "3650d", by)
		compareUsage(t, fmt.Sprint(by), got, want)
		if got.Total.Sessions == 0 || got.Total.TokensTotal == 0 {
			t.Fatalf("%v: no sessions counted over the fixtures: %+v", by, got.Total)
		}
	}
	// --adapter narrows both the same way.
	got := usageRows(t, env, home, "--since", "3650d", "--adapter", "claude-code", "--by", "model")
	want := usageFromList(t, env, home, "3650d", []string{"model"}, "--adapter", "claude-code")
	compareUsage(t, "--adapter claude-code", got, want)
	if len(got.Rows) == 0 || got.Total.Sessions >= usageRows(t, env, home, "--since", "3650d").Total.Sessions {
		t.Errorf("--adapter claude-code did not narrow: %+v", got.Total)
	}
}

func TestUsageBadInput(t *testing.T) {
	home, state := fixtureHome(t)
	env := map[string]string{"AGENTCTL_HOME": state, "HOME": home}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--by", "hour"}, "--by"},
		{[]string{"--by", "day,colour"}, "--by"},
		{[]string{"--since", "yesterday"}, "--since"},
		{[]string{"--until", "-3d"}, "--until"},
		{[]string{"--since", "1d", "--until", "2d"}, "--until"},
	} {
		_, stderr, code := runCLI(t, env, append([]string{"--home", home, "usage"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("usage %v: exit %d %q; want 2 naming %s", tc.args, code, stderr, tc.want)
		}
	}
}

// The table has one row per group and a total row, costs labelled.
func TestUsageTable(t *testing.T) {
	home, state := fixtureHome(t)
	env := map[string]string{"AGENTCTL_HOME": state, "HOME": home}
	out, stderr, code := runCLI(t, env, "--home", home, "usage", "--since", "3650d", "--by", "adapter")
	if code != 0 {
		t.Fatalf("usage: %d %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "ADAPTER") || !strings.HasPrefix(lines[len(lines)-2], "TOTAL") {
		t.Fatalf("usage table:\n%s", out)
	}
	for _, a := range []string{"claude-code", "codex", "opencode", "pi"} {
		if !strings.Contains(out, "\n"+a+" ") {
			t.Errorf("no %s row:\n%s", a, out)
		}
	}
}

// The same over a generated home of many sessions across many days, cwds and
// models (Claude Code, Codex, Pi).
func TestUsageMatchesListGeneratedHome(t *testing.T) {
	dir := t.TempDir()
	home, state := filepath.Join(dir, "home"), filepath.Join(dir, "state")
	if err := synth.WriteClaudeHome(home, 120, 2<<10, 20<<10, 3); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteCodexHome(home, 60, 3); err != nil {
		t.Fatal(err)
	}
	if err := synth.WritePiHome(home, 30, 3); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENTCTL_HOME": state, "HOME": home, "TZ": "UTC"}
	for _, by := range [][]string{{"day", "adapter"}, {"model"}, {"cwd"}} {
		got := usageRows(t, env, home, "--since", "3650d", "--by", strings.Join(by, ","))
		compareUsage(t, fmt.Sprint(by), got, usageFromList(t, env, home, "3650d", by))
		if got.Total.Sessions < 200 || len(got.Rows) < 3 {
			t.Fatalf("%v: %d sessions in %d rows; the generated home has 210 over several days, models and cwds", by, got.Total.Sessions, len(got.Rows))
		}
	}
}
