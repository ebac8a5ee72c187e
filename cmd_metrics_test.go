package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// fixtureHome copies the recorded agent homes into a temp dir (nothing a command
// writes may touch testdata/) with the recorded files an hour old, as the CLI
// transcripts see them, and returns it with an empty state dir beside it.
func fixtureHome(t *testing.T) (home, state string) {
	t.Helper()
	dir := t.TempDir()
	home, state = filepath.Join(dir, "home"), filepath.Join(dir, "state")
	if err := os.CopyFS(home, os.DirFS("testdata/home")); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2026, 11, 20, 21, 55, 0, 0, time.UTC)
	if err := filepath.WalkDir(home, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, old, old)
	}); err != nil {
		t.Fatal(err)
	}
	return home, state
}

// runCLI runs one agentctl command line in-process.
func runCLI(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	s := &host{IOStreams: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, now: time.Now,
		getenv: func(k string) string {
			if v, ok := env[k]; ok {
				return v
			}
			return os.Getenv(k)
		}}
	// TEST_NOW pins the clock, as in the CLI transcripts (main_test.go).
	if v := env["TEST_NOW"]; v != "" {
		now, err := time.Parse(time.RFC3339, v)
		if err != nil {
			t.Fatalf("TEST_NOW: %v", err)
		}
		s.now = func() time.Time { return now }
	}
	code = run(context.Background(), append([]string{"agentctl"}, args...), s)
	return out.String(), errb.String(), code
}

func parseExposition(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("metrics output does not parse: %v\n%s", err, text)
	}
	return mfs
}

// series returns a family's samples as "k=v,k=v" → value.
func series(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		v := m.GetGauge().GetValue()
		if m.Counter != nil {
			v = m.GetCounter().GetValue()
		}
		out[strings.Join(ls, ",")] = v
	}
	return out
}

