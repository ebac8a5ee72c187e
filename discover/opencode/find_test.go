package opencode

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/e2e/synth"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// findTables are process tables covering every verdict: none, no table, a unique
// tie, an ambiguous process, a host process, run --session.
func findTables() map[string]proc.Table {
	fe := "/home/dev/frontend"
	return map[string]proc.Table{
		"no opencode process":            noProcs(),
		"no process table":               &proc.Fake{NoProcs: true},
		"unique tie":                     table(ocRun(500, fe, 1795211624000)),
		"one process, two open sessions": table(ocRun(500, fe, 1795211500000)),
		"two processes":                  table(ocRun(500, fe, 1795211624000), ocRun(501, fe, 1795211624100)),
		"serve":                          table(fakeProc{pid: 800, ppid: 1, comm: "opencode", argv: []string{"opencode", "serve"}, cwd: "/", env: []string{"PWD=/"}, startMS: 1795211000000}),
		"run --session":                  table(ocRun(500, "/home/dev", 1795212000000, "--session", sesDone)),
		"run -s and a tie":               table(ocRun(500, "/home/dev", 1795212000000, "--session", sesTERM), ocRun(501, fe, 1795211624000)),
		"unknown start":                  table(ocRun(500, fe, 0)),
	}
}

// TestFindAgreesWithDiscover: for every session under every process table, in
// the database alone and with a half-imported legacy tree, Find returns exactly
// what Discover lists, by full id, by prefix and by launch record id.
func TestFindAgreesWithDiscover(t *testing.T) {
	withLegacy, _ := dataCopy(t, testdata(t, "home/.local/share/opencode"))
	discovertest.CopyTree(t, testdata(t, "legacy/storage"), filepath.Join(withLegacy, ".local", "share", "opencode", "storage"))
	legacyOnly := t.TempDir()
	discovertest.CopyTree(t, testdata(t, "legacy/storage"), filepath.Join(legacyOnly, ".local", "share", "opencode", "storage"))
	synthLegacy := t.TempDir()
	if err := synth.WriteOpenCodeLegacy(filepath.Join(synthLegacy, ".local", "share", "opencode", "storage"), 25, 7); err != nil {
		t.Fatal(err)
	}
	backdate(t, synthLegacy) // its index entries are not racy: the warm listing answers from them
	homes := map[string]string{"db": testdata(t, "home"), "db+legacy": withLegacy, "legacy only": legacyOnly,
		"synthetic legacy": synthLegacy, "synthetic legacy, warm index": synthLegacy}
	for hname, home := range homes {
		for pname, procs := range findTables() {
			if strings.HasPrefix(hname, "synthetic legacy") && pname != "no opencode process" && pname != "unique tie" {
				continue // its size is for realistic prefixes, not for every verdict
			}
			t.Run(hname+"/"+pname, func(t *testing.T) {
				env := newEnv(home, nil, procs)
				a := testAdapter()
				if strings.HasSuffix(hname, "warm index") {
					env.StateDir = filepath.Join(t.TempDir(), "state")
					if _, err := a.Discover(context.Background(), env); err != nil { // builds the index
						t.Fatal(err)
					}
				}
				all, err := a.Discover(context.Background(), env)
				if err != nil {
					t.Fatal(err)
				}
				if len(all) < 2 {
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
					for _, q := range []discover.Query{{Prefix: s.ID}, {Prefix: s.ID[:10]}, {Prefix: s.ID[:5]}, {Prefix: "l-zz", IDs: []string{s.ID}},
						{IDs: []string{s.ID}}, {Prefix: s.ID + "x"}, {Prefix: s.ID, IDs: []string{s.ID, "ses_../../x"}}} {
						check(q)
					}
				}
				for _, q := range []discover.Query{{Prefix: "ses"}, {Prefix: "ses_e05"}, {Prefix: "SES_"}, {Prefix: "ses%"}, {Prefix: "s_s"}, {}, {Prefix: "nope"}} {
					check(q)
				}
			})
		}
	}
}

// TestOnlyAliveAgreesWithDiscover: with env.OnlyAlive the alive sessions, after
// launch records are applied, are exactly the full listing's, field for field,
// on every store layout and process table; and with no opencode process alive
// nothing but the sessions launch records name is read.
func TestOnlyAliveAgreesWithDiscover(t *testing.T) {
	withLegacy, _ := dataCopy(t, testdata(t, "home/.local/share/opencode"))
	discovertest.CopyTree(t, testdata(t, "legacy/storage"), filepath.Join(withLegacy, ".local", "share", "opencode", "storage"))
	legacyOnly := t.TempDir()
	discovertest.CopyTree(t, testdata(t, "legacy/storage"), filepath.Join(legacyOnly, ".local", "share", "opencode", "storage"))
	homes := map[string]string{"db": testdata(t, "home"), "db+legacy": withLegacy, "legacy only": legacyOnly}
	alive := func(ss []discover.Session) []discover.Session { return discovertest.ByID(discover.Filter{}.Apply(ss)) }
	for hname, home := range homes {
		for pname, procs := range findTables() {
			for _, launched := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/launched=%v", hname, pname, launched), func(t *testing.T) {
					env := newEnv(home, nil, procs)
					a := testAdapter()
					all, err := a.Discover(context.Background(), env)
					if err != nil || len(all) < 2 {
						t.Fatalf("Discover: %d sessions, %v", len(all), err)
					}
					if launched {
						// A live launch of the oldest session (alive by its record) and a
						// dead one of another.
						f, _ := procs.(*proc.Fake)
						var pid int
						var ticks uint64
						if f != nil && len(f.Procs) > 0 {
							pid, ticks = f.Procs[0].PID, f.Procs[0].StartTicks
						}
						env.Launches = []meta.Launch{
							{ID: "l-live", Adapter: Name, SessionID: all[len(all)-1].ID, PID: pid, StartTicks: ticks, BootID: "b1", LaunchedAt: time.UnixMilli(1795211000000)},
							{ID: "l-dead", Adapter: Name, SessionID: all[0].ID, PID: 9999, StartTicks: 1, BootID: "b1", LaunchedAt: time.UnixMilli(1795211000000)},
						}
					}
					full := discover.All(context.Background(), env, []discover.Adapter{a}, time.Minute)
					oenv := *env
					oenv.OnlyAlive = true
					var opened atomic.Int32
					restore := agentfs.SetHook(func(string) { opened.Add(1) })
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
					if pname == "no opencode process" && !launched && (opened.Load() != 0 || len(some.Sessions) != 0) {
						t.Errorf("no opencode process alive, yet OnlyAlive opened %d files and listed %d sessions", opened.Load(), len(some.Sessions))
					}
				})
			}
		}
	}
}
