package launch

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func codexReq(t *testing.T) *Request {
	bin, _ := filepath.Abs("testdata/fake-codex")
	return &Request{Kind: KindLaunch, Cwd: "/w", Environ: []string{"AGENTCTL_CODEX_BIN=" + bin, "PWD=/elsewhere"}}
}

// Golden argv (docs/agents/codex.md §6, §7): prompt on stdin as "-", -C before resume, only a
// full thread id resumes.
func TestCodexPlanArgv(t *testing.T) {
	r := codexReq(t)
	r.Model = "gpt-5"
	p, err := Codex{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"exec", "--json", "--skip-git-repo-check", "-C", "/w", "-s", "workspace-write", "-m", "gpt-5", "-"}, p.Args); diff != "" {
		t.Errorf("launch argv (-want +got):\n%s", diff)
	}
	if p.SessionID != "" {
		t.Errorf("codex picks its own id; pre-assigned %q", p.SessionID)
	}
	if !contains(p.Env, "PWD=/w") {
		t.Errorf("PWD not set to the cwd: %v", p.Env)
	}
	r = codexReq(t)
	r.Kind, r.SessionID, r.PermissionMode = KindResume, "01a1faea-19e4-7f11-a97a-99c16461e631", "bypassPermissions"
	p, err = Codex{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"exec", "-C", "/w", "resume", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", r.SessionID, "-"}
	if diff := cmp.Diff(want, p.Args); diff != "" {
		t.Errorf("resume argv (-want +got):\n%s", diff)
	}
	r.SessionID = "01a1faea-19e4"
	var ie *InputError
	if _, err := (Codex{}).Plan(r); !errors.As(err, &ie) {
		t.Errorf("a prefix must be refused before spawning (codex would start a new thread): %v", err)
	}
	r = codexReq(t)
	r.AppendSystemPrompt = "x"
	if _, err := (Codex{}).Plan(r); !errors.As(err, &ie) {
		t.Errorf("--append-system-prompt: %v", err)
	}
}

func TestCodexClassify(t *testing.T) {
	ls := func(s ...string) [][]byte {
		var out [][]byte
		for _, x := range s {
			out = append(out, []byte(x))
		}
		return out
	}
	started := `{"type":"thread.started","thread_id":"t"}`
	warn := `{"type":"item.completed","item":{"type":"error","message":"Model metadata not found"}}`
	cases := []struct {
		name    string
		lines   [][]byte
		code    int
		stopped bool
		class   string
	}{
		{"done, with a warning item", ls(started, warn, `{"type":"turn.completed"}`), 0, false, ""},
		{"turn failed", ls(started, `{"type":"turn.failed","error":{"message":"boom"}}`), 1, false, "error"},
		{"error event", ls(started, `{"type":"error","message":"bad"}`), 1, false, "error"},
		{"no thread", ls(`Error: unexpected argument`), 2, false, "startup-failed"},
		{"killed", ls(started), 143, false, "killed"},
		{"stopped by agentctl", ls(started), 1, true, ""},
		{"exit without turn", ls(started), 0, false, "crashed"},
	}
	for _, c := range cases {
		if o := (Codex{}).Classify(c.lines, c.code, c.stopped); o.Class != c.class {
			t.Errorf("%s: class %q (%s), want %q", c.name, o.Class, o.Message, c.class)
		}
	}
}

func TestCodexLaunchAndResumeMismatch(t *testing.T) {
	l := testLauncher(t)
	bin, _ := filepath.Abs("testdata/fake-codex")
	l.Environ = append(l.Environ, "AGENTCTL_CODEX_BIN="+bin)
	sp := spec(workdir(t), "hi")
	sp.Adapter = "codex"
	res, err := l.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.SessionID != "01a1faea-19e4-7f11-a97a-99c16461e631" {
		t.Errorf("thread id = %q, want the one from thread.started", res.Record.SessionID)
	}
	fin, err := l.WaitLaunch(context.Background(), res.Record.ID)
	if err != nil || fin.ExitCode == nil || *fin.ExitCode != 0 || fin.Failure != "" {
		t.Fatalf("codex run: %+v %v", fin, err)
	}
	sp = spec(workdir(t), "again", "FAKE_THREAD=0199aaaa-0000-7000-8000-000000000000")
	sp.Adapter, sp.Kind, sp.SessionID = "codex", KindResume, "01a1faea-19e4-7f11-a97a-99c16461e631"
	_, err = l.Start(context.Background(), sp)
	var se *StartError
	if !errors.As(err, &se) || se.Class != "resume-mismatch" {
		t.Fatalf("resume answered under another thread: %v", err)
	}
}
