package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/remote"
)

func streamsHost(out, errOut io.Writer) *host {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	return &host{IOStreams: &IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
		getenv: func(string) string { return "" }, now: func() time.Time { return now }}
}

func TestStripHostFlagsAndArgsFor(t *testing.T) {
	o := remoteOptions{known: []remote.Host{{Name: "gpu"}, {Name: "build"}, {Name: remote.Local}}}
	for _, c := range []struct {
		argv  []string
		npos  int
		host  string
		json  bool
		flags []string
		args  []string
	}{
		{[]string{"agentctl", "--host", "gpu", "list", "-a", "--json", "--strict", "--host=build", "--hosts", "all"}, 0, "gpu", true,
			[]string{"list", "-a"}, []string{"list", "-a", "--json"}},
		{[]string{"agentctl", "status", "--home", "/here", "--adapter", "codex", "gpu:abc"}, 1, "gpu", false,
			[]string{"status", "--home", "/here", "--adapter", "codex"}, []string{"status", "--adapter", "codex", "gpu:abc"}},
		{[]string{"agentctl", "status", "--home=/here", "gpu:abc"}, 1, "local", false,
			[]string{"status", "--home=/here"}, []string{"status", "--home=/here", "gpu:abc"}},
		{[]string{"agentctl", "wait", "--any", "gpu:a", "build:b", "gpu:c"}, 3, "gpu", true,
			[]string{"wait", "--any"}, []string{"wait", "--any", "--json", "gpu:a", "build:b", "gpu:c"}},
		// An OpenClaw session key is not host:id.
		{[]string{"agentctl", "status", "--host", "gpu", "agent:main:main"}, 1, "gpu", false,
			[]string{"status"}, []string{"status", "agent:main:main"}},
	} {
		flags := stripHostFlags(c.argv, c.npos)
		if d := cmp.Diff(c.flags, flags); d != "" {
			t.Errorf("stripHostFlags(%q) (-want +got):\n%s", c.argv, d)
		}
		o.flags = flags
		if d := cmp.Diff(c.args, o.argsFor(remote.Host{Name: c.host}, c.json, c.argv[len(c.argv)-c.npos:])); d != "" {
			t.Errorf("argsFor(%s, %q) (-want +got):\n%s", c.host, c.argv, d)
		}
	}
}

func TestIDArgs(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"wait", []string{"gpu:a", "b"}, []string{"gpu:a", "b"}},
		{"status", []string{"gpu:a"}, []string{"gpu:a"}},
		{"resume", []string{"abc", "gpu: do this"}, []string{"abc"}},
		{"launch", []string{"claude-code"}, nil},
		{"list", nil, nil},
	} {
		if d := cmp.Diff(c.want, idArgs(c.name, c.args)); d != "" {
			t.Errorf("idArgs(%s, %q) (-want +got):\n%s", c.name, c.args, d)
		}
	}
}

func TestPromptOnStdin(t *testing.T) {
	in := strings.NewReader("from my stdin")
	for _, c := range []struct {
		name  string
		args  []string
		npos  int
		want  []string
		stdin string
	}{
		{"launch", []string{"launch", "-p", "fix it; $(rm -rf ~)", "--cwd", "/x", "claude-code"}, 1,
			[]string{"launch", "-p", "-", "--cwd", "/x", "claude-code"}, "fix it; $(rm -rf ~)"},
		{"launch", []string{"launch", "--prompt=multi\nline", "codex"}, 1, []string{"launch", "--prompt=-", "codex"}, "multi\nline"},
		{"launch", []string{"launch", "-p", "-"}, 0, []string{"launch", "-p", "-"}, "from my stdin"},
		{"resume", []string{"resume", "abc", "next: `id`"}, 2, []string{"resume", "abc", "-"}, "next: `id`"},
		{"status", []string{"status", "abc"}, 1, []string{"status", "abc"}, ""},
	} {
		r, args := promptOnStdin(c.name, c.args, c.npos, in)
		if d := cmp.Diff(c.want, args); d != "" {
			t.Errorf("%s %q: args (-want +got):\n%s", c.name, c.args, d)
		}
		got := ""
		if r != nil {
			b, _ := io.ReadAll(r)
			got = string(b)
		}
		if got != c.stdin {
			t.Errorf("%s %q: stdin %q, want %q", c.name, c.args, got, c.stdin)
		}
	}
}

