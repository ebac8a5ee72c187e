package opencode

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// The home fixture's three open sessions, all in /home/dev/frontend:
const (
	sesTERM     = "ses_e051289a0ffeqK7anT8uiJbjZe" // killed mid-reply; prompt at 1795211229104
	sesEarly    = "ses_e050d02e5ffeukngcXSM5wIgrW" // user message only; prompt at 1795211591141
	sesListener = "ses_e050c7e55ffe0bXcOLdALSOg2m" // killed mid-reply; created 1795211624874
	sesDone     = "ses_e0513e0d3ffeb4Nc0mnqJKxBsR" // finish=stop
	sesAborted  = "ses_e0511ef9bffeSVrWS3Clgxzegt" // MessageAbortedError
)

// fakeProc describes one process for the fake table.
type fakeProc struct {
	pid, ppid int
	comm, exe string
	argv      []string
	cwd       string
	env       []string
	startMS   int64 // 0: unknown
}

func table(ps ...fakeProc) *proc.Fake {
	f := noProcs()
	f.Args, f.Cwds, f.Exes, f.Envs = map[int][]string{}, map[int]string{}, map[int]string{1: "/usr/lib/systemd/systemd"}, map[int][]string{}
	for _, p := range ps {
		f.Procs = append(f.Procs, proc.Process{PID: p.pid, PPID: p.ppid, PGID: p.pid, Comm: p.comm, StartTicks: uint64(p.startMS)})
		f.Args[p.pid] = p.argv
		if p.cwd != "" {
			f.Cwds[p.pid] = p.cwd
		}
		if p.exe != "" {
			f.Exes[p.pid] = p.exe
		}
		if p.env != nil {
			f.Envs[p.pid] = p.env
		}
	}
	return f
}

// ocRun is `opencode run` started at startMS in dir (PWD and cwd).
func ocRun(pid int, dir string, startMS int64, args ...string) fakeProc {
	return fakeProc{pid: pid, ppid: 1, comm: "opencode", exe: "/home/dev/.npm/bin/opencode",
		argv: append([]string{"opencode", "run", "--format", "json"}, args...), cwd: dir, env: []string{"PWD=" + dir}, startMS: startMS}
}

type st struct{ Status, Evidence string }

func statuses(t *testing.T, env *discover.Env, ids ...string) map[string]st {
	t.Helper()
	got, _ := list(t, env)
	out := map[string]st{}
	for _, id := range ids {
		s, ok := got[id]
		if !ok {
			t.Fatalf("%s not listed", id)
		}
		out[id] = st{s.Status, s.Evidence}
	}
	return out
}

var (
	running  = st{discover.StatusRunning, discover.EvidenceProcess}
	unknownP = st{discover.StatusUnknown, discover.EvidenceProcess}
	crashed  = st{discover.StatusFailed, discover.EvidenceTranscript}
	stopped  = st{discover.StatusStopped, discover.EvidenceTranscript}
)

