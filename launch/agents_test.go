package launch

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/gateway"
	"github.com/google/go-cmp/cmp"
	_ "modernc.org/sqlite"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/jsonl"
)

func ls(s ...string) [][]byte {
	var out [][]byte
	for _, x := range s {
		out = append(out, []byte(x))
	}
	return out
}

func execBin(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func envOf(p *Plan, k string) string {
	v, _ := lookupEnv(p.Env, k)
	return v
}

// docs/agents/opencode.md §6/§7: the prompt never in argv (run quotes positional args), PWD
// and --dir both the cwd, a title tag unique to the launch, --auto for detached
// runs, --session (never -c) with the session's own model to resume.
func TestOpenCodePlanArgv(t *testing.T) {
	bin := execBin(t, "opencode")
	req := func() *Request {
		return &Request{Kind: KindLaunch, Cwd: "/w", LaunchID: "l-0123456789ab", Prompt: "Fix the bug — now\nsecond line",
			Environ: []string{"AGENTCTL_OPENCODE_BIN=" + bin, "PWD=/elsewhere", "XDG_DATA_HOME=/x"}}
	}
	r := req()
	r.Model = "anthropic/claude-sonnet-4-5"
	p, err := OpenCode{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run", "--format", "json", "--dir", "/w", "-m", "anthropic/claude-sonnet-4-5", "--title", "agentctl-01234567", "--auto"}
	if diff := cmp.Diff(want, p.Args); diff != "" {
		t.Errorf("launch argv (-want +got):\n%s", diff)
	}
	if envOf(p, "PWD") != "/w" || envOf(p, "AGENTCTL_LAUNCH_ID") != "l-0123456789ab" || envOf(p, "XDG_DATA_HOME") != "/x" {
		t.Errorf("env: PWD %q AGENTCTL_LAUNCH_ID %q XDG_DATA_HOME %q", envOf(p, "PWD"), envOf(p, "AGENTCTL_LAUNCH_ID"), envOf(p, "XDG_DATA_HOME"))
	}
	if p.SessionID != "" {
		t.Errorf("opencode picks its own id; pre-assigned %q", p.SessionID)
	}
	// No model: omit -m (OpenCode's configured model); default: no --auto.
	r = req()
	r.PermissionMode = "default"
	p, err = OpenCode{}.Plan(r)
	if err != nil || contains(p.Args, "-m") || contains(p.Args, "--auto") {
		t.Errorf("no model, default permissions: %v %v", p.Args, err)
	}
	var ie *InputError
	for _, bad := range []func(*Request){
		func(r *Request) { r.Model = "gpt-4o" }, // bare model → exit 1 inside opencode
		func(r *Request) { r.Model = "/gpt-4o" },
		func(r *Request) { r.PermissionMode = "plan" },
		func(r *Request) { r.AppendSystemPrompt = "x" },
		func(r *Request) { r.Kind, r.SessionID = KindResume, "ses_short" },
	} {
		r := req()
		bad(r)
		if _, err := (OpenCode{}).Plan(r); !errors.As(err, &ie) {
			t.Errorf("%+v: want an input error before spawning, got %v", r, err)
		}
	}
	r = req()
	r.Kind, r.SessionID, r.SessionModel = KindResume, "ses_e0515a303ffe5my0YIIwIWl9lm", "fake/fake-model"
	p, err = OpenCode{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"run", "--session", "ses_e0515a303ffe5my0YIIwIWl9lm", "--format", "json", "--dir", "/w", "-m", "fake/fake-model", "--auto"}
	if diff := cmp.Diff(want, p.Args); diff != "" {
		t.Errorf("resume argv (-want +got):\n%s", diff)
	}
	if p.SessionID != r.SessionID {
		t.Errorf("resume session %q", p.SessionID)
	}
}

func TestOpenCodeTitleHoldsNoPrompt(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"l-abcdef012345", "agentctl-abcdef01"},
		{"l-ab", "agentctl-ab"},
		{"", "agentctl-00000000"},
	} {
		if got := opencodeTitle(c.id); got != c.want {
			t.Errorf("opencodeTitle(%q) = %q, want %q", c.id, got, c.want)
		}
	}
}

