package pi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/dirnames"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// TestFindAgreesWithDiscover: for every session under several process tables
// (none, no table, a unique owner, two candidates, one candidate for two files)
// and with a renamed copy of a file (header id not in its name, one id in two
// files), Find returns exactly what Discover lists, by full id, by prefix and by
// launch record id.
func TestFindAgreesWithDiscover(t *testing.T) {
	scenarios := piScenarios()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			home := liveHome(t)
			env, f := liveEnv(t, home)
			if pt := sc.setup(t, home, f); pt != nil {
				env.Procs = pt
			}
			env.StateDir = t.TempDir()
			discovertest.AgeDirs(t, filepath.Join(home, ".pi")) // lookups then use kept folder listings
			a := &Adapter{StartTime: msStart}
			all, err := a.Discover(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) < 5 {
				t.Fatalf("Discover listed %d sessions", len(all))
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
			check := func(q discover.Query) {
				t.Helper()
				got, err := a.Find(context.Background(), env, q)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want(q), discovertest.ByID(got)); diff != "" {
					t.Errorf("Find(%+v) (-Discover +Find):\n%s", q, diff)
				}
			}
			for _, s := range all {
				for _, q := range []discover.Query{{Prefix: s.ID}, {Prefix: s.ID[:8]}, {Prefix: s.ID[:1]}, {Prefix: "l-zz", IDs: []string{s.ID}}} {
					check(q)
				}
			}
			for _, q := range []discover.Query{{Prefix: "01a1faf5"}, {Prefix: "ffffffff"}, {}, {Prefix: "nope"}} {
				check(q)
			}
		})
	}
}

type piScenario struct {
	name  string
	setup func(t *testing.T, home string, f *proc.Fake) proc.Table
}

func piScenarios() []piScenario {
	const second = "01a1faf5-0000-7000-8000-00000000b0b0"
	return []piScenario{
		{"no pi process", func(*testing.T, string, *proc.Fake) proc.Table { return nil }},
		{"no process table", func(*testing.T, string, *proc.Fake) proc.Table { return &proc.Fake{NoProcs: true} }},
		{"unique owner", func(_ *testing.T, _ string, f *proc.Fake) proc.Table {
			piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
			return nil
		}},
		{"two candidates", func(_ *testing.T, _ string, f *proc.Fake) proc.Table {
			piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
			piProc(f, 4343, "2026-11-20T21:55:00.100Z", liveCwd)
			return nil
		}},
		{"one candidate, two files", func(t *testing.T, home string, f *proc.Fake) proc.Table {
			simple(t, filepath.Join(home, ".pi/agent/sessions/--home-dev-api-server--"), second, "2026-11-20T21:55:02.000Z", liveCwd, "second")
			piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
			return nil
		}},
		{"pi-rust short names", func(t *testing.T, home string, f *proc.Fake) proc.Table {
			// pi-rust names a file by the first 8 characters of its id; two
			// such files share a short name's first characters.
			dir := filepath.Join(home, ".pi/agent/sessions/--home-dev-api-server--")
			for i, id := range []string{"01a1fb00-0000-7000-8000-00000000c0c0", "01a1fb01-0000-7000-8000-00000000d0d0"} {
				p := simple(t, dir, id, fmt.Sprintf("2026-11-20T21:56:0%d.000Z", i), liveCwd, "rust")
				if err := os.Rename(p, strings.TrimSuffix(p, id+".jsonl")+id[:8]+".jsonl"); err != nil {
					t.Fatal(err)
				}
			}
			return nil
		}},
		{"renamed copies", func(t *testing.T, home string, f *proc.Fake) proc.Table {
			dir := filepath.Join(home, ".pi/agent/sessions/--home-dev-api-server--")
			b, err := os.ReadFile(filepath.Join(dir, "2026-11-20T21-55-00-300Z_"+liveID+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "copy-by-hand.jsonl"), b, 0o644)
			os.WriteFile(filepath.Join(dir, "2026-11-20T21-55-00-300Z_ffffffff-0000-7000-8000-000000000000.jsonl"), b, 0o644)
			piProc(f, 4242, "2026-11-20T21:55:00.000Z", liveCwd)
			return nil
		}},
	}
}

