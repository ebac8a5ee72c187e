package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/gittest"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run agentctl in-process as the `agentctl` command.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"agentctl": func() {
			s := realHost()
			s.outTTY, s.outWidth = false, 0
			// A script that sets TEST_TTY=1 gets stdout treated as a terminal
			// of $COLUMNS columns (tables fitted to it; add --no-color).
			if os.Getenv("TEST_TTY") == "1" {
				s.outTTY, s.outWidth = true, termWidth(true, nil, os.Getenv)
			}
			// A script that pins the clock (env TEST_NOW=<RFC 3339>) gets ages and
			// windows that do not depend on when the test runs, for golden files.
			if v := os.Getenv("TEST_NOW"); v != "" {
				now, err := time.Parse(time.RFC3339, v)
				if err != nil {
					panic("TEST_NOW: " + err.Error())
				}
				s.now = func() time.Time { return now }
			}
			os.Exit(runSignalled(s, os.Args))
		},
	})
}

// TestScripts runs the CLI transcripts in testdata/script/*.txt. Each script gets
// a fresh $WORK; $FIXTURES points at the recorded agent homes in testdata/.
func TestScripts(t *testing.T) {
	fixtures, err := filepath.Abs("testdata/home")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("AGENTCTL_HOME", filepath.Join(env.WorkDir, "state"))
			env.Setenv("TZ", "UTC")
			env.Setenv("NO_COLOR", "")
			// Each script gets its own copy of the recorded homes, so nothing a
			// command might create next to a database can touch testdata/.
			if err := os.CopyFS(filepath.Join(env.WorkDir, "fixture-home"), os.DirFS(fixtures)); err != nil {
				return err
			}
			// Recorded files look an hour old, as on the machine they came from, so
			// no status depends on when the test happens to run.
			old := time.Date(2026, 11, 20, 21, 55, 0, 0, time.UTC)
			if err := filepath.WalkDir(filepath.Join(env.WorkDir, "fixture-home"), func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				return os.Chtimes(p, old, old)
			}); err != nil {
				return err
			}
			env.Setenv("FIXTURES", filepath.Join(env.WorkDir, "fixture-home"))
			// Scripts that check the docs against the code read them here.
			repo, err := filepath.Abs(".")
			if err != nil {
				return err
			}
			env.Setenv("REPO", repo)
			fake, err := filepath.Abs("launch/testdata/fake-claude")
			if err != nil {
				return err
			}
			env.Setenv("FAKE_CLAUDE", fake)
			// Git commits in scripts need an identity and no user config.
			for _, kv := range gittest.Env {
				k, v, _ := strings.Cut(kv, "=")
				env.Setenv(k, v)
			}
			return os.MkdirAll(filepath.Join(env.WorkDir, "home"), 0o755)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": cmdExits,
		},
	})
}

// cmdExits runs `exits N prog args...` and checks the exit code, so scripts can
// pin the documented exit codes (2 usage, 3 not found, 4 ambiguous, …).
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		got = ee.ExitCode()
	default:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
}