func TestProcessInference(t *testing.T) {
	home := testdata(t, "home")
	fe := "/home/dev/frontend"
	cases := []struct {
		name  string
		procs []fakeProc
		want  map[string]st
	}{
		{"no opencode process: open turns crashed, closed ones stopped", nil,
			map[string]st{sesTERM: crashed, sesEarly: crashed, sesListener: crashed, sesDone: stopped, sesAborted: stopped}},
		{"a run started just before the newest session: only that one", []fakeProc{ocRun(500, fe, 1795211624000)},
			map[string]st{sesTERM: crashed, sesEarly: crashed, sesListener: running, sesDone: stopped}},
		{"a run started after every prompt + 2 s: none", []fakeProc{ocRun(500, fe, 1795211630000)},
			map[string]st{sesTERM: crashed, sesEarly: crashed, sesListener: crashed}},
		{"prompt 1.9 s before the start still matches (btime rounding)", []fakeProc{ocRun(500, fe, 1795211624970+1900)},
			map[string]st{sesListener: running, sesEarly: crashed}},
		{"one process, two open sessions after its start: unknown", []fakeProc{ocRun(500, fe, 1795211500000)},
			map[string]st{sesTERM: crashed, sesEarly: unknownP, sesListener: unknownP}},
		{"two processes for one session: unknown", []fakeProc{ocRun(500, fe, 1795211624000), ocRun(501, fe, 1795211624100)},
			map[string]st{sesListener: unknownP, sesEarly: crashed}},
		{"another directory: no match", []fakeProc{ocRun(500, "/home/dev/tools", 1795211624000)},
			map[string]st{sesListener: crashed}},
		{"--dir beats PWD and cwd", []fakeProc{func() fakeProc {
			p := ocRun(500, "/elsewhere", 1795211624000, "--dir", fe)
			return p
		}()}, map[string]st{sesListener: running}},
		{"relative --dir resolves against PWD", []fakeProc{ocRun(500, "/home/dev", 1795211624000, "--dir=frontend")},
			map[string]st{sesListener: running}},
		{"a TUI in the directory", []fakeProc{{pid: 700, ppid: 1, comm: "opencode", argv: []string{"opencode"}, cwd: fe, env: []string{"PWD=" + fe}, startMS: 1795211600000}},
			map[string]st{sesListener: running, sesEarly: crashed}},
		{"a TUI given the project path", []fakeProc{{pid: 700, ppid: 1, comm: "opencode", argv: []string{"opencode", fe}, cwd: "/", startMS: 1795211600000}},
			map[string]st{sesListener: running}},
		{"serve may host any directory: open turns unknown, closed stay stopped", []fakeProc{{pid: 800, ppid: 1, comm: "opencode",
			argv: []string{"opencode", "serve", "--port", "4096"}, cwd: "/", env: []string{"PWD=/"}, startMS: 1795211000000}},
			map[string]st{sesTERM: unknownP, sesEarly: unknownP, sesListener: unknownP, sesDone: stopped, sesAborted: stopped}},
		{"commands that never run a turn are ignored", []fakeProc{
			{pid: 900, ppid: 1, comm: "opencode", argv: []string{"opencode", "db", "path"}, cwd: fe, startMS: 1795211600000},
			{pid: 901, ppid: 1, comm: "opencode", argv: []string{"opencode", "--print-logs", "session", "list"}, cwd: fe, startMS: 1795211600000},
			{pid: 902, ppid: 1, comm: "opencode", argv: []string{"opencode", "--log-level", "DEBUG", "export", sesListener}, cwd: fe, startMS: 1795211600000}},
			map[string]st{sesListener: crashed}},
		{"run --session names its session, even between turns", []fakeProc{ocRun(500, "/home/dev", 1795212000000, "--session", sesDone)},
			map[string]st{sesDone: running, sesListener: crashed}},
		{"run -s --fork writes a new session: a directory candidate", []fakeProc{ocRun(500, fe, 1795211624000, "-s", sesDone, "--fork")},
			map[string]st{sesDone: stopped, sesListener: running}},
		{"found by exe when comm differs", []fakeProc{{pid: 500, ppid: 1, comm: "MainThread", exe: "/opt/opencode/bin/opencode",
			argv: []string{"/opt/opencode/bin/opencode", "run"}, cwd: fe, env: []string{"PWD=" + fe}, startMS: 1795211624000}},
			map[string]st{sesListener: running}},
		{"found by argv[0] when exe is unreadable", []fakeProc{{pid: 500, ppid: 1, comm: "bun",
			argv: []string{"/usr/local/bin/opencode", "run"}, cwd: fe, startMS: 1795211624000}},
			map[string]st{sesListener: running}},
		{"a wrapper and its child are one process", []fakeProc{ocRun(600, fe, 1795211624000), func() fakeProc {
			p := ocRun(601, fe, 1795211624010)
			p.ppid = 600
			return p
		}()}, map[string]st{sesListener: running}},
		{"unknown start time: unknown, not running", []fakeProc{ocRun(500, fe, 0)},
			map[string]st{sesListener: unknownP, sesTERM: unknownP, sesEarly: unknownP}},
		{"unreadable directory: unknown", []fakeProc{{pid: 500, ppid: 1, comm: "opencode", argv: []string{"opencode", "run"}, startMS: 1795211624000}},
			map[string]st{sesListener: unknownP, sesTERM: crashed}},
		{"other programs are not opencode", []fakeProc{{pid: 500, ppid: 1, comm: "vim", exe: "/usr/bin/vim", argv: []string{"vim", "opencode"}, cwd: fe, startMS: 1795211624000}},
			map[string]st{sesListener: crashed}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ids := make([]string, 0, len(c.want))
			for id := range c.want {
				ids = append(ids, id)
			}
			got := statuses(t, newEnv(home, nil, table(c.procs...)), ids...)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// An inferred live session carries the process, marked inferred, without an end.
func TestInferredSessionFields(t *testing.T) {
	got, _ := list(t, newEnv(testdata(t, "home"), nil, table(ocRun(500, "/home/dev/frontend", 1795211624000))))
	s := got[sesListener]
	if s.PID != 500 || !s.Inferred || s.EndedAt != nil || s.Evidence != discover.EvidenceProcess {
		t.Errorf("pid %d inferred %v ended %v evidence %q", s.PID, s.Inferred, s.EndedAt, s.Evidence)
	}
	want := "pid 500 (opencode run in /home/dev/frontend) started before its latest prompt; assistant message open (no time.completed)"
	if s.EvidenceDetail != want {
		t.Errorf("detail %q\nwant   %q", s.EvidenceDetail, want)
	}
}

// Without a process table an open turn is unknown (never running, never failed);
// a closed turn still reads from the database.
func TestNoProcessTable(t *testing.T) {
	got := statuses(t, newEnv(testdata(t, "home"), nil, &proc.Fake{NoProcs: true}), sesListener, sesEarly, sesDone, sesAborted)
	want := map[string]st{
		sesListener: {discover.StatusUnknown, discover.EvidenceNone},
		sesEarly:    {discover.StatusUnknown, discover.EvidenceNone},
		sesDone:     stopped, sesAborted: stopped,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A nil table is the same as none.
	if got := statuses(t, newEnv(testdata(t, "home"), nil, nil), sesListener); got[sesListener].Status != discover.StatusUnknown {
		t.Errorf("nil table: %v", got)
	}
}

// A process agentctl launched for a known session is the core's (launch record):
// it is not matched to another session of the same directory.
func TestLaunchedProcessIsNotACandidate(t *testing.T) {
	procs := table(ocRun(500, "/home/dev/frontend", 1795211624000))
	env := newEnv(testdata(t, "home"), nil, procs)
	env.Launches = []meta.Launch{{ID: "l-1", Adapter: Name, SessionID: "ses_e0600000fffeSomeOtherSess1", PID: 500, StartTicks: 1795211624000, Cwd: "/home/dev/frontend"}}
	if got := statuses(t, env, sesListener); got[sesListener] != crashed {
		t.Errorf("with the pid claimed by a launch record: %v", got)
	}
	// A launch whose session id is not known yet may be this very session.
	env.Launches[0].SessionID = ""
	if got := statuses(t, env, sesListener); got[sesListener] != running {
		t.Errorf("with an id-less launch record: %v", got)
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		argv []string
		want ocProc
	}{
		{[]string{"opencode"}, ocProc{Kind: kindTUI}},
		{[]string{"opencode", "."}, ocProc{Kind: kindTUI, Dir: "."}},
		{[]string{"opencode", "run", "--format", "json", "--dir", "/r", "-m", "a/b", "--title", "t"}, ocProc{Kind: kindRun, Dir: "/r"}},
		{[]string{"opencode", "run", "-s", "ses_x", "--dir=/r"}, ocProc{Kind: kindRun, Dir: "/r", Session: "ses_x"}},
		{[]string{"opencode", "run", "--session=ses_x", "--fork"}, ocProc{Kind: kindRun}},
		{[]string{"opencode", "run", "--", "--session", "ses_x"}, ocProc{Kind: kindRun}},
		{[]string{"opencode", "--log-level", "INFO", "serve"}, ocProc{Kind: kindHost}},
		{[]string{"opencode", "web"}, ocProc{Kind: kindHost}},
		{[]string{"opencode", "acp"}, ocProc{Kind: kindHost}},
		{[]string{"opencode", "-s", "ses_x", "-m", "a/b", "/home/dev/p"}, ocProc{Kind: kindTUI, Dir: "/home/dev/p"}},
		{[]string{"opencode", "--session=ses_x", "--continue"}, ocProc{Kind: kindTUI}},
		{[]string{"opencode", "pr", "42"}, ocProc{Kind: kindTUI}},
		{[]string{"opencode", "attach", "http://127.0.0.1:4096"}, ocProc{Kind: kindOther}},
		{[]string{"opencode", "stats"}, ocProc{Kind: kindOther}},
	}
	for _, c := range cases {
		if got := classify(c.argv); got != c.want {
			t.Errorf("%q: got %+v, want %+v", c.argv, got, c.want)
		}
	}
}

// Status never depends on the clock: the same evidence gives the same answer at
// any "now" (pitfalls 5 and 9 rest on this).
func TestStatusIgnoresTheClock(t *testing.T) {
	home := testdata(t, "home")
	var first map[string]discover.Session
	for _, now := range []int64{1795211158249 + 5000, 1795211625969 + 5000, 1795211625969 + 30*86400000} {
		env := newEnv(home, nil, noProcs())
		env.Now = func() time.Time { return time.UnixMilli(now) }
		got, _ := list(t, env)
		if first == nil {
			first = got
			continue
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("now=%d changed the listing:\n%s", now, diff)
		}
	}
}

// A turn that ended on the provider refusing the key (the APIError object
// OpenCode 1.18.33 recorded against the stub's 401, put on the aborted session's
// last message): failed, blocked_reason auth; a ProviderAuthError too.
func TestBlockedOnAuth(t *testing.T) {
	const rec401 = `{"name":"APIError","data":{"message":"stub error 401 (scripted)","statusCode":401,"isRetryable":false,"responseBody":"{\"error\":{\"code\":401,\"message\":\"stub error 401 (scripted)\",\"type\":\"server_error\"}}\n","metadata":{"url":"http://127.0.0.1:42083/v1/chat/completions"}}}`
	for _, e := range []string{rec401, `{"name":"ProviderAuthError","data":{"providerID":"fake","message":"missing key"}}`} {
		home, path := dataCopy(t, testdata(t, "home/.local/share/opencode"))
		w := writer(t, path)
		mustExec(t, w, `UPDATE message SET data = json_set(data, '$.error', json(?)) WHERE id = 'msg_1faee16490013awwmT9wj3uj1r'`, e)
		w.Close()
		got, _ := list(t, newEnv(home, nil, noProcs()))
		s := got[sesAborted]
		if s.Status != discover.StatusFailed || s.BlockedReason != discover.BlockedAuth {
			t.Errorf("%s: %s blocked_reason %q (%s); want failed, auth", e[:30], s.Status, s.BlockedReason, s.EvidenceDetail)
		}
	}
}

// An opencode process whose environment puts its store elsewhere (another
// HOME or XDG_DATA_HOME: another user's home, a test's) cannot be running a
// session of this store: it is no candidate, so it neither ties nor blurs one
// (e2e: a `serve` of another home left a `run`'s session unknown). Without a
// readable HOME/XDG_DATA_HOME, or with OPENCODE_DB, it still may be ours.
func TestProcessOfAnotherStoreIsNoCandidate(t *testing.T) {
	home := testdata(t, "home")
	const fe = "/home/dev/frontend"
	run := ocRun(501, fe, 1795211624000)
	serve := func(env ...string) fakeProc {
		return fakeProc{pid: 800, ppid: 1, comm: "opencode", argv: []string{"opencode", "serve", "--port", "4096"},
			cwd: "/srv", env: env, startMS: 1795211000000}
	}
	cases := []struct {
		name string
		env  []string
		want st
	}{
		{"serve of another HOME", []string{"HOME=/home/other"}, running},
		{"serve of another XDG_DATA_HOME", []string{"HOME=" + home, "XDG_DATA_HOME=/tmp/x/share"}, running},
		{"serve of this HOME", []string{"HOME=" + home}, st{discover.StatusUnknown, discover.EvidenceProcess}},
		{"serve of this XDG_DATA_HOME", []string{"HOME=/nowhere", "XDG_DATA_HOME=" + home + "/.local/share"}, st{discover.StatusUnknown, discover.EvidenceProcess}},
		{"serve with its own OPENCODE_DB", []string{"HOME=/home/other", "OPENCODE_DB=/tmp/x.db"}, st{discover.StatusUnknown, discover.EvidenceProcess}},
		{"serve without HOME", nil, st{discover.StatusUnknown, discover.EvidenceProcess}},
	}
	for _, c := range cases {
		got := statuses(t, newEnv(home, nil, table(run, serve(c.env...))), sesListener)
		if got[sesListener] != c.want {
			t.Errorf("%s: %v, want %v", c.name, got[sesListener], c.want)
		}
	}
}
