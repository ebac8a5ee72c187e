package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// A real OpenClaw gateway (Node 24) on 127.0.0.1 runs one turn against the stub:
// sessions.create, then sessions.list shows the session and the turn reached the
// model (docs/agents/openclaw.md §8).
func TestOpenClawSmoke(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	oc := harness.StartOpenClaw(t, srv)
	// The wait below follows the gateway's progress; this only bounds a wedged
	// connection.
	ctx, cancel := context.WithTimeout(context.Background(), harness.Patience)
	defer cancel()
	g, err := oc.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	const key = "agent:main:e2e-smoke"
	raw, err := g.Call(ctx, "sessions.create", map[string]any{"key": key, "message": "hello gateway"})
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Key, SessionID string
		RunStarted     bool
	}
	json.Unmarshal(raw, &created)
	if created.Key != key || created.SessionID == "" || !created.RunStarted {
		t.Fatalf("sessions.create answered %s", raw)
	}
	oc.Proc.WaitFor(t, "session "+key+" finished", func() string {
		raw, err := g.Call(ctx, "sessions.list", map[string]any{})
		if err != nil {
			return err.Error()
		}
		var l struct {
			Sessions []struct{ Key, SessionID, Status string }
		}
		json.Unmarshal(raw, &l)
		for _, s := range l.Sessions {
			if s.Key == key && s.SessionID == created.SessionID && s.Status != "running" &&
				len(srv.ModelExchanges(func(e stub.Exchange) bool { return e.Completed })) > 0 {
				return ""
			}
		}
		return "session not listed as finished with a model reply: " + string(raw)
	})
	if db := filepath.Join(oc.Home, ".openclaw", "agents", "main", "agent", "openclaw-agent.sqlite"); !exists(db) {
		t.Errorf("no agent store at %s", db)
	}

	// agentctl reads the gateway over its RPC, with OpenClaw's own variables.
	a := harness.NewAgentctl(t, oc.Home)
	// A loaded gateway answers chat.history slowly: give the adapter time
	// (the default 5 s left prompt and tokens empty at load 40).
	a.Env = a.Env.Merge(harness.Env{"OPENCLAW_GATEWAY_TOKEN": oc.Token, "OPENCLAW_GATEWAY_URL": oc.URL, "AGENTCTL_ADAPTER_TIMEOUT": "60s"})
	ex := srv.ModelExchanges(nil)
	s := a.Status(t, key)
	checkSession(t, "status", s, view{ID: key, Adapter: "openclaw", Status: "stopped",
		Model: "fakeoai/fake-model", Prompt: "hello gateway", Tokens: tokens(sent(ex))})
	if s.Evidence != "gateway" || s.PID != 0 {
		t.Errorf("evidence %q pid %d; want gateway and no pid", s.Evidence, s.PID)
	}
}
