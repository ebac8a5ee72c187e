package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/meta"
)

func messages(fs []finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.Message + " | " + f.Fix + "\n")
	}
	return b.String()
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func TestCheckStateDir(t *testing.T) {
	good := `{"schema": 1, "locks": []}`
	cases := []struct {
		name         string
		build        func(dir string)
		euid         int // -1: whoever runs the test
		wantProblems []string
		wantWarnings []string
	}{
		{name: "missing state dir is fine", build: func(dir string) { os.Remove(dir) }},
		{name: "healthy", build: func(dir string) {
			writeFile(t, filepath.Join(dir, "locks.json"), good, 0o600)
			writeFile(t, filepath.Join(dir, "logs", "l-1.log"), "hi", 0o600)
		}},
		{name: "corrupt locks.json", build: func(dir string) {
			writeFile(t, filepath.Join(dir, "locks.json"), `{"schema": 1, "locks": [`, 0o600)
		}, wantProblems: []string{"locks.json does not parse"}},
		{name: "newer schema", build: func(dir string) {
			writeFile(t, filepath.Join(dir, "launches.json"), `{"schema": 9}`, 0o600)
		}, wantProblems: []string{"has schema 9, newer than this agentctl understands"}},
		{name: "state dir 0777", build: func(dir string) {
			os.Chmod(dir, 0o777)
		}, wantProblems: []string{"has mode 0777; agentctl's state must be private (0700)"}},
		{name: "state file 0644", build: func(dir string) {
			writeFile(t, filepath.Join(dir, "outbox.json"), `{"schema":1}`, 0o644)
		}, wantProblems: []string{"outbox.json has mode 0644"}},
		{name: "config 0644 without secrets is a warning", build: func(dir string) {
			writeFile(t, filepath.Join(dir, "config.json"), `{"timeout":"3s"}`, 0o644)
		}, wantWarnings: []string{"config.json has mode 0644"}},
		{name: "config 0644 with a webhook secret is a problem", build: func(dir string) {
			writeFile(t, filepath.Join(dir, "config.json"), `{"webhook_secret":"s3"}`, 0o644)
		}, wantProblems: []string{"config.json has mode 0644"}},
		{name: "malformed config", build: func(dir string) {
			writeFile(t, filepath.Join(dir, "config.json"), "{\n  \"timeout\": ,\n}", 0o600)
		}, wantProblems: []string{"config.json: line 2, column 14"}},
		{name: "owned by someone else", build: func(dir string) {
			writeFile(t, filepath.Join(dir, "locks.json"), good, 0o600)
		}, euid: 4242, wantProblems: []string{"state dir", "is owned by uid", "locks.json is owned by uid"}},
		{name: "corrupt sibling and temp file", build: func(dir string) {
			writeFile(t, filepath.Join(dir, "locks.json.corrupt-20261120T000000.000000000Z"), "{", 0o600)
			writeFile(t, filepath.Join(dir, ".locks.json.tmp-123"), "", 0o600)
		}, wantWarnings: []string{"was moved aside by agentctl because it did not parse", "temp file left by an interrupted write"}},
		{name: "link and oversized file moved aside", build: func(dir string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "locks.json.lock.symlink-20261120T000000.000000000Z")); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "locks.json.toolarge-20261120T000000.000000000Z"), "[]", 0o600)
		}, wantWarnings: []string{"was a symbolic link where a state file belongs", "was moved aside by agentctl because it was too large"}},
		{name: "torn journal line", build: func(dir string) {
			writeFile(t, filepath.Join(dir, "events.ndjson"), "{\"type\":\"lock.acquired\"}\n{\"type\":\n", 0o600)
		}, wantWarnings: []string{"events.ndjson: 1 lines do not parse"}},
		{name: "logs readable by others", build: func(dir string) {
			writeFile(t, filepath.Join(dir, "logs", "l-1.log"), "secret output", 0o644)
		}, wantProblems: []string{"1 launch logs in"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.build(dir)
			euid := os.Geteuid()
			if tc.euid != 0 {
				euid = tc.euid
			}
			var f findings
			checkStateDir(dir, euid, &f)
			check := func(kind string, got []finding, want []string) {
				all := messages(got)
				for _, w := range want {
					if !strings.Contains(all, w) {
						t.Errorf("%s: want one containing %q, got:\n%s", kind, w, all)
					}
				}
				if len(want) == 0 && len(got) > 0 {
					t.Errorf("%s: want none, got:\n%s", kind, all)
				}
				for _, g := range got {
					if g.Fix == "" {
						t.Errorf("%s %q says nothing about what to do", kind, g.Message)
					}
				}
			}
			check("problems", f.Problems, tc.wantProblems)
			check("warnings", f.Warnings, tc.wantWarnings)
		})
	}
}

