package discover

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

type fakeAdapter struct {
	name  string
	ss    []Session
	err   error
	hang  bool
	slow  bool // works until its context ends, then answers its error
	warns []string
}

func (f *fakeAdapter) Name() string { return f.name }
func (f *fakeAdapter) Discover(ctx context.Context, env *Env) ([]Session, error) {
	for _, w := range f.warns {
		env.Warnf("%s", w)
	}
	if f.hang {
		<-make(chan struct{}) // ignores ctx, like a gateway stuck in a read
	}
	if f.slow {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return append([]Session(nil), f.ss...), f.err // the caller owns what Discover returns
}
func (f *fakeAdapter) Peek(context.Context, *Env, Session, int) ([]Message, error) { return nil, nil }

func testEnv() *Env {
	return &Env{Procs: &proc.Fake{Boot: "boot-1"}, Now: func() time.Time { return time.Unix(1795211100, 0) }}
}

// A hung adapter costs at most the timeout, and the others' results still come back.
func TestAllHangingAdapterDoesNotDelay(t *testing.T) {
	t1 := time.Unix(1795211000, 0)
	ok := &fakeAdapter{name: "codex", ss: []Session{{ID: "a", Adapter: "codex", Status: StatusStopped, LastActivity: &t1}}}
	hung := &fakeAdapter{name: "openclaw", hang: true}
	bad := &fakeAdapter{name: "opencode", err: errors.New("database is locked"), warns: []string{"one file skipped"}}
	start := time.Now()
	res := All(context.Background(), testEnv(), []Adapter{ok, hung, bad}, 300*time.Millisecond)
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Fatalf("All took %v with a 300ms timeout", el)
	}
	if len(res.Sessions) != 1 || res.Sessions[0].ID != "a" || res.Sessions[0].Status != StatusStopped {
		t.Fatalf("sessions = %+v", res.Sessions)
	}
	joined := strings.Join(res.Warnings, "\n")
	for _, want := range []string{"openclaw: no answer within 300ms", "opencode: database is locked", "opencode: one file skipped"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q lack %q", joined, want)
		}
	}
	if res.Up["openclaw"] || res.Up["opencode"] || !res.Up["codex"] {
		t.Errorf("up = %v", res.Up)
	}
}

// An adapter that runs into its own timeout and answers the context's error is
// warned about as one that did not answer, in words a user can act on, not
// Go's "context deadline exceeded".
func TestAdapterPastItsTimeout(t *testing.T) {
	slow := &fakeAdapter{name: "pi", slow: true}
	res := All(context.Background(), testEnv(), []Adapter{slow}, 200*time.Millisecond)
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "pi: no answer within 200ms; its sessions are missing") {
		t.Errorf("warnings %q, want the adapter's timeout named", res.Warnings)
	}
	if res.Up["pi"] {
		t.Errorf("up = %v", res.Up)
	}

	// An error of the adapter's own that wraps the deadline keeps its words.
	own := &fakeAdapter{name: "openclaw", err: fmt.Errorf("gateway ws://127.0.0.1:1 did not answer within 200ms: %w", context.DeadlineExceeded)}
	res = All(context.Background(), testEnv(), []Adapter{own}, 200*time.Millisecond)
	if len(res.Warnings) != 1 || res.Warnings[0] != "openclaw: gateway ws://127.0.0.1:1 did not answer within 200ms: context deadline exceeded" {
		t.Errorf("warnings %q, want the adapter's own error", res.Warnings)
	}
}

