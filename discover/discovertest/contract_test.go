package discovertest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/claude"
	"github.com/agentctl/agentctl/discover/codex"
	"github.com/agentctl/agentctl/discover/copilot"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/discover/gemini"
	"github.com/agentctl/agentctl/discover/openclaw"
	"github.com/agentctl/agentctl/discover/opencode"
	"github.com/agentctl/agentctl/discover/pi"
	"github.com/agentctl/agentctl/discover/qwen"
	"github.com/agentctl/agentctl/gateway/gatewaytest"
	"github.com/agentctl/agentctl/proc"
)

// now is after every fixture's recordings (2026-11-20/21).
var now = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

// env is an Env over home with no live process and its state dir elsewhere
// (the parse index is the one thing an adapter may write, and not there).
func env(t *testing.T, home string, vars map[string]string) *discover.Env {
	e := discovertest.NewEnv(home, vars, &proc.Fake{Boot: "boot-1"}, now)
	e.StateDir = t.TempDir()
	return e
}

// fixture is a fresh copy of an adapter's recorded home.
func fixture(t *testing.T, agent string) string {
	home := t.TempDir()
	discovertest.CopyTree(t, filepath.Join("..", agent, "testdata", "home"), home)
	return home
}

// cases is every read-side adapter over an empty home and its recorded one;
// OpenClaw's "home" is a fake gateway with and without sessions.
func cases(t *testing.T) map[string]discovertest.Case {
	local := func(a discover.Adapter, dir string) discovertest.Case {
		home := fixture(t, dir)
		return discovertest.Case{Adapter: a, Empty: env(t, t.TempDir(), nil), Full: env(t, home, nil), Home: home}
	}
	const token = "tok-contract"
	gw := func(rows []map[string]any) map[string]string {
		g := gatewaytest.New(t, &gatewaytest.Fake{Token: token, Sessions: rows})
		return map[string]string{"OPENCLAW_GATEWAY_URL": g.URL(), "OPENCLAW_GATEWAY_TOKEN": token}
	}
	row := map[string]any{"key": "agent:main:task1", "sessionId": "3644c83f-45fb-4d83-b305-a4b7d0ba922c", "agentId": "main",
		"status": "done", "hasActiveRun": false, "activeRunIds": []string{}, "createdAt": 1795212363469, "updatedAt": 1795212369636,
		"lastMessagePreview": "FAKE-REPLY to: hello"}
	clawHome := t.TempDir()
	return map[string]discovertest.Case{
		"claude-code": local(claude.New(), "claude"),
		"codex":       local(codex.New(), "codex"),
		"opencode":    local(opencode.New(), "opencode"),
		"pi":          local(pi.New(), "pi"),
		"gemini":      local(gemini.New(), "gemini"),
		"qwen-code":   local(qwen.New(), "qwen"),
		"copilot":     local(copilot.New(), "copilot"),
		"openclaw": {Adapter: openclaw.New(), Empty: env(t, t.TempDir(), gw(nil)),
			Full: env(t, clawHome, gw([]map[string]any{row})), Home: clawHome},
	}
}

// TestContract runs every adapter over the same cases (CheckContract).
func TestContract(t *testing.T) {
	cs := cases(t)
	var names []string
	for n := range cs {
		names = append(names, n)
	}
	slices.Sort(names)
	readers := slices.Clone(agents.Readers())
	slices.Sort(readers)
	if !slices.Equal(names, readers) {
		t.Fatalf("the contract covers %v; the agents table's readers are %v", names, readers)
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			if cs[n].Adapter.Name() != n {
				t.Fatalf("adapter named %q", cs[n].Adapter.Name())
			}
			for _, p := range discovertest.CheckContract(cs[n]) {
				t.Error(p)
			}
		})
	}
}

// broken is an adapter that breaks one rule of the contract at a time, to
// show that CheckContract notices each.
type broken struct {
	home string
	rule string
	ss   []discover.Session
}

// badFinder finds nothing of what it lists.
type badFinder struct{ *broken }

func (badFinder) Find(context.Context, *discover.Env, discover.Query) ([]discover.Session, error) {
	return nil, nil
}

func (b *broken) Name() string { return "pi" }
func (b *broken) Discover(ctx context.Context, env *discover.Env) ([]discover.Session, error) {
	if env.Home != b.home {
		if b.rule == "empty" {
			return b.ss, nil
		}
		return nil, nil
	}
	switch b.rule {
	case "cancel":
		if ctx.Err() != nil {
			time.Sleep(discovertest.Prompt + time.Second) // does not look at ctx
		}
	case "write":
		os.WriteFile(filepath.Join(b.home, "written"), nil, 0o644)
	case "none":
		return nil, nil
	}
	ss := slices.Clone(b.ss)
	switch b.rule {
	case "id":
		ss[0].ID = ""
	case "adapter":
		ss[0].Adapter = "claude-code"
	case "status":
		ss[0].Status = "busy"
	}
	return ss, nil
}
func (b *broken) Peek(context.Context, *discover.Env, discover.Session, int) ([]discover.Message, error) {
	return nil, nil
}

func TestContractCatchesBreakage(t *testing.T) {
	for rule, want := range map[string]string{
		"empty":   "empty home",
		"cancel":  "cancelled context",
		"write":   "wrote under the home",
		"none":    "no sessions listed",
		"id":      "without an id",
		"adapter": "is not an agent pi reads",
		"status":  `status "busy"`,
		"find":    "lookup pi-1",
	} {
		t.Run(rule, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			var a discover.Adapter = &broken{home: home, rule: rule, ss: []discover.Session{{ID: "pi-1", Adapter: "pi", Status: discover.StatusStopped}}}
			if rule == "find" {
				a = badFinder{a.(*broken)}
			}
			got := discovertest.CheckContract(discovertest.Case{Adapter: a, Empty: env(t, t.TempDir(), nil), Full: env(t, home, nil), Home: home})
			if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), want) {
				t.Errorf("CheckContract = %q, want a line with %q", got, want)
			}
		})
	}
	home := t.TempDir()
	ok := &broken{home: home, ss: []discover.Session{{ID: "pi-1", Adapter: "pi", Status: discover.StatusStopped}}}
	if got := discovertest.CheckContract(discovertest.Case{Adapter: ok, Empty: env(t, t.TempDir(), nil), Full: env(t, home, nil), Home: home}); len(got) != 0 {
		t.Errorf("an adapter that keeps the contract: %q", got)
	}
}