func TestOpenCodeConfirmAndClassify(t *testing.T) {
	capture, err := os.ReadFile("testdata/opencode-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	run := splitLines(capture)
	if id, _, ok := (OpenCode{}).Confirm(append(ls("npm lookup failed", "agentctl: launch"), run...), ""); !ok || id != "ses_e0515a303ffe5my0YIIwIWl9lm" {
		t.Errorf("confirm from the event stream: %q %v", id, ok)
	}
	if _, _, ok := (OpenCode{}).Confirm(ls(`{"type":"text","sessionID":"not-an-id"}`), ""); ok {
		t.Error("a malformed sessionID confirmed a session")
	}
	badModel := `{"type":"error","timestamp":1,"sessionID":"ses_e0515a303ffe5my0YIIwIWl9lm","error":{"name":"ProviderModelNotFoundError","data":{"message":"Model not found: gpt-4o/."}}}`
	apiErr := `{"type":"error","timestamp":1,"sessionID":"ses_e0515a303ffe5my0YIIwIWl9lm","error":{"name":"APIError","data":{"message":"Bad Request"}}}`
	aborted := `{"type":"error","sessionID":"ses_e0515a303ffe5my0YIIwIWl9lm","error":{"name":"MessageAbortedError","data":{"message":"Aborted"}}}`
	cases := []struct {
		name    string
		lines   [][]byte
		code    int
		stopped bool
		class   string
	}{
		{"done", run, 0, false, ""},
		{"done, exit code unknown", run, -1, false, ""},
		{"bad model (an error event still names the session)", ls(badModel), 1, false, "bad-model"},
		{"api error, exit 0", append(run[:1:1], []byte(apiErr)), 0, false, "error"},
		{"SIGTERM", run[:1], 143, false, "killed"},
		{"stopped by agentctl", run[:1], 143, true, ""},
		{"aborted by agentctl", ls(aborted), 0, true, ""},
		{"aborted by someone else", ls(aborted), 0, false, "aborted"},
		{"startup failure", ls("Error: unknown flag --nope"), 1, false, "startup-failed"},
		{"unknown end, turn open", run[:1], -1, false, "crashed"},
	}
	for _, c := range cases {
		o := (OpenCode{}).Classify(c.lines, c.code, c.stopped)
		if o.Class != c.class {
			t.Errorf("%s: class %q (%s), want %q", c.name, o.Class, o.Message, c.class)
		}
	}
	if o := (OpenCode{}).Classify(ls("Error: unknown flag --nope"), 1, false); !strings.Contains(o.Message, "unknown flag --nope") {
		t.Errorf("startup failure message %q lacks the stderr line", o.Message)
	}
}

// The session row found by title (and directory, and creation time) confirms a
// launch; a new user message confirms a resume. Only a live WAL database is
// read, so nothing is ever created next to OpenCode's database.
func TestOpenCodeProbe(t *testing.T) {
	home := t.TempDir()
	data := filepath.Join(home, ".local", "share", "opencode")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(data, "opencode.db")
	environ := []string{"HOME=" + home}
	spawned := time.Now()
	p := &Probe{Kind: KindLaunch, Cwd: "/w", Environ: environ, Spawned: spawned,
		Argv: []string{"run", "--format", "json", "--dir", "/w", "--title", "agentctl-01234567"}}
	if _, ok := (OpenCode{}).Probe(p); ok {
		t.Fatal("confirmed without a database")
	}
	db, err := sql.Open("sqlite", "file:"+url.PathEscape(path)+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	now := spawned.UnixMilli()
	for _, q := range []string{
		`CREATE TABLE session (id TEXT PRIMARY KEY, title TEXT, directory TEXT, time_created INTEGER)`,
		`CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	ins := func(id, title, dir string, created int64) {
		if _, err := db.Exec(`INSERT INTO session VALUES (?, ?, ?, ?)`, id, title, dir, created); err != nil {
			t.Fatal(err)
		}
	}
	// Same title elsewhere, or from before the spawn: not ours.
	ins("ses_aaaaaaaaaaaaaaaaaaaaaaaaaa", "agentctl-01234567", "/other", now)
	ins("ses_bbbbbbbbbbbbbbbbbbbbbbbbbb", "agentctl-01234567", "/w", now-60_000)
	if id, ok := (OpenCode{}).Probe(p); ok {
		t.Fatalf("confirmed %s, which is not this launch's row", id)
	}
	ins("ses_cccccccccccccccccccccccccc", "agentctl-01234567", "/w", now+900)
	if id, ok := (OpenCode{}).Probe(p); !ok || id != "ses_cccccccccccccccccccccccccc" {
		t.Errorf("probe = %q %v; want the row with this launch's title", id, ok)
	}
	r := &Probe{Kind: KindResume, Want: "ses_bbbbbbbbbbbbbbbbbbbbbbbbbb", Environ: environ, Spawned: spawned}
	if _, err := db.Exec(`INSERT INTO message VALUES ('msg_1', ?, ?, '{"role":"user"}')`, r.Want, now-60_000); err != nil {
		t.Fatal(err)
	}
	if _, ok := (OpenCode{}).Probe(r); ok {
		t.Error("an old user message confirmed a resume")
	}
	if _, err := db.Exec(`INSERT INTO message VALUES ('msg_2', ?, ?, '{"role":"user"}')`, r.Want, now+500); err != nil {
		t.Fatal(err)
	}
	if id, ok := (OpenCode{}).Probe(r); !ok || id != r.Want {
		t.Errorf("resume probe = %q %v", id, ok)
	}
}

// docs/agents/pi.md §6/§7 and §9: -p last, the prompt only on stdin, resume by absolute
// path; pi-rust splits provider/model and takes --print as a boolean.
func TestPiPlanArgv(t *testing.T) {
	pi, rust := execBin(t, "pi"), execBin(t, "pi-rust")
	req := func() *Request {
		return &Request{Kind: KindLaunch, Cwd: "/w", Environ: []string{"AGENTCTL_PI_BIN=" + pi, "AGENTCTL_PI_RUST_BIN=" + rust, "PWD=/elsewhere", "PI_CODING_AGENT_DIR=/a"}}
	}
	r := req()
	r.Model, r.AppendSystemPrompt = "fakeoai/fake-model:high", "be terse"
	p, err := Pi{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"--mode", "json", "--model", "fakeoai/fake-model:high", "--append-system-prompt", "be terse", "-p"}, p.Args); diff != "" {
		t.Errorf("pi launch argv (-want +got):\n%s", diff)
	}
	if envOf(p, "PWD") != "/w" || envOf(p, "PI_CODING_AGENT_DIR") != "/a" || p.SessionID != "" {
		t.Errorf("env PWD %q PI_CODING_AGENT_DIR %q, id %q", envOf(p, "PWD"), envOf(p, "PI_CODING_AGENT_DIR"), p.SessionID)
	}
	file := "/h/.pi/agent/sessions/--w--/2026-11-20T21-43-38-723Z_01a1faea-41e2-70ee-8a46-eefd8057a11e.jsonl"
	r = req()
	r.Kind, r.SessionID, r.SessionPath = KindResume, "01a1faea-41e2-70ee-8a46-eefd8057a11e", file
	p, err = Pi{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"--mode", "json", "--session", file, "-p"}, p.Args); diff != "" {
		t.Errorf("pi resume argv (-want +got):\n%s", diff)
	}
	var ie *InputError
	for _, path := range []string{"", "01a1faea", "rel/x.jsonl", "/abs/x.json"} {
		r.SessionPath = path
		if _, err := (Pi{}).Plan(r); !errors.As(err, &ie) {
			t.Errorf("resume by %q: want an input error (only an absolute .jsonl path is safe), got %v", path, err)
		}
	}
	r = req()
	r.PermissionMode = "plan"
	if _, err := (Pi{}).Plan(r); !errors.As(err, &ie) {
		t.Errorf("--permission-mode for pi: %v", err)
	}

	r = req()
	r.Model = "fakeoai/fake-model"
	p, err = PiRust{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"--mode", "json", "--print", "--provider", "fakeoai", "--model", "fake-model"}, p.Args); diff != "" {
		t.Errorf("pi-rust launch argv (-want +got):\n%s", diff)
	}
	if p.Bin != rust {
		t.Errorf("pi-rust binary %s, want %s (never the TypeScript pi)", p.Bin, rust)
	}
	r.Kind, r.SessionID, r.SessionPath, r.Model = KindResume, "5f0c3a9e-2c1b-4d7e-9a61-0b3f2e1d4c5b", "/h/s/2026-11-20T21-43-38.723Z_5f0c3a9e.jsonl", ""
	p, err = PiRust{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"--session", r.SessionPath, "--mode", "json", "--print"}, p.Args); diff != "" {
		t.Errorf("pi-rust resume argv (-want +got):\n%s", diff)
	}
	r = &Request{Kind: KindLaunch, Cwd: "/w", LookPath: func(name string) (string, error) {
		if name == "pi" {
			return "/usr/bin/pi", nil
		}
		return "", errors.New("not found")
	}}
	if _, err := (PiRust{}).Plan(r); err == nil || !strings.Contains(err.Error(), "pi-rust binary not found") {
		t.Errorf("pi-rust must not fall back to pi on $PATH: %v", err)
	}
}

func TestPiConfirmAndClassify(t *testing.T) {
	read := func(name string) [][]byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return splitLines(b)
	}
	print, term := read("pi-print.jsonl"), read("pi-sigterm-before-first-reply.jsonl")
	if id, _, ok := (Pi{}).Confirm(append(ls("(node:1) Warning: x"), print...), ""); !ok || id != "01a1faea-b485-714f-9f73-af5206c9d06d" {
		t.Errorf("confirm: %q %v", id, ok)
	}
	errRun := append(print[:5:5], []byte(`{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"Connection error."}}`))
	cases := []struct {
		name    string
		lines   [][]byte
		code    int
		stopped bool
		class   string
	}{
		{"done", print, 0, false, ""},
		{"done, exit code unknown", print, -1, false, ""},
		{"json mode exits 0 on a provider error", errRun, 0, false, "error"},
		{"SIGTERM before the first reply, by agentctl", term, 143, true, ""},
		{"SIGTERM before the first reply, by someone else", term, 143, false, "killed"},
		{"no header", ls("No models available. Use --list-models"), 1, false, "startup-failed"},
		{"ended before the first reply", term, 0, false, "crashed"},
	}
	for _, c := range cases {
		o := (Pi{}).Classify(c.lines, c.code, c.stopped)
		if o.Class != c.class {
			t.Errorf("%s: class %q (%s), want %q", c.name, o.Class, o.Message, c.class)
		}
	}
	if o := (Pi{}).Classify(errRun, 0, false); o.Message != "Connection error." {
		t.Errorf("error message %q", o.Message)
	}
	if o := (Pi{}).Classify(ls("No models available. Use --list-models"), 1, false); !strings.Contains(o.Message, "No models available") {
		t.Errorf("startup failure message %q", o.Message)
	}
}

// A supervised pi run end to end against a fake pi: the id is the header's,
// the prompt arrives verbatim on stdin (prompts that pi would parse as flags or
// files in argv), and a json-mode error that exits 0 is still a failure.
func TestPiLaunchSupervised(t *testing.T) {
	l := testLauncher(t)
	bin, _ := filepath.Abs("testdata/fake-pi")
	out := filepath.Join(t.TempDir(), "prompt")
	l.Environ = append(l.Environ, "AGENTCTL_PI_BIN="+bin, "FAKE_PROMPT_OUT="+out)
	prompt := "--\n@notes.md -x\n---yaml"
	sp := spec(workdir(t), prompt)
	sp.Adapter = "pi"
	res, err := l.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.SessionID != "01a1faea-41e2-70ee-8a46-eefd8057a11e" {
		t.Errorf("session %q, want the header id", res.Record.SessionID)
	}
	for _, a := range res.Record.Argv {
		if strings.Contains(a, "notes.md") {
			t.Errorf("prompt text in argv: %q", res.Record.Argv)
		}
	}
	fin, err := l.WaitLaunch(context.Background(), res.Record.ID)
	if err != nil || fin.ExitCode == nil || *fin.ExitCode != 0 || fin.Failure != "" {
		t.Fatalf("pi run: %+v %v", fin, err)
	}
	if got := readFile(t, out); got != prompt {
		t.Errorf("prompt on stdin %q, want %q", got, prompt)
	}

	sp = spec(workdir(t), "fail", "FAKE_STOP=error")
	sp.Adapter = "pi"
	res, err = l.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	fin, err = l.WaitLaunch(context.Background(), res.Record.ID)
	if err != nil || fin.ExitCode == nil || *fin.ExitCode != 0 || !strings.HasPrefix(fin.Failure, "error: Connection error.") {
		t.Errorf("json-mode error run: exit %v failure %q (%v)", fin.ExitCode, fin.Failure, err)
	}

	sp = spec(workdir(t), "hi", "FAKE_NOHEADER=1")
	sp.Adapter = "pi"
	_, err = l.Start(context.Background(), sp)
	var se *StartError
	if !errors.As(err, &se) || se.Class != "startup-failed" || !strings.Contains(se.Message, "No models available") {
		t.Errorf("pi without models: %v", err)
	}
}

func TestStopPlanFor(t *testing.T) {
	for _, c := range []struct {
		adapter string
		first   syscall.Signal
		toPID   bool
	}{
		{"opencode", syscall.SIGTERM, false}, // run ignores SIGINT
		{"pi", syscall.SIGTERM, false},       // SIGINT kills pi without cleanup
		{"codex", syscall.SIGINT, true},
	} {
		p := StopPlanFor(c.adapter, false)
		if len(p.Steps) == 0 || p.Steps[0].Signal != c.first || p.IntToPIDOnly != c.toPID || p.Steps[len(p.Steps)-1].Signal != syscall.SIGKILL {
			t.Errorf("%s: %+v", c.adapter, p)
		}
	}
	for _, a := range []string{"claude-code", "pi-rust"} {
		if p := StopPlanFor(a, false); p.Steps != nil {
			t.Errorf("%s: want the default SIGINT-first escalation, got %+v", a, p)
		}
	}
}

func TestOpenClawPlan(t *testing.T) {
	r := &Request{Kind: KindLaunch, LaunchID: "l-0123456789ab", Environ: []string{"OPENCLAW_GATEWAY_TOKEN=t"}}
	p, err := OpenClaw{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.SessionID != "agent:main:l-0123456789ab" || p.Bin != "" || len(p.Args) != 0 || envOf(p, "OPENCLAW_GATEWAY_TOKEN") != "t" {
		t.Errorf("plan %+v", p)
	}
	var ie *InputError
	for _, bad := range []*Request{
		{Kind: KindLaunch, PermissionMode: "plan"},
		{Kind: KindLaunch, AppendSystemPrompt: "x"},
		{Kind: KindLaunch, UserEnv: []string{"A=b"}},
		{Kind: KindResume, SessionID: "3644c83f-45fb-4d83-b305-a4b7d0ba922c"},
	} {
		if _, err := (OpenClaw{}).Plan(bad); !errors.As(err, &ie) {
			t.Errorf("%+v: want an input error, got %v", bad, err)
		}
	}
	r = &Request{Kind: KindResume, SessionID: "agent:main:task1"}
	if p, err := (OpenClaw{}).Plan(r); err != nil || p.SessionID != "agent:main:task1" {
		t.Errorf("resume plan %+v %v", p, err)
	}
	for _, c := range []struct {
		row  ocRow
		stop bool
		code int
		cls  string
	}{
		{ocRow{Status: "done"}, false, 0, ""},
		{ocRow{Status: "failed"}, false, 1, "error"},
		{ocRow{Status: "timeout"}, false, 1, "error"},
		{ocRow{Status: "killed"}, false, 1, "aborted"},
		{ocRow{Status: "killed"}, true, 1, ""},
	} {
		if code, o := runEnd(c.row, c.stop); code != c.code || o.Class != c.cls {
			t.Errorf("runEnd(%+v, stop %v) = %d %q", c.row, c.stop, code, o.Class)
		}
	}
}

// The device identity is created once (0600) and never regenerated: the
// gateway binds run ownership to it.
func TestEnsureDevice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	d1, path, err := ensureDevice(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 || filepath.Base(path) != gateway.DeviceFile {
		t.Fatalf("device file %s: %v %v", path, st.Mode(), err)
	}
	before, _ := os.ReadFile(path)
	d2, _, err := ensureDevice(dir)
	after, _ := os.ReadFile(path)
	if err != nil || d1.ID != d2.ID || !bytes.Equal(before, after) {
		t.Errorf("second call changed the identity: %s → %s (%v)", d1.ID, d2.ID, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".openclaw-device-*")); len(m) != 0 {
		t.Errorf("temp files left: %v", m)
	}
}

// Every agent has exactly one driver, under its own name.
func TestDriversCoverTheRegistry(t *testing.T) {
	var got []string
	for _, d := range drivers() {
		got = append(got, d.Name())
	}
	var launched []string
	for _, a := range agents.All() {
		if a.Launch {
			launched = append(launched, a.Name)
		}
	}
	if strings.Join(got, ",") != strings.Join(launched, ",") {
		t.Errorf("drivers %v, agents that launch %v", got, launched)
	}
	if _, err := DriverFor("aider"); err == nil || err.Error() != agents.UnknownError("aider").Error() {
		t.Errorf("DriverFor(aider): %v", err)
	}
	// Every known agent launches today; a read-only row would get this error,
	// naming the ones that do.
	if err := NotLaunchedError("some-agent"); !strings.Contains(err.Error(), "does not start or resume them yet; start it yourself, or use one of: claude-code, codex") {
		t.Errorf("NotLaunchedError: %v", err)
	}
}

// splitLines is what the supervisor hands a driver: the complete lines of a log.
func splitLines(b []byte) [][]byte {
	var out [][]byte
	_, _, _ = jsonl.Read(bytes.NewReader(b), 0, func(line []byte, _ int64) error {
		out = append(out, append([]byte(nil), line...))
		return nil
	})
	return out
}