func TestApplyLaunches(t *testing.T) {
	launched := time.Unix(1795211000, 0).UTC()
	one := 1
	fake := &proc.Fake{Boot: "boot-1", Procs: []proc.Process{{PID: 4242, StartTicks: 900}, {PID: 5000, StartTicks: 1}}}
	env := &Env{Procs: fake, Launches: []meta.Launch{
		// Live, agent has not written anything yet: appears, running.
		{ID: "l-1", Adapter: "claude-code", SessionID: "new-session", PID: 4242, StartTicks: 900, BootID: "boot-1", Cwd: "/w", Prompt: "do it", LaunchedAt: launched, Group: "g-abc123"},
		// Recycled pid: same pid, different start.
		{ID: "l-2", Adapter: "claude-code", SessionID: "recycled", PID: 5000, StartTicks: 2, BootID: "boot-1", Cwd: "/w", LaunchedAt: launched},
		// Ended with exit 1: failed with its exit code.
		{ID: "l-3", Adapter: "codex", SessionID: "done-bad", PID: 6000, StartTicks: 3, BootID: "boot-1", Cwd: "/w", LaunchedAt: launched, ExitCode: &one},
		// Adapter not queried: ignored.
		{ID: "l-4", Adapter: "pi", SessionID: "pi-1", PID: 4242, StartTicks: 900, LaunchedAt: launched},
		// Unconfirmed launch without a session id: never invented.
		{ID: "l-5", Adapter: "claude-code", PID: 4242, StartTicks: 900, LaunchedAt: launched},
	}}
	in := []Session{
		{ID: "recycled", Adapter: "claude-code", Status: StatusRunning, Evidence: EvidenceTranscript},
		{ID: "done-bad", Adapter: "codex", Status: StatusStopped, Evidence: EvidenceTranscript},
		{ID: "other", Adapter: "codex", Status: StatusIdle, Evidence: EvidenceRegistry, PID: 77},
	}
	out := ApplyLaunches(env, in, []string{"claude-code", "codex"}, map[string]bool{"claude-code": true, "codex": true})
	byID := map[string]Session{}
	for _, s := range out {
		byID[s.ID] = s
	}
	if len(out) != 4 {
		t.Fatalf("got %d sessions, want 4: %+v", len(out), out)
	}
	n := byID["new-session"]
	if n.Status != StatusRunning || n.Evidence != EvidenceLaunchRecord || n.PID != 4242 || n.Group != "g-abc123" || n.Prompt != "do it" {
		t.Errorf("new-session = %+v", n)
	}
	r := byID["recycled"]
	if r.Status == StatusRunning || r.PID != 0 || !strings.Contains(r.EvidenceDetail, "recycled") {
		t.Errorf("recycled = %+v", r)
	}
	d := byID["done-bad"]
	if d.Status != StatusFailed || d.ExitCode == nil || *d.ExitCode != 1 {
		t.Errorf("done-bad = %+v", d)
	}
	if o := byID["other"]; o.Status != StatusIdle || o.PID != 77 {
		t.Errorf("other changed: %+v", o)
	}
}

func TestSortSessions(t *testing.T) {
	t1, t2, t3 := time.Unix(1, 0), time.Unix(2, 0), time.Unix(3, 0)
	ss := []Session{
		{ID: "stopped-new", Status: StatusStopped, LastActivity: &t3},
		{ID: "idle-old", Status: StatusIdle, LastActivity: &t1},
		{ID: "running-mid", Status: StatusRunning, LastActivity: &t2},
	}
	SortSessions(ss)
	got := []string{ss[0].ID, ss[1].ID, ss[2].ID}
	want := []string{"running-mid", "idle-old", "stopped-new"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order = %v, want %v", got, want)
		}
	}
}