// nonZero drops zero-filled series.
func nonZero(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// The counts, tokens and cost metrics reports are exactly those of the sessions
// `list -a --json` prints for the same home and window.
func TestMetricsMatchList(t *testing.T) {
	home, state := fixtureHome(t)
	env := map[string]string{"AGENTCTL_HOME": state, "HOME": home}
	for _, window := range []string{"3650d", "7d"} {
		listOut, stderr, code := runCLI(t, env, "--home", home, "list", "-a", "--since", window, "--json")
		if code != 0 {
			t.Fatalf("list: exit %d: %s", code, stderr)
		}
		var ss []discover.Session
		if err := json.Unmarshal([]byte(listOut), &ss); err != nil {
			t.Fatal(err)
		}
		if window == "3650d" {
			forks := 0
			for _, s := range ss {
				if s.Extra["tokens_inherited"] != nil {
					forks++
				}
			}
			if forks != 1 {
				t.Errorf("%d sessions with inherited tokens, want 1 (the fork 9ee4fdd2)", forks)
			}
		}
		if window == "3650d" && len(ss) < 20 {
			t.Fatalf("fixture listing has only %d sessions", len(ss))
		}
		wantSessions, wantTokens, wantCost := map[string]float64{}, map[string]float64{}, map[string]float64{}
		for _, s := range ss {
			wantSessions["adapter="+s.Adapter+",status="+s.Status]++
			// Own: a fork's inherited turns count once (extra tokens_inherited).
			own, usd := s.Own()
			if s.Tokens != nil {
				for class, n := range map[string]int64{"input": own.Input, "output": own.Output, "cache_read": own.CacheRead, "cache_write": own.CacheWrite} {
					wantTokens["adapter="+s.Adapter+",class="+class] += float64(n)
				}
			}
			if s.CostUSD != nil {
				wantCost["adapter="+s.Adapter] += usd
			}
		}

		out, stderr, code := runCLI(t, env, "--home", home, "metrics", "--since", window)
		if code != 0 {
			t.Fatalf("metrics: exit %d: %s", code, stderr)
		}
		mfs := parseExposition(t, out)
		approx := cmp.Comparer(func(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 })
		if d := cmp.Diff(nonZero(wantSessions), nonZero(series(mfs["agentctl_sessions"]))); d != "" {
			t.Errorf("--since %s: agentctl_sessions vs list (-list +metrics):\n%s", window, d)
		}
		if d := cmp.Diff(nonZero(wantTokens), nonZero(series(mfs["agentctl_session_tokens_total"]))); d != "" {
			t.Errorf("--since %s: agentctl_session_tokens_total vs list (-list +metrics):\n%s", window, d)
		}
		if d := cmp.Diff(nonZero(wantCost), nonZero(series(mfs["agentctl_session_cost_usd_total"])), approx); d != "" {
			t.Errorf("--since %s: agentctl_session_cost_usd_total vs list (-list +metrics):\n%s", window, d)
		}
		up := series(mfs["agentctl_adapter_up"])
		for _, a := range allAdapters() {
			if up["adapter="+a.Name()] != 1 {
				t.Errorf("agentctl_adapter_up{adapter=%q} = %v, want 1 on the fixture home", a.Name(), up["adapter="+a.Name()])
			}
		}
	}
}

// stateWithHistory is a state dir with locks and a journal of ended launches.
func stateWithHistory(t *testing.T, state string) {
	t.Helper()
	st := meta.NewStore(state)
	dir := t.TempDir()
	if _, err := locks.Acquire(st, locks.Lock{Directory: dir, Type: locks.Manual, LockedBy: "ana", LockedAt: time.Now()}, false); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-3 * time.Hour).UTC()
	for i, typ := range []string{meta.EventStopped, meta.EventFailed, meta.EventStopped} {
		id := "l-" + string(rune('a'+i))
		if err := st.AppendEvent(meta.Event{Type: meta.EventLaunched, Adapter: "codex", LaunchID: id, Timestamp: t0}); err != nil {
			t.Fatal(err)
		}
		ended := t0.Add(time.Duration(i+1) * 20 * time.Minute)
		sess := map[string]any{"started_at": t0.Format(time.RFC3339), "ended_at": ended.Format(time.RFC3339), "exit_code": i}
		if err := st.AppendEvent(meta.Event{Type: typ, Adapter: "codex", LaunchID: id, Timestamp: ended, Session: sess}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMetricsJournalAndLocks(t *testing.T) {
	home, state := fixtureHome(t)
	stateWithHistory(t, state)
	out, stderr, code := runCLI(t, map[string]string{"AGENTCTL_HOME": state}, "--home", home, "metrics")
	if code != 0 {
		t.Fatalf("metrics: exit %d: %s", code, stderr)
	}
	mfs := parseExposition(t, out)
	if d := cmp.Diff(map[string]float64{"type=manual": 1}, nonZero(series(mfs["agentctl_locks"]))); d != "" {
		t.Errorf("locks (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]float64{"adapter=codex,outcome=completed": 1, "adapter=codex,outcome=failed": 2},
		nonZero(series(mfs["agentctl_launches_total"]))); d != "" {
		t.Errorf("launches (-want +got):\n%s", d)
	}
	h := mfs["agentctl_session_duration_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 20*60+40*60+60*60 {
		t.Errorf("duration histogram: count %d sum %v, want 3 and 7200", h.GetSampleCount(), h.GetSampleSum())
	}
}

// The exposition passes Prometheus's own checker. CI installs promtool
// (.ci/run); with AGENTCTL_E2E=require a missing promtool fails the test.
func TestMetricsPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("AGENTCTL_E2E") == "require" {
			t.Fatal("promtool not on PATH (AGENTCTL_E2E=require); install Debian's prometheus package")
		}
		t.Skip("promtool not on PATH; install Debian's prometheus package, or set AGENTCTL_E2E=require to make this a failure")
	}
	home, state := fixtureHome(t)
	stateWithHistory(t, state)
	out, stderr, code := runCLI(t, map[string]string{"AGENTCTL_HOME": state}, "--home", home, "metrics", "--since", "3650d")
	if code != 0 {
		t.Fatalf("metrics: exit %d: %s", code, stderr)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(out)
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\n--- input:\n%s", err, res, out)
	}
	if len(bytes.TrimSpace(res)) > 0 {
		t.Errorf("promtool check metrics complained:\n%s", res)
	}
}
