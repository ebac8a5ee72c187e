package remote

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// hostile are arguments that would run something, split, or vanish if a
// shell saw them unquoted.
var hostile = []string{
	"",
	"plain",
	"two words",
	"x; touch pwned",
	"$(touch pwned)",
	"`touch pwned`",
	"'; touch pwned; '",
	`"; touch pwned; "`,
	"x\ntouch pwned",
	`x\'; touch pwned #`,
	`x\`,
	`\\`,
	"'",
	"''",
	"a'b'c",
	"~",
	"~root",
	"*",
	"?",
	"[a]",
	"{a,b}",
	"$HOME",
	"${HOME}",
	"=true",
	"%self",
	"!!",
	"a|b&c>d<e",
	"#comment",
	"-n",
	"tab\there",
	"ünïcødé ✓",
	"\x01\x7f",
}

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"status", "status"},
		{"--json", "--json"},
		{"4f1c2a9e-0b1d-4c5e-9f00-aa11bb22cc33", "4f1c2a9e-0b1d-4c5e-9f00-aa11bb22cc33"},
		{"/home/me/code", "/home/me/code"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{`a\b`, `'a'\\'b'`},
		{"=x", "'=x'"},
		{"x; rm -rf ~", "'x; rm -rf ~'"},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// Every hostile argument reaches the program verbatim through each shell a
// remote login shell may be, and nothing else runs.
func TestCommandLineRoundTripsThroughShells(t *testing.T) {
	ran := 0
	for _, sh := range []string{"sh", "dash", "bash", "zsh", "fish"} {
		path, err := exec.LookPath(sh)
		if err != nil {
			continue
		}
		ran++
		t.Run(sh, func(t *testing.T) {
			dir := t.TempDir()
			line := CommandLine(append([]string{"printf", `%s\0`}, hostile...))
			cmd := exec.Command(path, "-c", line)
			cmd.Dir = dir
			cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"} // fish writes its config under HOME
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s -c %s: %v\n%s", sh, line, err, errOut.String())
			}
			got := strings.Split(strings.TrimSuffix(out.String(), "\x00"), "\x00")
			if d := cmp.Diff(hostile, got); d != "" {
				t.Errorf("%s did not pass the arguments verbatim (-want +got):\n%s", sh, d)
			}
			if m, _ := exec.Command("ls", "-A", dir).Output(); len(m) > 0 {
				t.Errorf("%s: something ran: %s", sh, m)
			}
		})
	}
	if ran == 0 {
		t.Skip("no shell found")
	}
}

func TestCommandLineTildeProgram(t *testing.T) {
	if got, want := CommandLine([]string{"~/bin/agent ctl", "list"}), `~/'bin/agent ctl' list`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := CommandLine([]string{"~", "x"}), `'~' x`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestSplitCommand(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"ssh", []string{"ssh"}, false},
		{"  ssh   -F ./ssh_config ", []string{"ssh", "-F", "./ssh_config"}, false},
		{`ssh -F '/path with/space' -o "ProxyJump=a b"`, []string{"ssh", "-F", "/path with/space", "-o", "ProxyJump=a b"}, false},
		{`ssh -i my\ key`, []string{"ssh", "-i", "my key"}, false},
		{`ssh "a\"b" 'c\d' "$HOME"`, []string{"ssh", `a"b`, `c\d`, "$HOME"}, false},
		{`ssh ''`, []string{"ssh", ""}, false},
		{`ssh 'unterminated`, nil, true},
		{`ssh "unterminated`, nil, true},
		{`ssh \`, nil, true},
		{"", nil, false},
	} {
		got, err := SplitCommand(c.in)
		if (err != nil) != c.err {
			t.Errorf("SplitCommand(%q): error %v, want error %v", c.in, err, c.err)
			continue
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("SplitCommand(%q) (-want +got):\n%s", c.in, d)
		}
	}
}

func TestArgv(t *testing.T) {
	r, err := NewRunner("ssh -F 'my config'", "/usr/local/bin/agentctl", "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	got := r.Argv(Host{Name: "gpu", Agentctl: "/opt/agentctl"}, []string{"status", "x; y", "--json"}, 1500*time.Millisecond)
	want := []string{"ssh", "-F", "my config", "-o", "BatchMode=yes", "-o", "ConnectTimeout=2", "-T", "--", "gpu",
		"/opt/agentctl --version-line status 'x; y' --json"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Argv (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"/usr/local/bin/agentctl", "list"}, r.Argv(Host{Name: Local}, []string{"list"}, time.Second)); d != "" {
		t.Errorf("Argv(local) (-want +got):\n%s", d)
	}
	if _, err := NewRunner("ssh 'x", "", ""); err == nil {
		t.Error("NewRunner accepted an unterminated quote in AGENTCTL_SSH")
	}
}

func TestCheckHost(t *testing.T) {
	for _, h := range []string{"", "-oProxyCommand=touch pwned", "a b", "a\nb"} {
		if CheckHost(h) == nil {
			t.Errorf("CheckHost(%q) accepted it", h)
		}
	}
	for _, h := range []string{"gpu", "me@build.example", "10.0.0.7", "local"} {
		if err := CheckHost(h); err != nil {
			t.Errorf("CheckHost(%q): %v", h, err)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		code   int
		stderr string
		want   string
	}{
		{255, "ssh: Could not resolve hostname gpu: Name or service not known\n", "DNS:"},
		{255, "ssh: connect to host 127.0.0.1 port 9: Connection refused\n", "connection refused"},
		{255, "Connection timed out during banner exchange\n", "connection timed out"},
		{255, "me@gpu: Permission denied (publickey).\n", "ssh authentication failed"},
		{255, "Host key verification failed.\n", "host key not known"},
		{127, "sh: 1: agentctl: not found\n", "agentctl is not installed there"},
		{127, "bash: line 1: agentctl: command not found\n", "agentctl is not installed there"},
		{2, "agentctl: flag provided but not defined: -json\n", "too old"},
		{255, "kex_exchange_identification: read: Connection reset by peer\n", "ssh failed: kex_exchange_identification"},
	} {
		if got := classify(c.code, c.stderr, "ssh"); !strings.Contains(got, c.want) {
			t.Errorf("classify(%d, %q) = %q, want it to say %q", c.code, c.stderr, got, c.want)
		}
	}
}

// The version line comes off stdout; stderr is held back until it arrived.
func TestSplitter(t *testing.T) {
	var out, errOut bytes.Buffer
	s := &splitter{out: &out, errOut: &errOut}
	s.writeErr([]byte("Warning: Permanently added\n"))
	s.writeOut([]byte(`{"version":"1.2.3",`))
	if errOut.Len() > 0 || out.Len() > 0 {
		t.Fatalf("wrote before the version line: %q %q", out.String(), errOut.String())
	}
	s.writeOut([]byte("\"protocol\":7}\n[1,"))
	s.writeOut([]byte("2]\n"))
	s.writeErr([]byte("agentctl: warning: x\n"))
	s.finish()
	if d := cmp.Diff(versionLine{"1.2.3", 7}, s.version); d != "" || !s.seen {
		t.Errorf("version line (-want +got):\n%s", d)
	}
	if out.String() != "[1,2]\n" || errOut.String() != "Warning: Permanently added\nagentctl: warning: x\n" {
		t.Errorf("out %q, stderr %q", out.String(), errOut.String())
	}
	r := &Runner{Version: "1.0.0"}
	if m := r.Mismatch("gpu", Result{Version: "1.2.3", Protocol: 7}); !strings.Contains(m, "gpu: agentctl there is version 1.2.3 (protocol 7), this one 1.0.0 (protocol 1)") {
		t.Errorf("Mismatch: %q", m)
	}
	if m := r.Mismatch("gpu", Result{Version: "1.0.1", Protocol: Protocol}); m != "" {
		t.Errorf("Mismatch on the same protocol: %q", m)
	}
}