// Session.Slots reach only the commands that ask for them (Env.Slots): a
// listing holds every session until printed and never reads them.
func TestSlotsOnlyWhenAsked(t *testing.T) {
	t1 := time.Unix(1795211000, 0)
	slots := Slots{{At: SlotOfTime(t1), Tokens: Tokens{Input: 5}}}
	a := &fakeAdapter{name: "codex", ss: []Session{{ID: "a", Adapter: "codex", Status: StatusStopped, LastActivity: &t1, Slots: slots}}}
	for _, want := range []bool{false, true} {
		env := testEnv()
		env.Slots = want
		_, ls := List(context.Background(), env, []Adapter{a}, time.Second)
		if ls.Len() != 1 {
			t.Fatalf("Slots %v: %d sessions", want, ls.Len())
		}
		if got := ls.At(0).Slots != nil; got != want {
			t.Errorf("Env.Slots %v: session has slots %v", want, got)
		}
		if res := All(context.Background(), env, []Adapter{a}, time.Second); (res.Sessions[0].Slots != nil) != want {
			t.Errorf("All with Env.Slots %v: slots %v", want, res.Sessions[0].Slots)
		}
	}
}

// parserAdapter is a fakeAdapter that parses files (FileParser) for delay,
// counting how many of its kind run at once.
type parserAdapter struct {
	fakeAdapter
	delay        time.Duration
	running, max *atomic.Int32
}

func (*parserAdapter) ParsesFiles() {}
func (p *parserAdapter) Discover(ctx context.Context, env *Env) ([]Session, error) {
	n := p.running.Add(1)
	for {
		m := p.max.Load()
		if n <= m || p.max.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(p.delay)
	p.running.Add(-1)
	return p.fakeAdapter.Discover(ctx, env)
}

// A full listing runs at most one file-parsing adapter per core at once; the
// others (a gateway) do not wait for a turn, and every session is listed.
func TestFullListingTakesTurns(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var running, most atomic.Int32
	t1 := time.Unix(1795211000, 0)
	var adapters []Adapter
	for _, n := range []string{"claude-code", "codex", "opencode", "pi"} {
		adapters = append(adapters, &parserAdapter{fakeAdapter{name: n, ss: []Session{{ID: n + "-1", Adapter: n, Status: StatusStopped, LastActivity: &t1}}}, 100 * time.Millisecond, &running, &most})
	}
	gw := &fakeAdapter{name: "openclaw", ss: []Session{{ID: "agent:main:x", Adapter: "openclaw", Status: StatusIdle, LastActivity: &t1}}}
	adapters = append(adapters, gw)
	res := All(context.Background(), testEnv(), adapters, 10*time.Second)
	if len(res.Sessions) != 5 || len(res.Warnings) != 0 {
		t.Fatalf("sessions %+v, warnings %q", res.Sessions, res.Warnings)
	}
	if got := most.Load(); got != 2 {
		t.Errorf("%d file-parsing adapters ran at once on 2 cores, want 2", got)
	}
	// A large listing (List) gives one turn per two cores, and packs what
	// each answered.
	most.Store(0)
	env := testEnv()
	env.Large = true
	res, ls := List(context.Background(), env, adapters, 10*time.Second)
	if ls.Len() != 5 || len(res.Warnings) != 0 {
		t.Fatalf("List: %d sessions, warnings %q", ls.Len(), res.Warnings)
	}
	if got := most.Load(); got != 1 {
		t.Errorf("List ran %d file-parsing adapters at once on 2 cores, want 1", got)
	}
	// A lookup does not take turns.
	most.Store(0)
	q := QueryFor("codex-1", nil)
	FindAll(context.Background(), testEnv(), adapters, 10*time.Second, q)
	if got := most.Load(); got != 4 {
		t.Errorf("a lookup ran %d file-parsing adapters at once, want all 4", got)
	}
}

// An adapter stuck in its turn holds the others back by at most a quarter of
// the timeout: they still answer in time.
func TestStuckTurnDelaysOthersBoundedly(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var running, most atomic.Int32
	t1 := time.Unix(1795211000, 0)
	stuck := &parserAdapter{fakeAdapter{name: "claude-code", hang: true}, 0, &running, &most}
	ok := &parserAdapter{fakeAdapter{name: "pi", ss: []Session{{ID: "p", Adapter: "pi", Status: StatusStopped, LastActivity: &t1}}}, 300 * time.Millisecond, &running, &most}
	start := time.Now()
	// On one core the goroutine started last runs first: the stuck one takes
	// the single turn and ok waits for it, at most 200ms, then needs 300ms of
	// the 800ms.
	res := All(context.Background(), testEnv(), []Adapter{ok, stuck}, 800*time.Millisecond)
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("All took %v with an 800ms timeout", el)
	}
	if len(res.Sessions) != 1 || res.Sessions[0].ID != "p" {
		t.Fatalf("sessions %+v, warnings %q: the adapter behind a stuck one is missing", res.Sessions, res.Warnings)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "claude-code: no answer within 800ms") {
		t.Errorf("warnings %q", res.Warnings)
	}
}

