package fleet

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/remote"
)

// commands are the specs of agentctl's commands that the tests below take
// (main.go declares them where it registers the commands).
var commands = map[string]Spec{
	"wait":    {Mode: PerHost, IDs: AllIDs},
	"status":  {Mode: OneHost, IDs: FirstID},
	"resume":  {Mode: OneHost, IDs: FirstID, Stdin: SecondArg},
	"send":    {Mode: OneHost, IDs: FirstID, Stdin: SecondArg},
	"launch":  {Mode: OneHost, Stdin: PromptFlag},
	"compare": {Mode: OneHost, IDs: FirstName},
	"list":    {Mode: Merged, AskJSON: true},
}

// streams print warnings and relayed lines to errOut as agentctl does.
func streams(out, errOut io.Writer) *Streams {
	var mu sync.Mutex
	return &Streams{In: strings.NewReader(""), Out: out,
		Warn:  func(m string) { mu.Lock(); fmt.Fprintf(errOut, "agentctl: warning: %s\n", m); mu.Unlock() },
		Relay: func(l string) { mu.Lock(); fmt.Fprintln(errOut, l); mu.Unlock() }}
}

func TestStripHostFlagsAndArgsFor(t *testing.T) {
	o := Options{known: []remote.Host{{Name: "gpu"}, {Name: "build"}, {Name: remote.Local}}}
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
		{"compare", []string{"gpu:g-1a2b"}, []string{"gpu:g-1a2b"}},
	} {
		if d := cmp.Diff(c.want, commands[c.name].idArgs(c.args)); d != "" {
			t.Errorf("idArgs(%s, %q) (-want +got):\n%s", c.name, c.args, d)
		}
	}
}

func TestPromptOnStdin(t *testing.T) {
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
		{"send", []string{"send", "--json", "abc", "note: $(id)\n"}, 2, []string{"send", "--json", "abc", "-"}, "note: $(id)\n"},
		{"send", []string{"send", "abc", "-"}, 2, []string{"send", "abc", "-"}, "from my stdin"},
		{"send", []string{"send", "-f", "-", "abc"}, 1, []string{"send", "-f", "-", "abc"}, "from my stdin"},
		{"send", []string{"send", "--file=-", "--json", "abc"}, 1, []string{"send", "--file=-", "--json", "abc"}, "from my stdin"},
		// -f FILE is a file on that host: nothing of ours goes over stdin.
		{"send", []string{"send", "-f", "notes.md", "abc"}, 1, []string{"send", "-f", "notes.md", "abc"}, ""},
		// An id that is "-" is not -f's value.
		{"send", []string{"send", "-f", "notes.md", "-"}, 1, []string{"send", "-f", "notes.md", "-"}, ""},
	} {
		in := strings.NewReader("from my stdin")
		r, args := onStdin(commands[c.name].Stdin, c.args, c.npos, in)
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

func TestRemoteArrayAndNDJSON(t *testing.T) {
	outs := []Answer{
		{Host: remote.Host{Name: "a"}, Out: []byte("[\n  {\"directory\": \"/x\"}\n]\n")},
		{Host: remote.Host{Name: "b"}, Out: []byte(`{"ok": true}`)},
	}
	var out, errOut bytes.Buffer
	s := streams(&out, &errOut)
	if _, err := PrintArray(s, outs); err != nil {
		t.Fatal(err)
	}
	want := "[\n  {\n    \"host\": \"a\",\n    \"directory\": \"/x\"\n  },\n  {\n    \"host\": \"b\",\n    \"ok\": true\n  }\n]\n"
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("array across hosts (-want +got):\n%s", d)
	}
	out.Reset()
	nd := []Answer{
		{Host: remote.Host{Name: "a"}, Out: []byte("{\"type\":\"session.started\"}\n{\"type\":\"session.ended\"}\n")},
		{Host: remote.Host{Name: "b"}, Out: []byte("{\"type\":\"lock.acquired\"}\n")},
	}
	if _, err := PrintNDJSON(s, nd); err != nil {
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
	j := newJSONHostWriter(&out, "gpu", &mu, nil)
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
	w := &hostErrWriter{st: streams(io.Discard, &errOut), host: "gpu"}
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

// A host's text goes through the caller's sanitiser as it streams; a
// character cut in two by a write is held back until it is whole.
func TestTextWriter(t *testing.T) {
	var out bytes.Buffer
	w := &textWriter{w: &out, text: func(s string) string { return fmt.Sprintf("[%s]", s) }}
	for _, p := range []string{"ab\xe2", "\x80", "\xaec\n", "\xe2"} {
		w.Write([]byte(p))
	}
	w.Close()
	if got, want := out.String(), "[ab][\u202ec\n][\xe2]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// --parallel bounds the ssh calls in flight: six hosts, --parallel 2, a fake
// ssh that records how many of its kind run at once.
func TestParallelBound(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "ssh")
	os.WriteFile(script, []byte(`#!/bin/sh
d=`+dir+`/running
mkdir -p "$d"
touch "$d/$$"
ls "$d" | wc -l >> `+dir+`/seen
sleep 0.3
rm "$d/$$"
echo '{"version":"test","protocol":1}'
echo '[]'
`), 0o700)
	// want: exactly 2 with --parallel 2; by default (16) more than 2 (all six
	// unless the machine is too busy to start them within 0.3 s).
	for _, c := range []struct{ parallel, want int }{{2, 2}, {0, 3}} {
		os.Remove(filepath.Join(dir, "seen"))
		var hosts []string
		for i := range 6 {
			hosts = append(hosts, fmt.Sprintf("h%d", i))
		}
		o, ok, err := Select(commands["list"], Line{Name: "list", Host: hosts, Argv: []string{"agentctl", "list"}, Parallel: c.parallel}, nil, "config.json")
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		o.Spec.Print = PrintArray
		o.Runner = &remote.Runner{SSH: []string{"/bin/sh", script}}
		o.Timeout = 5 * time.Second
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), streams(&out, &errOut), o); err != nil {
			t.Fatalf("%v\n%s", err, errOut.String())
		}
		b, _ := os.ReadFile(filepath.Join(dir, "seen"))
		most := 0
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			most = max(most, n)
		}
		if len(strings.Fields(string(b))) != 6 || (c.parallel > 0 && most != c.want) || most < c.want {
			t.Errorf("--parallel %d: at most %d calls at once (%q); want %d", c.parallel, most, b, c.want)
		}
	}
}

// The footer of usage names a host's cause in a few words.
func TestShortCause(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"connection refused: no sshd listening there (ssh: connect to host 127.0.0.1 port 1: Connection refused)", "connection refused"},
		{"connection timed out (ssh: connect to host x port 22: Connection timed out)", "connection timed out"},
		{"no answer within 4s (the host is slow or hangs; raise --timeout)", "no answer within 4s"},
		{"interrupted", "interrupted"},
	} {
		if got := Short(c.in); got != c.want {
			t.Errorf("Short(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// --watch across hosts: each round is one call that returns at once, so the
// hosts never get --watch.
func TestWatchNotSent(t *testing.T) {
	sp := commands["list"]
	sp.Watch = true
	o, ok, err := Select(sp, Line{Name: "list", Host: []string{"gpu"}, Argv: []string{"agentctl", "list", "--watch", "-a", "--watch=true"}}, nil, "config.json")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if d := cmp.Diff([]string{"list", "-a", "--json"}, o.argsFor(remote.Host{Name: "gpu"}, true, nil)); d != "" {
		t.Errorf("list --watch across hosts sends (-want +got):\n%s", d)
	}
}
