package opencode

import (
	"context"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

func byID(ss []discover.Session) []discover.Session {
	out := append([]discover.Session(nil), ss...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

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
	copyTree(t, testdata(t, "legacy/storage"), filepath.Join(withLegacy, ".local", "share", "opencode", "storage"))
	homes := map[string]string{"db": testdata(t, "home"), "db+legacy": withLegacy}
	for hname, home := range homes {
		for pname, procs := range findTables() {
			t.Run(hname+"/"+pname, func(t *testing.T) {
				env := newEnv(home, nil, procs)
				a := testAdapter()
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
					return byID(out)
				}
				check := func(q discover.Query) {
					t.Helper()
					got, err := a.Find(context.Background(), env, q)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(want(q), byID(got)); diff != "" {
						t.Errorf("Find(%+v) (-Discover +Find):\n%s", q, diff)
					}
				}
				for _, s := range all {
					for _, q := range []discover.Query{{Prefix: s.ID}, {Prefix: s.ID[:10]}, {Prefix: s.ID[:5]}, {Prefix: "l-zz", IDs: []string{s.ID}}} {
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
