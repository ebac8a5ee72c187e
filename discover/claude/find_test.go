package claude

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// findScenario is a fixture home plus a process table: every status rule of
// judge is exercised by one of them.
type findScenario struct {
	name     string
	setup    func(t *testing.T, home string) // registry entries, touched files
	procs    *proc.Fake
	pidNS    string
	launches []meta.Launch
}

func findScenarios() []findScenario {
	const notesStart = 1795211090000
	notesReg := `{"pid":777,"sessionId":"` + idAfter + `","cwd":"/home/dev/notes","startedAt":` + fmtInt(notesStart) + `,"procStart":"` + fmtInt(int64(tickAt(notesStart))) + `","version":"2.1.197","kind":"interactive","entrypoint":"cli","status":"idle"}`
	const fresh = "0b0b0b0b-1111-4222-8333-444455556666"
	touch := func(rels ...string) func(t *testing.T, home string) {
		return func(t *testing.T, home string) {
			for _, rel := range rels {
				at := fixtureNow.Add(-time.Second)
				if err := os.Chtimes(filepath.Join(home, ".claude/projects", rel+".jsonl"), at, at); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return []findScenario{
		{name: "no processes", procs: &proc.Fake{}},
		{name: "no process table", procs: &proc.Fake{NoProcs: true}},
		{name: "registry busy", procs: &proc.Fake{Procs: []proc.Process{{PID: 14535, Comm: "claude", StartTicks: 25479}}}},
		{name: "registry recycled", procs: &proc.Fake{Procs: []proc.Process{{PID: 14535, Comm: "bash", StartTicks: 99999}}}},
		{name: "foreign pid namespace", pidNS: "pid:[4026532999]", procs: &proc.Fake{Procs: []proc.Process{{PID: 22559, Comm: "claude", StartTicks: 43505}}}},
		{name: "argv", procs: &proc.Fake{
			Procs: []proc.Process{{PID: 4242, Comm: "claude", StartTicks: 1}},
			Args:  map[int][]string{4242: {"claude", "-p", "--resume", idWebapp}},
			Cwds:  map[int]string{4242: "/home/dev/webapp"},
		}},
		{name: "process scan, one candidate", procs: &proc.Fake{
			Procs: []proc.Process{{PID: 5150, Comm: "claude", StartTicks: tickAt(1795211082000)}},
			Args:  map[int][]string{5150: {"claude"}},
			Cwds:  map[int]string{5150: "/home/dev/webapp"},
		}},
		{name: "process scan, ambiguous", procs: &proc.Fake{
			Procs: []proc.Process{{PID: 5150, Comm: "claude", StartTicks: tickAt(1795211075000)}},
			Args:  map[int][]string{5150: {"claude"}},
			Cwds:  map[int]string{5150: "/home/dev/webapp"},
		}},
		{name: "process scan elsewhere", procs: &proc.Fake{
			Procs: []proc.Process{{PID: 5151, Comm: "claude", StartTicks: 1}},
			Args:  map[int][]string{5151: {"claude"}},
			Cwds:  map[int]string{5151: "/somewhere/else"},
		}},
		{name: "superseded after /clear", setup: func(t *testing.T, home string) { writeRegistry(t, home, 777, notesReg) }, procs: &proc.Fake{
			Procs: []proc.Process{{PID: 777, Comm: "claude", StartTicks: tickAt(notesStart)}},
			Args:  map[int][]string{777: {"claude"}},
			Cwds:  map[int]string{777: "/home/dev/notes"},
		}},
		{name: "registry-only session", setup: func(t *testing.T, home string) {
			writeRegistry(t, home, 31337, `{"pid":31337,"sessionId":"`+fresh+`","cwd":"/home/dev/new project","startedAt":1795211130000,"procStart":"32460","version":"2.1.197","kind":"interactive","entrypoint":"cli"}`)
		}, procs: &proc.Fake{Procs: []proc.Process{{PID: 31337, Comm: "claude", StartTicks: 32460}}}},
		{name: "written a second ago", setup: touch("-home-dev-webapp/"+idWebapp, "-home-dev-cli-tool/"+idTUI329), procs: &proc.Fake{}},
		{name: "written a second ago, registry moved", setup: func(t *testing.T, home string) {
			touch("-home-dev-webapp/"+idWebapp, "-home-dev-cli-tool/"+idTUI329)(t, home)
			registryMoved(t, home, fixtureNow.Add(-2*time.Second))
		}, procs: &proc.Fake{}},
		{name: "written a second ago, no registry", setup: func(t *testing.T, home string) {
			touch("-home-dev-webapp/"+idWebapp, "-home-dev-cli-tool/"+idTUI329)(t, home)
			os.RemoveAll(filepath.Join(home, ".claude", "sessions"))
		}, procs: &proc.Fake{}},
		{name: "duplicate transcript", setup: func(t *testing.T, home string) {
			src := filepath.Join(home, ".claude/projects/-home-dev-webapp", idWebapp+".jsonl")
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			dup := filepath.Join(home, ".claude/projects/-home-dev-copy", idWebapp+".jsonl")
			os.MkdirAll(filepath.Dir(dup), 0o755)
			os.WriteFile(dup, b[:len(b)/2], 0o644)
			later := fixtureMtime.Add(time.Minute)
			os.Chtimes(dup, later, later)
		}, procs: &proc.Fake{}},
		{name: "launch records", procs: &proc.Fake{Procs: []proc.Process{{PID: 9090, Comm: "claude", StartTicks: 77}}}, launches: []meta.Launch{
			{ID: "l-live", Adapter: Name, SessionID: idWebapp, PID: 9090, StartTicks: 77, LaunchedAt: fixtureMtime},
			{ID: "l-gone", Adapter: Name, SessionID: idFork, PID: 9091, StartTicks: 78, LaunchedAt: fixtureMtime},
			{ID: "l-new", Adapter: Name, SessionID: fresh, PID: 9090, StartTicks: 77, LaunchedAt: fixtureMtime},
		}},
	}
}

func (sc findScenario) env(t *testing.T, home string) *testEnv {
	env := newEnv(t, home, sc.procs)
	env.Launches = sc.launches
	return env
}

func (sc findScenario) adapter() *Adapter {
	a := testAdapter()
	if sc.pidNS != "" {
		a.PidNS = func() string { return sc.pidNS }
	}
	return a
}

// TestFindAgreesWithDiscover: for every fixture session under every scenario,
// Find returns exactly what Discover lists (status, evidence, every field), with
// a warm or cold index, by full id, by prefix and by launch record id.
func TestFindAgreesWithDiscover(t *testing.T) {
	for _, sc := range findScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			home := copyHome(t)
			if sc.setup != nil {
				sc.setup(t, home)
			}
			a := sc.adapter()
			full := sc.env(t, home)
			all, err := a.Discover(context.Background(), full.Env)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) < len(fixtureFacts) {
				t.Fatalf("Discover listed %d sessions", len(all))
			}
			find := func(env *testEnv, q discover.Query) []discover.Session {
				t.Helper()
				ss, err := a.Find(context.Background(), env.Env, q)
				if err != nil {
					t.Fatal(err)
				}
				return discovertest.ByID(ss)
			}
			want := func(q discover.Query) []discover.Session {
				var out []discover.Session
				for _, s := range all {
					if q.Match(s.ID) {
						out = append(out, s)
					}
				}
				return discovertest.ByID(out)
			}
			cold := sc.env(t, home) // its own, empty state dir
			for i, s := range all {
				env := full
				if i == 0 {
					env = cold
				}
				for _, q := range []discover.Query{{Prefix: s.ID}, {Prefix: s.ID[:8]}, {Prefix: s.ID[:1]}, {Prefix: "l-zz", IDs: []string{s.ID}}} {
					if diff := cmp.Diff(want(q), find(env, q)); diff != "" {
						t.Errorf("Find(%+v) (-Discover +Find):\n%s", q, diff)
					}
				}
			}
			for _, q := range []discover.Query{{Prefix: "0"}, {Prefix: "not-an-id"}, {}, {Prefix: "ffffffff-ffff-4fff-8fff-ffffffffffff"}} {
				if diff := cmp.Diff(want(q), find(full, q)); diff != "" {
					t.Errorf("Find(%+v) (-Discover +Find):\n%s", q, diff)
				}
			}
		})
	}
}