func TestCheckLaunches(t *testing.T) {
	now := time.Now()
	alive := map[int]bool{10: true, 20: true}
	isAlive := func(pid int, _ uint64, _ string) bool { return alive[pid] }
	recs := []meta.Launch{
		{ID: "l-running", PID: 10, SupervisorPID: 11},
		{ID: "l-stuck", PID: 12, SupervisorPID: 20},
		{ID: "l-dead", PID: 13, SupervisorPID: 14},
		{ID: "l-done", PID: 15, FinalisedAt: &now},
		{ID: "l-starting", PID: 0, SupervisorPID: 20},
	}
	var f findings
	rep := checkLaunches(recs, isAlive, &f)
	want := launchReport{Records: 5, StuckSupervisors: []string{"l-stuck"}, Unfinalised: []string{"l-dead"}}
	if d := cmp.Diff(want, rep); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if len(f.Problems) != 0 || len(f.Warnings) != 2 {
		t.Errorf("want 2 warnings and no problems, got %+v", f)
	}
}

func TestCheckCron(t *testing.T) {
	cases := []struct {
		crontab string
		err     error
		system  map[string]string
		want    cronReport
	}{
		{crontab: "# * * * * * agentctl sweep\n0 3 * * * backup\n", want: cronReport{}},
		{crontab: "* * * * * /usr/local/bin/agentctl sweep >/dev/null 2>&1\n", want: cronReport{true, "crontab", "* * * * * /usr/local/bin/agentctl sweep >/dev/null 2>&1"}},
		{err: errors.New("no crontab for ana"), system: map[string]string{"/etc/cron.d/agentctl": "*/2 * * * * ana agentctl prune\n"},
			want: cronReport{true, "/etc/cron.d/agentctl", "*/2 * * * * ana agentctl prune"}},
		{err: exec.ErrNotFound, want: cronReport{}},
	}
	for _, tc := range cases {
		var f findings
		got := checkCron(tc.crontab, tc.err, tc.system, &f)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("crontab %q: (-want +got):\n%s", tc.crontab, d)
		}
		if !got.SweepInstalled && (len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0].Fix, "* * * * * agentctl sweep")) {
			t.Errorf("no sweep line: want a warning saying how to add one, got %+v", f.Warnings)
		}
	}
}

