package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/remote"
	"github.com/agentctl/agentctl/remote/fleet"
)

func streamsHost(out, errOut io.Writer) *host {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	return &host{IOStreams: &IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
		getenv: func(string) string { return "" }, now: func() time.Time { return now }}
}

// list across hosts: each host's sessions in its order, hosts in the order
// named, each session with its host; the table gets a HOST column.
func TestRemoteListMerge(t *testing.T) {
	outs := []fleet.Answer{
		{Host: remote.Host{Name: "gpu"}, Out: []byte(`[{"id":"g1","adapter":"codex","status":"running","evidence":"process"},{"id":"g2","adapter":"pi","status":"stopped","evidence":"transcript"}]`)},
		{Host: remote.Host{Name: "local"}, Out: []byte(`[]`)},
		{Host: remote.Host{Name: "build"}, Out: []byte(`[{"id":"b1","adapter":"claude-code","status":"idle","evidence":"registry","cwd":"/srv/app"}]`)},
	}
	ss, err := mergeSessions(outs)
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]string
	for _, s := range ss {
		got = append(got, [2]string{s.Host, s.ID})
	}
	if d := cmp.Diff([][2]string{{"gpu", "g1"}, {"gpu", "g2"}, {"build", "b1"}}, got); d != "" {
		t.Errorf("merged sessions (-want +got):\n%s", d)
	}
	if _, err := mergeSessions([]fleet.Answer{{Host: remote.Host{Name: "old"}, Out: []byte(`{"error":"x"}`)}}); err == nil || !strings.Contains(err.Error(), "old:") {
		t.Errorf("a host answering something else than an array: %v", err)
	}

	var out, errOut bytes.Buffer
	s := streamsHost(&out, &errOut)
	failed := false
	if err := printRemoteList(s, listAcrossOptions{json: true}, outs, &failed); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"host": "gpu"`) || strings.Count(out.String(), `"host"`) != 3 || failed {
		t.Errorf("list --json across hosts:\n%s", out.String())
	}
	out.Reset()
	if err := printRemoteList(s, listAcrossOptions{}, outs, &failed); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var heads []string
	for _, l := range lines {
		heads = append(heads, strings.Fields(l)[0])
	}
	if d := cmp.Diff([]string{"HOST", "gpu", "gpu", "build"}, heads); d != "" {
		t.Errorf("list table across hosts, first column (-want +got):\n%s\n%s", d, out.String())
	}
	// -q prints host:id, usable as an argument; --count the number.
	out.Reset()
	if err := printRemoteList(s, listAcrossOptions{quiet: true}, outs, &failed); err != nil || out.String() != "gpu:g1\ngpu:g2\nbuild:b1\n" {
		t.Errorf("list -q across hosts: %v %q", err, out.String())
	}
	out.Reset()
	if err := printRemoteList(s, listAcrossOptions{count: true}, outs, &failed); err != nil || out.String() != "3\n" {
		t.Errorf("list --count across hosts: %v %q", err, out.String())
	}
}

func TestRemoteMetricsMerge(t *testing.T) {
	a := "# HELP agentctl_sessions Sessions by status.\n# TYPE agentctl_sessions gauge\nagentctl_sessions{status=\"running\"} 2\n"
	b := "# HELP agentctl_sessions Sessions by status.\n# TYPE agentctl_sessions gauge\nagentctl_sessions{status=\"running\"} 1\n# HELP agentctl_up Up.\n# TYPE agentctl_up gauge\nagentctl_up 1\n"
	var out, errOut bytes.Buffer
	if err := printRemoteMetrics(streamsHost(&out, &errOut), []fleet.Answer{{Host: remote.Host{Name: "a"}, Out: []byte(a)}, {Host: remote.Host{Name: "b"}, Out: []byte(b)}}); err != nil {
		t.Fatal(err)
	}
	want := `# HELP agentctl_sessions Sessions by status.
# TYPE agentctl_sessions gauge
agentctl_sessions{host="a",status="running"} 2
agentctl_sessions{host="b",status="running"} 1
# HELP agentctl_up Up.
# TYPE agentctl_up gauge
agentctl_up{host="b"} 1
`
	if d := cmp.Diff(want, out.String()); d != "" || errOut.Len() > 0 {
		t.Errorf("metrics across hosts (-want +got):\n%s\n%s", d, errOut.String())
	}
}

// A host's stdout reaches the terminal through the one sanitiser, as its
// stderr does: status, peek, logs HOST:ID, wait across hosts, doctor's
// sections, and a --json answer that is not JSON after all.
func TestRemoteStdoutSanitised(t *testing.T) {
	ssh := filepath.Join(t.TempDir(), "fake-ssh")
	script := `#!/bin/sh
