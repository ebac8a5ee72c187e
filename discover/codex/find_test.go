package codex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/dirnames"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// findScenario is the fixture home, changed by setup, with an adapter and a
// process table: together they exercise every liveness method and status row.
type findScenario struct {
	name     string
	setup    func(t *testing.T, home string)
	adapter  func(home string) *Adapter
	procs    proc.Table
	launches []meta.Launch
}

func findScenarios(t *testing.T) []findScenario {
	locks := func(ids ...string) func(t *testing.T, home string) {
		return func(t *testing.T, home string) {
			for _, id := range ids {
				writeLock(t, home, id)
			}
		}
	}
	held := func(m map[string]int) func(string) *Adapter {
		return func(string) *Adapter { return testAdapter(m) }
	}
	return []findScenario{
		{name: "fd mode, nothing open", adapter: held(nil), procs: procs(600)},
		{name: "fd mode, one open", adapter: func(home string) *Adapter {
			target := rolloutPath(t, home, id861e)
			return &Adapter{OpenFiles: func(pid int) ([]string, error) {
				if pid == 601 {
					return []string{target}, nil
				}
				return nil, errors.New("permission denied")
			}}
		}, procs: procs(600, 601)},
		{name: "fd mode, no process table", adapter: held(nil), procs: &proc.Fake{NoProcs: true}},
		{name: "locks held, stale and pid 0", setup: locks(id861e, id5425, id60b3, idD918),
			adapter: held(map[string]int{id861e + ".lock": 4242, id5425 + ".lock": 0, idD918 + ".lock": 4243}), procs: procs(4242)},
		{name: "no lock held", setup: locks(id861e), adapter: held(nil), procs: procs(4242)},
		{name: "empty lock dir", setup: func(t *testing.T, home string) {
			os.MkdirAll(filepath.Join(codexDir(home), "thread-writer-locks"), 0o755)
		}, adapter: held(nil), procs: procs(4242)},
		{name: "locks not checkable", setup: locks(id861e), adapter: func(string) *Adapter {
			return &Adapter{Holders: func(context.Context, []string) (map[string]int, error) { return nil, ErrLocksUnavailable }}
		}, procs: procs(4242)},
		{name: "rollout name without id", setup: func(t *testing.T, home string) {
			p := rolloutPath(t, home, id5425)
			if err := os.Rename(p, filepath.Join(filepath.Dir(p), "rollout-renamed-by-hand.jsonl")); err != nil {
				t.Fatal(err)
			}
			locks(id5425)(t, home)
		}, adapter: held(map[string]int{id5425 + ".lock": 4242}), procs: procs(4242)},
		// Older Codex, or a deleted database: rollouts only.
		{name: "no state db, locks held", setup: func(t *testing.T, home string) {
			noDB(t, home)
			locks(id861e, id5425)(t, home)
		}, adapter: held(map[string]int{id861e + ".lock": 4242}), procs: procs(4242)},
		{name: "no state db, fd mode", setup: noDB, adapter: func(home string) *Adapter {
			target := rolloutPath(t, home, id861e)
			return &Adapter{OpenFiles: func(pid int) ([]string, error) {
				if pid == 601 {
					return []string{target}, nil
				}
				return nil, errors.New("permission denied")
			}}
		}, procs: procs(600, 601)},
		{name: "launch records", setup: locks(id1023), adapter: held(nil), procs: procs(700), launches: []meta.Launch{
			{ID: "l-live", Adapter: Name, SessionID: id5425, PID: 700, StartTicks: 7000, BootID: "boot-1", LaunchedAt: fixedNow.Add(-time.Hour)},
			{ID: "l-gone", Adapter: Name, SessionID: id861e, PID: 701, StartTicks: 7010, BootID: "boot-1", LaunchedAt: fixedNow.Add(-time.Hour)},
		}},
	}
}

// noDB removes Codex's databases: the rollouts are all there is.
func noDB(t *testing.T, home string) {
	ms, _ := filepath.Glob(filepath.Join(codexDir(home), "*.sqlite*"))
	if len(ms) == 0 {
		t.Fatal("fixture home has no database to remove")
	}
	for _, m := range ms {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
}

func (sc findScenario) env(t *testing.T, home string) *discover.Env {
	env := testEnv(home, sc.procs, nil)
	env.Launches = sc.launches
	env.StateDir = t.TempDir()
	return env
}

// TestFindAgreesWithDiscover: for every thread under every scenario, Find
// returns exactly what Discover lists (status, evidence, every field), with a
// warm or cold index, by full id, by prefix and by launch record.
func TestFindAgreesWithDiscover(t *testing.T) {
	for _, sc := range findScenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			home := fixtureHome(t)
			if sc.setup != nil {
				sc.setup(t, home)
			}
			discovertest.AgeDirs(t, codexDir(home)) // lookups then use kept folder listings (sessions, locks)
			a := sc.adapter(home)
			full := sc.env(t, home)
			all, err := a.Discover(context.Background(), full)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 8 {
				t.Fatalf("Discover listed %d threads", len(all))
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
			find := func(env *discover.Env, q discover.Query) []discover.Session {
				t.Helper()
				ss, err := a.Find(context.Background(), env, q)
				if err != nil {
					t.Fatal(err)
				}
				return discovertest.ByID(ss)
			}
			for i, s := range all {
				env := full
				if i == 0 {
					env = sc.env(t, home) // cold index
				}
				for _, q := range []discover.Query{{Prefix: s.ID}, {Prefix: s.ID[:13]}, {Prefix: s.ID[:8]}, {Prefix: s.ID[:1]}, {Prefix: "l-zz", IDs: []string{s.ID}}} {
					if diff := cmp.Diff(want(q), find(env, q)); diff != "" {
						t.Errorf("Find(%+v) (-Discover +Find):\n%s", q, diff)
					}
				}
			}
			for _, q := range []discover.Query{{Prefix: "0"}, {Prefix: "01A1"}, {Prefix: "01a1fa_"}, {Prefix: "01a1fa%"}, {Prefix: "not-an-id"}, {}, {Prefix: "ffffffff-ffff-7fff-8fff-ffffffffffff"}} {
				if diff := cmp.Diff(want(q), find(full, q)); diff != "" {
					t.Errorf("Find(%+v) (-Discover +Find):\n%s", q, diff)
				}
			}
		})
	}
}