// runDoctorWith runs doctor in-process with injected binaries, versions and cron.
func runDoctorWith(t *testing.T, home, state string, bins map[string]string, versions map[string]error, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	s := &host{IOStreams: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, now: time.Now,
		getenv: func(k string) string {
			switch k {
			case "AGENTCTL_HOME":
				return state
			case "HOME":
				return home
			}
			return ""
		}}
	app := newApp(s)
	for _, c := range app.Commands {
		if c.Name != "doctor" {
			continue
		}
		c.Action = func(c *cli.Context) error {
			o, err := doctorOptionsFrom(c)
			if err != nil {
				return err
			}
			e, err := setup(s, globalsFrom(c))
			if err != nil {
				return err
			}
			d := doctorDeps{
				environ: []string{"HOME=" + home},
				lookPath: func(name string) (string, error) {
					if p, ok := bins[name]; ok {
						return p, nil
					}
					return "", exec.ErrNotFound
				},
				version: func(_ context.Context, bin string, _ time.Duration) (string, error) {
					if err := versions[bin]; err != nil {
						return "", err
					}
					return "1.0.0 (" + filepath.Base(bin) + ")", nil
				},
				crontab:   func(context.Context) (string, error) { return "* * * * * agentctl sweep\n", nil },
				cronFiles: func() map[string]string { return nil },
				euid:      os.Geteuid(),
			}
			return runDoctor(c.Context, e, o, d)
		}
	}
	err := app.RunContext(context.Background(), reorderArgs(app, append([]string{"agentctl"}, args...)))
	code := exitOK
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		errb.WriteString(ee.Error())
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// A healthy machine where only some agents are installed exits 0; each of the
// broken cases the issue names exits 1 and names the problem.
func TestDoctorExit(t *testing.T) {
	home, state := fixtureHome(t)
	bins := map[string]string{"claude": "/opt/claude/bin/claude", "codex": "/opt/codex/bin/codex"}

	out, stderr, code := runDoctorWith(t, home, state, bins, nil, "--home", home, "doctor", "--json")
	if code != 0 {
		t.Fatalf("healthy: exit %d\n%s\n%s", code, out, stderr)
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, a := range rep.Adapters {
		states[a.Name] = a.State
	}
	want := map[string]string{"claude-code": "ok", "codex": "ok", "opencode": "no-binary", "pi": "no-binary", "pi-rust": "not-installed", "openclaw": "not-installed",
		"gemini": "not-installed", "qwen-code": "not-installed", "copilot": "not-installed"}
	if d := cmp.Diff(want, states); d != "" {
		t.Errorf("adapter states (-want +got):\n%s", d)
	}
	if !rep.Cron.SweepInstalled || !rep.OK {
		t.Errorf("cron %+v ok %v", rep.Cron, rep.OK)
	}

	// A binary on $PATH that does not run.
	_, stderr, code = runDoctorWith(t, home, state, bins, map[string]error{"/opt/codex/bin/codex": errors.New("exit status 127")}, "--home", home, "doctor")
	if code != 1 || !strings.Contains(stderr, "codex binary /opt/codex/bin/codex does not run") {
		t.Errorf("broken binary: exit %d, stderr %q", code, stderr)
	}

	// A configured binary that does not exist.
	writeFile(t, filepath.Join(state, "config.json"), `{"adapters":{"claude-code":{"binary":"/nowhere/claude"}}}`, 0o600)
	_, stderr, code = runDoctorWith(t, home, state, bins, nil, "--home", home, "doctor")
	if code != 1 || !strings.Contains(stderr, "config adapters.claude-code.binary /nowhere/claude is not an executable file") {
		t.Errorf("configured binary missing: exit %d, stderr %q", code, stderr)
	}
	os.Remove(filepath.Join(state, "config.json"))

	// A corrupt locks.json: named, and left where it is for the user to look at.
	writeFile(t, filepath.Join(state, "locks.json"), "{not json", 0o600)
	_, stderr, code = runDoctorWith(t, home, state, bins, nil, "--home", home, "doctor")
	if code != 1 || !strings.Contains(stderr, "locks.json does not parse") {
		t.Errorf("corrupt locks.json: exit %d, stderr %q", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(state, "locks.json")); string(b) != "{not json" {
		t.Errorf("doctor changed the corrupt file: %q", b)
	}
	os.Remove(filepath.Join(state, "locks.json"))

	// A state dir other users can enter.
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runDoctorWith(t, home, state, bins, nil, "--home", home, "doctor")
	if code != 1 || !strings.Contains(stderr, "has mode 0777") {
		t.Errorf("state dir 0777: exit %d, stderr %q", code, stderr)
	}
}

// The installed version is read from the first dotted number of `--version`
// and compared field by field (so 2.1.1000 is newer than 2.1.332, not older).
func TestTestedRange(t *testing.T) {
	claude := agents.Agent{TestedOldest: "2.1.197", TestedNewest: "2.1.332"}
	cases := []struct {
		a        agents.Agent
		line     string
		rel, ver string
	}{
		{claude, "2.1.332 (Claude Code)", "", "2.1.332"},
		{claude, "2.1.197 (Claude Code)", "", "2.1.197"},
		{claude, "2.1.1000 (Claude Code)", "newer", "2.1.1000"},
		{claude, "2.1.99 (Claude Code)", "older", "2.1.99"},
		{claude, "3.0 (Claude Code)", "newer", "3.0"},
		{claude, "Claude Code", "", ""},
		{agents.Agent{TestedOldest: "0.169.0", TestedNewest: "0.171.0"}, "codex-cli 0.172.0-alpha.1", "newer", "0.172.0"},
		{agents.Agent{TestedOldest: "2026.9.6", TestedNewest: "2026.9.6"}, "OpenClaw 2026.10.1 (3f2a1b0)", "newer", "2026.10.1"},
		{agents.Agent{}, "1.0.0", "", "1.0.0"}, // nothing tested: no verdict
	}
	for _, tc := range cases {
		rel, ver := testedRange(tc.a, tc.line)
		if rel != tc.rel || ver != tc.ver {
			t.Errorf("testedRange(%q) = %q, %q; want %q, %q", tc.line, rel, ver, tc.rel, tc.ver)
		}
	}
}