// TestOnlyAliveAgreesWithDiscover: with env.OnlyAlive the alive sessions, after
// launch records are applied, are exactly the full listing's, field for field;
// with no pi process alive only the sessions launch records name are opened.
func TestOnlyAliveAgreesWithDiscover(t *testing.T) {
	alive := func(ss []discover.Session) []discover.Session { return discovertest.ByID(discover.Filter{}.Apply(ss)) }
	for _, sc := range piScenarios() {
		for _, launched := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/launched=%v", sc.name, launched), func(t *testing.T) {
				home := liveHome(t)
				env, f := liveEnv(t, home)
				if pt := sc.setup(t, home, f); pt != nil {
					env.Procs = pt
				}
				env.StateDir = t.TempDir()
				if launched {
					f.Procs = append(f.Procs, proc.Process{PID: 900, PPID: 1, Comm: "pi", StartTicks: 77})
					env.Launches = []meta.Launch{
						{ID: "l-live", Adapter: NameRust, SessionID: "01a1faea-41e2-70ee-8a46-eefd8057a11e", PID: 900, StartTicks: 77, BootID: "boot-1", LaunchedAt: time.Now()},
						{ID: "l-dead", Adapter: Name, SessionID: liveID, PID: 901, StartTicks: 1, BootID: "boot-1", LaunchedAt: time.Now()},
					}
				}
				a := &Adapter{StartTime: msStart}
				full := discover.All(context.Background(), env, []discover.Adapter{a}, time.Minute)
				oenv := *env
				oenv.OnlyAlive = true
				var opened []string
				var mu sync.Mutex
				restore := agentfs.SetHook(func(p string) { mu.Lock(); opened = append(opened, p); mu.Unlock() })
				some := discover.All(context.Background(), &oenv, []discover.Adapter{a}, time.Minute)
				restore()
				if diff := cmp.Diff(alive(full.Sessions), alive(some.Sessions)); diff != "" {
					t.Errorf("alive sessions (-full +OnlyAlive):\n%s", diff)
				}
				byID := map[string]discover.Session{}
				for _, s := range full.Sessions {
					byID[s.ID] = s
				}
				for _, s := range some.Sessions {
					if diff := cmp.Diff(byID[s.ID], s); diff != "" {
						t.Errorf("%s (-full +OnlyAlive):\n%s", s.ID, diff)
					}
				}
				if sc.name == "no pi process" && !launched && len(opened) != 0 {
					t.Errorf("no pi process alive, yet OnlyAlive opened %v", opened)
				}
				if sc.name == "no pi process" && launched && len(opened) > 2 {
					t.Errorf("no pi process alive, yet OnlyAlive opened %v (want the launched sessions' files only)", opened)
				}
			})
		}
	}
}

// A lookup on an unchanged store lists no session folder; a folder that
// changed is listed again, so a new session file is found at once.
func TestLookupListsOnlyChangedFolders(t *testing.T) {
	home := liveHome(t)
	env, _ := liveEnv(t, home)
	env.StateDir = t.TempDir()
	discovertest.AgeDirs(t, filepath.Join(home, ".pi"))
	a := &Adapter{StartTime: msStart}
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
	if ss := find(liveID); len(ss) != 1 || len(listed) == 0 {
		t.Fatalf("first lookup: %d sessions, listed %v", len(ss), listed)
	}
	listed = nil
	if ss := find(liveID); len(ss) != 1 || len(listed) != 0 {
		t.Fatalf("second lookup: %d sessions, listed %v", len(ss), listed)
	}
	const newID = "01a1fb00-0000-7000-8000-000000000001"
	dir := filepath.Join(home, ".pi/agent/sessions/--home-dev-api-server--")
	discovertest.WriteLines(t, filepath.Join(dir, "2026-11-20T22-00-00-000Z_"+newID+".jsonl"), hdr(newID, "2026-11-20T22:00:00.000Z", liveCwd))
	discovertest.AgeDirs(t, dir)
	if ss := find(newID); len(ss) != 1 {
		t.Fatalf("a new session file is not found: %+v", ss)
	}
	if len(listed) != 1 || listed[0] != dir {
		t.Fatalf("after one folder changed, listed %v", listed)
	}
}