// TestOnlyAliveAgreesWithDiscover: with env.OnlyAlive the alive threads, after
// launch records are applied, are exactly the full listing's, field for field.
func TestOnlyAliveAgreesWithDiscover(t *testing.T) {
	alive := func(ss []discover.Session) []discover.Session { return discovertest.ByID(discover.Filter{}.Apply(ss)) }
	for _, sc := range findScenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			home := fixtureHome(t)
			if sc.setup != nil {
				sc.setup(t, home)
			}
			a := sc.adapter(home)
			for _, warm := range []bool{false, true} {
				env := sc.env(t, home)
				if warm {
					if _, err := a.Discover(context.Background(), env); err != nil {
						t.Fatal(err)
					}
				}
				full := discover.All(context.Background(), env, []discover.Adapter{a}, time.Minute)
				env.OnlyAlive = true
				some := discover.All(context.Background(), env, []discover.Adapter{a}, time.Minute)
				if diff := cmp.Diff(alive(full.Sessions), alive(some.Sessions)); diff != "" {
					t.Errorf("warm=%v alive threads (-full +OnlyAlive):\n%s", warm, diff)
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
				if len(alive(full.Sessions)) == 0 && sc.name == "locks held, stale and pid 0" {
					t.Errorf("scenario meant to have live threads has none")
				}
			}
		})
	}
}

// A lookup on an unchanged history lists no session folder: their names come
// from the listings kept by the previous lookup. A folder that changed is
// listed again, so a removed or added rollout is seen at once.
func TestLookupListsOnlyChangedFolders(t *testing.T) {
	home := fixtureHome(t)
	noDB(t, home)
	lockDir := filepath.Join(codexDir(home), "thread-writer-locks")
	os.MkdirAll(lockDir, 0o755)
	for _, id := range []string{id861e, id60b3, idD918} { // stale locks of other threads
		os.WriteFile(filepath.Join(lockDir, id+".lock"), nil, 0o644)
	}
	discovertest.AgeDirs(t, codexDir(home))
	a := testAdapter(nil)
	env := testEnv(home, procs(4242), nil)
	env.StateDir = t.TempDir()
	var listed []string
	restore := dirnames.SetListHook(func(dir string) { listed = append(listed, dir) })
	defer restore()
	find := func(id string) []discover.Session {
		t.Helper()
		ss, err := a.Find(context.Background(), env, discover.Query{Prefix: id})
		if err != nil {
			t.Fatal(err)
		}
		return ss
	}
	if ss := find(id5425); len(ss) != 1 {
		t.Fatalf("first lookup found %d threads", len(ss))
	}
	if len(listed) == 0 {
		t.Fatal("the first lookup listed no folder: the hook sees nothing")
	}
	listed = nil
	if ss := find(id5425); len(ss) != 1 {
		t.Fatalf("second lookup found %d threads", len(ss))
	}
	if len(listed) != 0 {
		t.Fatalf("a lookup on an unchanged history listed %v", listed)
	}
	// A thread's lock appears: the lock folder alone is listed again, and
	// the lock is seen.
	os.WriteFile(filepath.Join(lockDir, id5425+".lock"), nil, 0o644)
	discovertest.AgeDirs(t, lockDir)
	if ss := find(id5425); len(ss) != 1 || !strings.Contains(ss[0].EvidenceDetail, "stale") {
		t.Fatalf("after its lock appeared: %+v", ss)
	}
	if len(listed) != 1 || listed[0] != lockDir {
		t.Fatalf("after the lock folder changed, listed %v", listed)
	}
	listed = nil
	// The rollout moves out of its folder: that folder alone is listed again.
	p := rolloutPath(t, home, id5425)
	if err := os.Rename(p, filepath.Join(t.TempDir(), "moved.jsonl")); err != nil {
		t.Fatal(err)
	}
	discovertest.AgeDirs(t, filepath.Dir(p))
	if ss := find(id5425); len(ss) != 0 {
		t.Fatalf("a removed rollout is still found: %+v", ss)
	}
	if len(listed) != 1 || listed[0] != filepath.Dir(p) {
		t.Fatalf("after one folder changed, listed %v", listed)
	}
}