func TestWithHost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"id":"a"}`, `{"host":"gpu","id":"a"}`},
		{"{\n  \"id\": \"a\"\n}", "{\"host\":\"gpu\",\"id\": \"a\"\n}"},
		{`{}`, `{"host":"gpu"}`},
		{`{"host":"other","id":"a"}`, `{"host":"other","id":"a"}`},
		{`[1]`, `[1]`},
		{`"s"`, `"s"`},
	} {
		if got := string(withHost([]byte(c.in), "gpu")); got != c.want {
			t.Errorf("withHost(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// list across hosts: each host's sessions in its order, hosts in the order
// named, each session with its host; the table gets a HOST column.
func TestRemoteListMerge(t *testing.T) {
	outs := []hostOut{
		{host: remote.Host{Name: "gpu"}, out: []byte(`[{"id":"g1","adapter":"codex","status":"running","evidence":"process"},{"id":"g2","adapter":"pi","status":"stopped","evidence":"transcript"}]`)},
		{host: remote.Host{Name: "local"}, out: []byte(`[]`)},
		{host: remote.Host{Name: "build"}, out: []byte(`[{"id":"b1","adapter":"claude-code","status":"idle","evidence":"registry","cwd":"/srv/app"}]`)},
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
	if _, err := mergeSessions([]hostOut{{host: remote.Host{Name: "old"}, out: []byte(`{"error":"x"}`)}}); err == nil || !strings.Contains(err.Error(), "old:") {
		t.Errorf("a host answering something else than an array: %v", err)
	}

	var out, errOut bytes.Buffer
	s := streamsHost(&out, &errOut)
	failed := false
	if err := printRemoteList(s, remoteOptions{json: true}, outs, &failed); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"host": "gpu"`) || strings.Count(out.String(), `"host"`) != 3 || failed {
		t.Errorf("list --json across hosts:\n%s", out.String())
	}
	out.Reset()
	if err := printRemoteList(s, remoteOptions{}, outs, &failed); err != nil {
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
	if err := printRemoteList(s, remoteOptions{quiet: true}, outs, &failed); err != nil || out.String() != "gpu:g1\ngpu:g2\nbuild:b1\n" {
		t.Errorf("list -q across hosts: %v %q", err, out.String())
	}
	out.Reset()
	if err := printRemoteList(s, remoteOptions{count: true}, outs, &failed); err != nil || out.String() != "3\n" {
		t.Errorf("list --count across hosts: %v %q", err, out.String())
	}
}

func TestRemoteArrayAndNDJSON(t *testing.T) {
	outs := []hostOut{
		{host: remote.Host{Name: "a"}, out: []byte("[\n  {\"directory\": \"/x\"}\n]\n")},
		{host: remote.Host{Name: "b"}, out: []byte(`{"ok": true}`)},
	}
	var out, errOut bytes.Buffer
	s := streamsHost(&out, &errOut)
	if err := printRemoteArray(s, outs); err != nil {
		t.Fatal(err)
	}
	want := "[\n  {\n    \"host\": \"a\",\n    \"directory\": \"/x\"\n  },\n  {\n    \"host\": \"b\",\n    \"ok\": true\n  }\n]\n"
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("array across hosts (-want +got):\n%s", d)
	}
	out.Reset()
	nd := []hostOut{
		{host: remote.Host{Name: "a"}, out: []byte("{\"type\":\"session.started\"}\n{\"type\":\"session.ended\"}\n")},
		{host: remote.Host{Name: "b"}, out: []byte("{\"type\":\"lock.acquired\"}\n")},
	}
	if err := printRemoteNDJSON(s, nd); err != nil {
		t.Fatal(err)
	}
	want = `{"host":"a","type":"session.started"}
{"host":"a","type":"session.ended"}
{"host":"b","type":"lock.acquired"}
`
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("NDJSON across hosts (-want +got):\n%s", d)
	}
}

// A stream (wait --json, events --follow) gets the host on each value as it
// completes, however the bytes arrive.
func TestJSONHostWriterStreams(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	j := newJSONHostWriter(&out, "gpu", &mu)
	for _, p := range []string{`{"id":`, `"a"}`, "\n{\"id\":\"b\"}\n[{\"x\":1}", "]\n"} {
		j.Write([]byte(p))
	}
	j.Close()
	want := "{\"host\":\"gpu\",\"id\":\"a\"}\n{\"host\":\"gpu\",\"id\":\"b\"}\n[\n  {\n    \"host\": \"gpu\",\n    \"x\": 1\n  }\n]\n"
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("streamed JSON (-want +got):\n%s", d)
	}
}

func TestHostErrWriter(t *testing.T) {
	var errOut bytes.Buffer
	s := streamsHost(io.Discard, &errOut)
	w := &hostErrWriter{s: s, host: "gpu"}
	w.Write([]byte("agentctl: warning: codex: slow\nagentctl: session not found: x\n  abc codex /x"))
	w.flush()
	want := "agentctl: warning: gpu: codex: slow\nagentctl: gpu: session not found: x\n  abc codex /x\n"
	if d := cmp.Diff(want, errOut.String()); d != "" || !w.warned {
		t.Errorf("relayed stderr (-want +got):\n%s", d)
	}
}

func TestCombineWaitCodes(t *testing.T) {
	for _, c := range []struct {
		codes []int
		any   bool
		want  int
	}{
		{[]int{0, 0}, false, 0},
		{[]int{0, 1}, false, 1},
		{[]int{124, 0}, false, 124},
		{[]int{124, 1}, false, 1},
		{[]int{3, 0}, false, 3},
		{[]int{124, 0}, true, 0},
		{[]int{124, 1}, true, 1},
		{[]int{124, 124}, true, 124},
	} {
		if got := combineWaitCodes(c.codes, c.any); got != c.want {
			t.Errorf("combineWaitCodes(%v, any=%v) = %d, want %d", c.codes, c.any, got, c.want)
		}
	}
}

func TestRemoteMetricsMerge(t *testing.T) {
	a := "# HELP agentctl_sessions Sessions by status.\n# TYPE agentctl_sessions gauge\nagentctl_sessions{status=\"running\"} 2\n"
	b := "# HELP agentctl_sessions Sessions by status.\n# TYPE agentctl_sessions gauge\nagentctl_sessions{status=\"running\"} 1\n# HELP agentctl_up Up.\n# TYPE agentctl_up gauge\nagentctl_up 1\n"
	var out, errOut bytes.Buffer
	if err := printRemoteMetrics(streamsHost(&out, &errOut), []hostOut{{host: remote.Host{Name: "a"}, out: []byte(a)}, {host: remote.Host{Name: "b"}, out: []byte(b)}}); err != nil {
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
