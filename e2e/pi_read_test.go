package e2e

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// Prices in the harness's models.json for fakeoai/fake-model (USD per million).
const piInPrice, piOutPrice = 1, 2

// A real pi print run with a tool round trip whose follow-up request the stub
// holds, then a resume by path (held again): pi writes nothing during its first
// model call, so the run is held after the tool, when the file exists with an
// open leaf. agentctl attributes the file to the live pi process (a new session
// by its header time, a resumed one by its fresh entries: docs/agents/pi.md §4.1), reports
// it stopped once pi exited, tokens and cost summed over every assistant message,
// and peek shows the tool call with its result.
func TestPiReadSide(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	for _, v := range harness.PiVersions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			piReadSide(t, v)
		})
	}
}

func piReadSide(t *testing.T, version string) {
	srv := stub.Start(t, func(r *stub.Request) stub.Reply {
		rep := stub.Keywords(r)
		if r.ToolResult && bytes.Contains(r.Body, []byte("PAUSE-AFTER-TOOL")) {
			rep.Hold = "pi-new"
		}
		return rep
	})
	pi := harness.NewPiVersion(t, version, srv)
	dir := harness.WorkDir(t, "api-server")
	a := harness.NewAgentctl(t, pi.Home)

	const word = "pi-read-side"
	const prompt = "check the build PAUSE-AFTER-TOOL TOOLCMD: echo " + word
	m := markNow(srv)
	p := pi.Print(t, dir, prompt)
	id := p.WaitStdout(t, 30*time.Second, "session header", harness.PiSessionID)
	headerSeen := time.Now()
	waitHeldBy(t, srv, "pi-new", p)
	// The tool's assistant message, its result and the header reach the file
	// around the held request; wait for the file, not for agentctl's opinion.
	harness.Eventually(t, 10*time.Second, func() string {
		if len(pi.Sessions()) != 1 {
			return "no session file yet"
		}
		return ""
	})
	livePi(t, "new session, reply after the tool held", a, id, p)
	checkPeekLive(t, "peek mid-turn", a, id, prompt)

	srv.Release("pi-new")
	waitExit(t, "pi -p", p)
	first := since(srv, m)
	if len(first) != 2 || first[0].Reply.Tool == nil || !first[1].Request.ToolResult || !strings.Contains(first[1].Request.ToolOutput, word) {
		t.Fatalf("want a tool call and a tool result; stub saw %d requests", len(first))
	}
	files := pi.Sessions()
	if len(files) != 1 || !strings.HasSuffix(files[0], "_"+id+".jsonl") {
		t.Fatalf("session files %v; want one for %s", files, id)
	}
	want := view{ID: id, Adapter: "pi", Status: "stopped", Cwd: dir,
		Model: "fakeoai/" + lastModel(first), Prompt: prompt, Tokens: tokens(sent(first))}
	d, _ := only(t, "list -a after turn 1", listDetails(t, a, "-a"), id)
	checkSession(t, "list -a after turn 1", d.Session, want)
	checkStopped(t, "list -a after turn 1", d)

	// Resume by path (docs/agents/pi.md §7): the same file, the same id on stdout line 1.
	// Start it 2 s after the header was written, so that the header predates the
	// process even by a start time read with /proc/stat's whole-second btime: the
	// resumed pi must be attributed by its fresh entries, not as a new session.
	time.Sleep(time.Until(headerSeen.Add(2 * time.Second)))
	const again = "and now the tests HOLD=pi-resume"
	m = markNow(srv)
	p = pi.Print(t, dir, again, "--session", files[0])
	if got := p.WaitStdout(t, 30*time.Second, "session header", harness.PiSessionID); got != id {
		t.Fatalf("resume printed session %s, want %s", got, id)
	}
	waitHeldBy(t, srv, "pi-resume", p)
	harness.Eventually(t, 10*time.Second, func() string {
		if n := countLines(t, files[0]); n < 8 {
			return "the resumed prompt is not in the file yet"
		}
		return ""
	})
	if d := livePi(t, "resumed session, reply held", a, id, p); !strings.Contains(d.EvidenceDetail, "resumed") {
		t.Errorf("resumed session attributed as %q; want it attributed as resumed (docs/agents/pi.md §4.1)", d.EvidenceDetail)
	}
	checkPeekLive(t, "peek mid-turn", a, id, again)

	srv.Release("pi-resume")
	waitExit(t, "pi -p --session", p)
	resumed := since(srv, m)
	if len(resumed) != 1 || !resumed[0].Completed {
		t.Fatalf("stub saw %d requests for the resume; want one completed", len(resumed))
	}
	if f := pi.Sessions(); len(f) != 1 {
		t.Fatalf("session files %v after the resume; want the one file", f)
	}

	all := sent(first, resumed)
	want = view{ID: id, Adapter: "pi", Status: "stopped", Cwd: dir,
		Model: "fakeoai/" + lastModel(first, resumed), Prompt: prompt, Tokens: tokens(all)}
	ds := listDetails(t, a, "-a")
	if len(ds) != 1 {
		t.Errorf("list -a shows %d sessions; want the one", len(ds))
	}
	d, _ = only(t, "list -a after the resume", ds, id)
	checkSession(t, "list -a after the resume", d.Session, want)
	checkCost(t, "list -a after the resume", d, all, piInPrice, piOutPrice)
	st := detailOf(t, a, id)
	checkSession(t, "status after the resume", st.Session, want)
	checkStopped(t, "status after the resume", st)
	checkCost(t, "status after the resume", st, all, piInPrice, piOutPrice)

	msgs := a.Peek(t, id)
	checkPeek(t, "peek", msgs, []string{prompt, again}, texts(append(first, resumed...)))
	var tool string
	for _, msg := range msgs {
		for _, tc := range msg.Tools {
			tool = tc.Name + ": " + tc.Summary + " ← " + tc.Result
		}
	}
	if wantTool := "bash: echo " + word + " ← " + word; tool != wantTool {
		t.Errorf("peek tool call %q, want %q", tool, wantTool)
	}
}

// livePi checks a session with an open leaf: running on the process table,
// inferred, pid = the pi process.
func livePi(t *testing.T, what string, a *harness.Agentctl, id string, p *harness.Proc) detail {
	t.Helper()
	d := detailOf(t, a, id)
	checkLive(t, what+": status", d, p, "process", true)
	l, ok := only(t, what+": list", listDetails(t, a), id)
	if ok && (l.Status != "running" || l.PID != d.PID) {
		t.Errorf("%s: list (alive only) shows status %q pid %d; want running, pid %d", what, l.Status, l.PID, d.PID)
	}
	return d
}
