package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// One real pi print run against the stub: the header id on stdout names a file
// in the per-cwd folder `--<cwd with / as ->--` whose header records the cwd
// (docs/agents/pi.md §1).
func TestPiSmoke(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	for _, v := range harness.PiVersions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			piSmoke(t, v)
		})
	}
}

func piSmoke(t *testing.T, version string) {
	srv := stub.Start(t, nil)
	pi := harness.NewPiVersion(t, version, srv)
	dir := harness.WorkDir(t, "api-server")
	p := pi.Print(t, dir, "hello pi, say something")
	if code := p.Wait(t, 60*time.Second); code != 0 {
		t.Fatalf("pi exited %d\n%s", code, harness.Tail(p.Stderr(), 20))
	}
	id := harness.PiSessionID(p.Stdout())
	if id == "" {
		t.Fatalf("no session header on stdout:\n%s", harness.Tail(p.Stdout(), 5))
	}
	folder := "--" + strings.ReplaceAll(strings.TrimPrefix(dir, "/"), "/", "-") + "--"
	files, _ := filepath.Glob(filepath.Join(pi.Home, ".pi", "agent", "sessions", folder, "*_"+id+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("no session file for %s in %s; found %v", id, folder, pi.Sessions())
	}
	b, _ := os.ReadFile(files[0])
	var header struct {
		Type, ID, Cwd string
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if err := json.Unmarshal([]byte(first), &header); err != nil || header.Type != "session" || header.ID != id || header.Cwd != dir {
		t.Errorf("header %q; want type session, id %s, cwd %s", first, id, dir)
	}
	ex := srv.ModelExchanges(nil)
	if len(ex) != 1 || ex[0].Request.API != stub.Chat || !ex[0].Completed {
		t.Fatalf("stub saw %d model requests; want one completed chat call", len(ex))
	}

	a := harness.NewAgentctl(t, pi.Home)
	checkSession(t, "status", a.Status(t, id), view{ID: id, Adapter: "pi", Status: "stopped", Cwd: dir,
		Model: "fakeoai/fake-model", Prompt: "hello pi, say something", Tokens: tokens(sent(ex))})
}