// partAdapter publishes its first `done` sessions (of ss, newest first) and
// then runs on: past its timeout (hang), or until its context ends.
type partAdapter struct {
	name string
	ss   []Session
	done int
	hang bool
}

func (p *partAdapter) Name() string { return p.name }
func (p *partAdapter) Discover(ctx context.Context, env *Env) ([]Session, error) {
	out := make([]Session, 0, len(p.ss))
	out = append(out, p.ss[:p.done]...)
	Publish(ctx, out, len(p.ss)-p.done)
	// A second pass starting over hands over less: the first stands.
	Publish(ctx, out[:1:1], len(p.ss)-1)
	if p.hang {
		<-make(chan struct{})
	}
	<-ctx.Done()
	return nil, ctx.Err()
}
func (p *partAdapter) Peek(context.Context, *Env, Session, int) ([]Message, error) { return nil, nil }

// Issue 34 item 5: an adapter short of time that answered after the deadline
// was dropped whole (100,000 Claude sessions: 0 listed in 11 runs of 12). A
// listing now takes what it had made by then, its newest sessions, and says how
// many were left out; a launch record of a session left out does not make it
// look stopped. A lookup takes no part: it waits for the answer or warns.
func TestListingTakesWhatAnAdapterShortOfTimeMade(t *testing.T) {
	base := time.Unix(1795211000, 0)
	var ss []Session
	for i := range 10 {
		at := base.Add(-time.Duration(i) * time.Minute)
		ss = append(ss, Session{ID: fmt.Sprintf("s%d", i), Adapter: "claude-code", Status: StatusStopped, LastActivity: &at})
	}
	for _, hang := range []bool{false, true} {
		env := testEnv()
		env.Launches = []meta.Launch{{ID: "l1", Adapter: "claude-code", SessionID: "s9", LaunchedAt: base.Add(-time.Hour)}}
		a := &partAdapter{name: "claude-code", ss: ss, done: 4, hang: hang}
		ok := &fakeAdapter{name: "pi", ss: []Session{{ID: "p", Adapter: "pi", Status: StatusStopped, LastActivity: &base}}}
		res := All(context.Background(), env, []Adapter{a, ok}, 100*time.Millisecond)
		var ids []string
		for _, s := range res.Sessions {
			ids = append(ids, s.ID)
		}
		if got, want := strings.Join(ids, " "), "p s0 s1 s2 s3"; got != want {
			t.Errorf("hang %v: listed %q, want %q", hang, got, want)
		}
		want := "claude-code: not finished within 100ms; listing the 4 sessions it had read (the newest), 6 left out"
		if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], want) {
			t.Errorf("hang %v: warnings %q, want one saying %q", hang, res.Warnings, want)
		}
		if res.Up["claude-code"] || !res.Up["pi"] {
			t.Errorf("hang %v: up %v, want pi only", hang, res.Up)
		}
		q := FindAll(context.Background(), env, []Adapter{a}, 100*time.Millisecond, Query{IDs: []string{"s0"}})
		if len(q.Sessions) != 0 {
			t.Errorf("hang %v: a lookup took a partial listing: %+v", hang, q.Sessions)
		}
	}
}