printf '{"version":"test","protocol":1}\n'
printf 'abc running \033]0;pwned\007\033[2J\302\233 \342\200\256evil\n'
printf 'agentctl: warning: \033[31mred\n' >&2
`
	if err := os.WriteFile(ssh, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENTCTL_HOME": t.TempDir(), "NO_COLOR": "1", "AGENTCTL_SSH": ssh}
	for _, args := range [][]string{
		{"--host", "gpu", "status", "gpu:abc"},
		{"--host", "gpu", "peek", "gpu:abc"},
		{"--host", "gpu", "logs", "gpu:abc"},
		{"--host", "gpu", "status", "--json", "gpu:abc"},
		{"--host", "gpu", "--host", "build", "wait", "gpu:abc", "build:def"},
		{"--host", "gpu", "doctor"},
	} {
		var o, e strings.Builder
		s := streamsHost(&o, &e)
		s.getenv = func(k string) string { return env[k] }
		s.executable = os.Executable
		run(context.Background(), append([]string{"agentctl"}, args...), s)
		out, errOut := o.String(), e.String()
		name := strings.Join(args, " ")
		if !strings.Contains(out, `\x1b]0;pwned`) {
			t.Errorf("%s: the host's answer is not there, escaped: %q", name, out)
		}
		assertNoRawControls(t, name, out)
		assertNoRawControls(t, name+" stderr", errOut)
	}
}

// usage across hosts: each host keeps --by without host; grouped by host each
// host's rows (its total for --by host alone) carry it, else equal keys sum.
func TestUsageAcrossMerge(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"usage", "--by", "host", "--since", "30d"}, []string{"usage", "--since", "30d"}},
		{[]string{"usage", "--by=host,day"}, []string{"usage", "--by", "day"}},
		{[]string{"usage", "--by", "model", "--by", "host"}, []string{"usage", "--by", "model"}},
		{[]string{"usage", "--adapter", "codex"}, []string{"usage", "--adapter", "codex"}},
	} {
		if d := cmp.Diff(c.want, usageRemoteFlags(c.in)); d != "" {
			t.Errorf("usageRemoteFlags(%q) (-want +got):\n%s", c.in, d)
		}
	}
	row := func(key map[string]string, sessions int, in int64, usd float64, src string) usageRow {
		return usageRow{Key: key, Sessions: sessions, Tokens: discover.Tokens{Input: in}, TokensTotal: in, CostUSD: usd, CostSource: src}
	}
	a := hostUsage{"gpu", usageOut{Rows: []usageRow{
		row(map[string]string{"adapter": "codex"}, 2, 100, 1.5, "agent"),
		row(map[string]string{"adapter": "pi"}, 1, 10, 0.25, "estimate")},
		Total: row(map[string]string{}, 3, 110, 1.75, "mixed")}}
	b := hostUsage{"build", usageOut{Rows: []usageRow{
		row(map[string]string{"adapter": "codex"}, 1, 5, 0.5, "estimate")},
		Total: row(map[string]string{}, 1, 5, 0.5, "estimate")}}
	down := []fleet.Missing{{Host: "tpu", Cause: "connection refused"}}

	got := mergeUsage([]string{"host"}, []hostUsage{a, b}, down)
	want := []usageHostRow{
		{Host: "build", usageRow: row(map[string]string{"host": "build"}, 1, 5, 0.5, "estimate")},
		{Host: "gpu", usageRow: row(map[string]string{"host": "gpu"}, 3, 110, 1.75, "mixed")},
	}
	if d := cmp.Diff(want, got.Rows, cmp.AllowUnexported(usageHostRow{})); d != "" {
		t.Errorf("--by host rows (-want +got):\n%s", d)
	}
	if d := cmp.Diff(row(map[string]string{}, 4, 115, 2.25, "mixed"), got.Total); d != "" {
		t.Errorf("--by host total (-want +got):\n%s", d)
	}
	got = mergeUsage([]string{"adapter"}, []hostUsage{a, b}, nil)
	want = []usageHostRow{
		{usageRow: row(map[string]string{"adapter": "codex"}, 3, 105, 2.0, "mixed")},
		{usageRow: row(map[string]string{"adapter": "pi"}, 1, 10, 0.25, "estimate")},
	}
	if d := cmp.Diff(want, got.Rows, cmp.AllowUnexported(usageHostRow{})); d != "" {
		t.Errorf("--by adapter across hosts (-want +got):\n%s", d)
	}

	var out bytes.Buffer
	printUsageHosts(&out, mergeUsage([]string{"host", "adapter"}, []hostUsage{a, b}, down))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "HOST ") || !strings.HasPrefix(lines[1], "build  codex") ||
		!strings.HasPrefix(lines[4], "TOTAL ") || lines[6] != "totals exclude: tpu (connection refused)" {
		t.Errorf("usage table across hosts:\n%s", out.String())
	}
}