// TestOnlyAliveAgreesWithDiscover: with env.OnlyAlive the adapter may leave out
// sessions, but after launch records are applied the alive ones are exactly the
// full listing's, field for field.
func TestOnlyAliveAgreesWithDiscover(t *testing.T) {
	alive := func(ss []discover.Session) []discover.Session {
		return discovertest.ByID(discover.Filter{}.Apply(ss))
	}
	for _, sc := range findScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			home := copyHome(t)
			if sc.setup != nil {
				sc.setup(t, home)
			}
			a := sc.adapter()
			for _, warm := range []bool{false, true} {
				env := sc.env(t, home)
				if warm {
					if _, err := a.Discover(context.Background(), env.Env); err != nil {
						t.Fatal(err)
					}
				}
				full := discover.All(context.Background(), env.Env, []discover.Adapter{a}, time.Minute)
				env.OnlyAlive = true
				some := discover.All(context.Background(), env.Env, []discover.Adapter{a}, time.Minute)
				if diff := cmp.Diff(alive(full.Sessions), alive(some.Sessions)); diff != "" {
					t.Errorf("warm=%v alive sessions (-full +OnlyAlive):\n%s", warm, diff)
				}
				fullByID := map[string]discover.Session{}
				for _, s := range full.Sessions {
					fullByID[s.ID] = s
				}
				for _, s := range some.Sessions {
					if diff := cmp.Diff(fullByID[s.ID], s); diff != "" {
						t.Errorf("warm=%v %s (-full +OnlyAlive):\n%s", warm, s.ID, diff)
					}
				}
			}
		})
	}
}
