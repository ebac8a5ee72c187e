package e2e

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
	"github.com/agentctl/agentctl/e2e/synth"
)

// A listing short of time never leaves out a session that may be alive (README
// "What is left out is never a session that may be alive"), against the real
// agents. A run is held mid-turn and its file made the oldest of a home of
// synthetic sessions (as a session idle for hours looks); then the home is
// listed with a cold index and a --timeout cut until the adapter leaves files
// out. The live session is still listed, with the fields a listing that had
// time gives it (its token totals aside: a file read past the stop point is
// summarised). Without its exemption, the oldest file is the first left out.

// Claude Code: a print run, named by its registry entry and its argv.
func TestGiveUpKeepsLiveClaudeSession(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	dir := harness.WorkDir(t, "giveup")
	a := harness.NewAgentctl(t, c.Home)
	id := uuid.NewString()
	p := c.Print(t, dir, "a long task HOLD=giveup", "--session-id", id)
	waitHeldFor(t, srv, "giveup", 180*time.Second)
	transcript := c.Transcript(dir, id)
	waitFile(t, transcript)
	if err := synth.WriteClaudeHome(c.Home, 3000, 8<<10, 120<<10, 23); err != nil {
		t.Fatal(err)
	}
	ageHistory(t, filepath.Join(c.Home, ".claude", "projects"), transcript)
	checkGiveUp(t, a, id, dir, 3001, "claude-code")
	srv.Release("giveup")
	waitExit(t, "claude -p", p)
}

// Pi: a run agentctl launched, named by its launch record (pi's own evidence,
// a file written since a pi process started, does not hold for a file idle
// since before).
func TestGiveUpKeepsLivePiSession(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, func(r *stub.Request) stub.Reply {
		rep := stub.Keywords(r)
		if r.ToolResult && bytes.Contains(r.Body, []byte("PAUSE-AFTER-TOOL")) {
			rep.Hold = "pi-giveup" // pi writes its file after the first model call
		}
		return rep
	})
	pi := harness.NewPi(t, srv)
	a := agentctlFor(t, pi.Home, pi.Env, harness.Env{"AGENTCTL_PI_BIN": pi.Bin})
	ac := &agentCase{adapter: "pi", a: a, srv: srv, cwd: harness.WorkDir(t, "giveup"), args: []string{"--model", "fakeoai/fake-model"}}
	l := ac.launch(t, a, "check the build PAUSE-AFTER-TOOL TOOLCMD: echo giveup")
	waitHeldFor(t, srv, "pi-giveup", 180*time.Second)
	var file string
	harness.Eventually(t, 30*time.Second, func() string {
		files := pi.Sessions()
		if len(files) != 1 {
			return "no session file yet"
		}
		file = files[0]
		return ""
	})
	if err := synth.WritePiHome(pi.Home, 3000, 29); err != nil {
		t.Fatal(err)
	}
	ageHistory(t, filepath.Join(pi.Home, ".pi", "agent", "sessions"), file)
	checkGiveUp(t, a, l.ID, ac.cwd, 3001, "pi", "pi-rust")
	srv.Release("pi-giveup")
	if out, errOut, code := a.Run(t, "wait", "--timeout", "60s", l.ID); code != 0 {
		t.Fatalf("wait: exit %d %q\n%s", code, out, errOut)
	}
}

// ageHistory dates every file under root a day back, and live two days back:
// the live session's file is then the oldest, and none was written while an
// agent process ran.
func ageHistory(t *testing.T, root, live string) {
	t.Helper()
	day, twoDays := time.Now().Add(-24*time.Hour), time.Now().Add(-48*time.Hour)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == live {
			return err
		}
		return os.Chtimes(path, day, day)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(live, twoDays, twoDays); err != nil {
		t.Fatal(err)
	}
}

// checkGiveUp lists the n sessions of adapters with time, then with a cold
// index and less and less time until a listing leaves files out, and checks
// that the live session id (running, in cwd) is in that listing, as it was in
// the first.
func checkGiveUp(t *testing.T, a *harness.Agentctl, id, cwd string, n int, adapters ...string) {
	t.Helper()
	list := []string{"list", "-a", "--since", "3650d"}
	for _, ad := range adapters {
		list = append(list, "--adapter", ad)
	}
	all := listDetails(t, a, append(list[1:], "--timeout", "60s")...)
	ref, k := find(all, id)
	if k != 1 || len(all) != n {
		t.Fatalf("list -a with time: %d sessions, the live one listed %d times; want %d sessions, it once", len(all), k, n)
	}
	if ref.Status != "running" || ref.Cwd != cwd || ref.Prompt == "" || ref.StartedAt == "" {
		t.Fatalf("list -a with time: %+v; want the held run running, with its cwd, prompt and start", ref.Session)
	}
	want := givenUpView(ref.Session)
	for timeout := 1600 * time.Millisecond; timeout >= 10*time.Millisecond; timeout /= 2 {
		if err := os.RemoveAll(filepath.Join(a.State, "cache")); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := a.Run(t, append(list, "--json", "--timeout", timeout.String())...)
		if !strings.Contains(errOut, "were not read in time") {
			continue
		}
		if code != 0 {
			t.Fatalf("list --timeout %s: exit %d\n%s", timeout, code, errOut)
		}
		var ds []detail
		if err := json.Unmarshal([]byte(out), &ds); err != nil {
			t.Fatalf("list --timeout %s: %v\n%s", timeout, err, harness.Tail(out, 5))
		}
		if len(ds) >= n {
			t.Fatalf("list --timeout %s warned of files left out but listed all %d sessions", timeout, len(ds))
		}
		got, k := find(ds, id)
		if k != 1 {
			t.Fatalf("list --timeout %s listed the live session %d times (%d of %d listed)\n%s", timeout, k, len(ds), n, errOut)
		}
		if diff := cmp.Diff(want, givenUpView(got.Session)); diff != "" {
			t.Errorf("list --timeout %s (%d of %d listed): the live session (-with time +short of time):\n%s", timeout, len(ds), n, diff)
		}
		t.Logf("list --timeout %s listed %d of %d sessions", timeout, len(ds), n)
		return
	}
	t.Fatal("no listing left files out, even with --timeout 10ms: make the synthetic history larger")
}

// find returns the session id in ds and how many times it is listed.
func find(ds []detail, id string) (detail, int) {
	var d detail
	n := 0
	for _, x := range ds {
		if x.ID == id {
			d, n = x, n+1
		}
	}
	return d, n
}

// givenUpFields is what a listing short of time must still give a live
// session.
type givenUpFields struct {
	ID, Adapter, Status, Cwd, Model, Title, Prompt, StartedAt string
	PID                                                       int
}

func givenUpView(s harness.Session) givenUpFields {
	return givenUpFields{ID: s.ID, Adapter: s.Adapter, Status: s.Status, Cwd: s.Cwd, Model: s.Model,
		Title: s.Title, Prompt: s.Prompt, StartedAt: s.StartedAt, PID: s.PID}
}
