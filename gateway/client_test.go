package gateway

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentctl/agentctl/gateway/gatewaytest"
)

// Responses are matched by id: the fake answers each pair in reverse order,
// after an unsolicited tick.
func TestOutOfOrderResponses(t *testing.T) {
	g := gatewaytest.New(t, &gatewaytest.Fake{Reorder: true, Sessions: []map[string]any{{"key": "agent:main:s000"}, {"key": "agent:main:s001"}, {"key": "agent:main:s002"}}})
	ep, err := Resolve(newEnv(t, map[string]string{"OPENCLAW_GATEWAY_URL": g.URL()}).Settings, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := connect(ctx, connectOpts{ep: ep, version: "test", scopes: []string{ScopeRead}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close(ctx)
	id1, err := c.send(ctx, "sessions.list", map[string]any{"limit": 1, "offset": 0})
	if err != nil {
		t.Fatal(err)
	}
	id2, err := c.send(ctx, "sessions.list", map[string]any{"limit": 1, "offset": 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ id, key string }{{id1, "agent:main:s000"}, {id2, "agent:main:s002"}} {
		p, err := c.wait(ctx, w.id, "sessions.list")
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Sessions []struct{ Key string } `json:"sessions"`
		}
		if err := json.Unmarshal(p, &res); err != nil || len(res.Sessions) != 1 || res.Sessions[0].Key != w.key {
			t.Errorf("response to %s: %s", w.id, p)
		}
	}
}
