package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/e2e/harness"
)

// usage across hosts (issue 36 item 1) against real sshd on loopback: each
// host's row is that host's own `usage --json` (its total, or its rows with
// --by host,day), the TOTAL their sum; a closed port and a host that never
// answers are named in a warning and under the totals, exit 0, 1 with --strict.
func TestUsageAcrossHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("real sshd test skipped with -short")
	}
	t.Parallel()
	n := harness.NewSSHNet(t)
	envs := map[string]harness.Env{
		"hosta": harness.HostEnv(t, claudeHome(t, 4, 31)),
		"hostb": harness.HostEnv(t, claudeHome(t, 3, 32)),
	}
	n.Start(t, "hosta", envs["hosta"])
	n.Start(t, "hostb", envs["hostb"])
	n.AddClosed(t, "closed")
	n.AddHanging(t, "wedged")
	a := harness.NewAgentctl(t, harness.TempDir(t))
	a.Env = a.Env.With("AGENTCTL_SSH", n.SSHCommand())
	writeHostsConfig(t, a.State, `["hosta", "hostb", "closed", "wedged"]`)

	own := func(h string, by ...string) map[string]any {
		t.Helper()
		args := []string{"usage", "--since", "30d", "--json"}
		if len(by) > 0 {
			args = append(args, "--by", strings.Join(by, ","))
		}
		out, errOut, code := runAs(t, envs[h], args...)
		if code != 0 {
			t.Fatalf("%s's own usage: exit %d\n%s", h, code, errOut)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%s's own usage --json: %v\n%s", h, err, out)
		}
		return v
	}
	across := func(args ...string) (map[string]any, string, int) {
		t.Helper()
		out, errOut, code := a.Run(t, append([]string{"usage", "--hosts", "all", "--since", "30d", "--timeout", "2s", "--json"}, args...)...)
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("usage --hosts all %q: exit %d, not JSON: %v\n%s\n%s", args, code, err, out, errOut)
		}
		return v, errOut, code
	}
	withHost := func(row any, h string) map[string]any {
		r := row.(map[string]any)
		r["host"] = h
		k := r["key"].(map[string]any)
		k["host"] = h
		return r
	}

	got, errOut, code := across("--by", "host")
	if code != 0 {
		t.Fatalf("usage --hosts all --by host: exit %d\n%s", code, errOut)
	}
	var want []any
	var sessions float64
	for _, h := range []string{"hosta", "hostb"} {
		tot := own(h)["total"].(map[string]any)
		if tot["tokens_total"].(float64) == 0 {
			t.Fatalf("%s's own total has no tokens: the fixture proves nothing", h)
		}
		sessions += tot["sessions"].(float64)
		want = append(want, withHost(tot, h))
	}
	if d := cmp.Diff(want, got["rows"]); d != "" {
		t.Errorf("usage --by host: the host rows are not each host's own total (-want +got):\n%s", d)
	}
	if s := got["total"].(map[string]any)["sessions"]; s != sessions {
		t.Errorf("TOTAL sessions = %v, want %v (the sum over the hosts)", s, sessions)
	}
	for _, w := range []string{"warning: closed: connection refused", "warning: wedged: connection timed out"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr does not say %q:\n%s", w, errOut)
		}
	}
	wantEx := []any{map[string]any{"host": "closed", "cause": "connection refused"}, map[string]any{"host": "wedged", "cause": "connection timed out"}}
	if d := cmp.Diff(wantEx, got["excluded"]); d != "" {
		t.Errorf("excluded hosts (-want +got):\n%s", d)
	}

	// --by host,day: each host's own rows by day, with its host.
	got, _, _ = across("--by", "host,day")
	want = nil
	for _, h := range []string{"hosta", "hostb"} {
		for _, r := range own(h, "day")["rows"].([]any) {
			want = append(want, withHost(r, h))
		}
	}
	if d := cmp.Diff(want, got["rows"]); d != "" {
		t.Errorf("usage --by host,day: not each host's own rows by day (-want +got):\n%s", d)
	}

	// The table: a HOST column, a TOTAL row, the footer naming the hosts left out.
	out, _, code := a.Run(t, "usage", "--hosts", "all", "--since", "30d", "--timeout", "2s", "--by", "host")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 6 || !strings.HasPrefix(lines[0], "HOST ") || !strings.HasPrefix(lines[1], "hosta ") ||
		!strings.HasPrefix(lines[2], "hostb ") || !strings.HasPrefix(lines[3], "TOTAL ") ||
		lines[5] != "totals exclude: closed (connection refused), wedged (connection timed out)" {
		t.Errorf("usage --hosts all --by host (table): exit %d\n%s", code, out)
	}
	if _, _, code := a.Run(t, "usage", "--hosts", "all", "--timeout", "2s", "--strict"); code != 1 {
		t.Errorf("usage --hosts all --strict with hosts down: exit %d, want 1", code)
	}
	if _, errOut, code := a.Run(t, "usage", "--hosts", "all", "--by", "hots"); code != 2 || !strings.Contains(errOut, `--by "hots"`) {
		t.Errorf("usage --hosts all --by hots: exit %d, %q; want a usage error", code, errOut)
	}
	// Without hosts, host is no key and --strict no flag of usage.
	for _, args := range [][]string{{"usage", "--by", "host,day"}, {"usage", "--strict"}} {
		if _, errOut, code := a.Run(t, args...); code != 2 || !strings.Contains(errOut, "only across hosts") {
			t.Errorf("%q on this machine: exit %d, %q; want 2, only across hosts", args, code, errOut)
		}
	}
}
