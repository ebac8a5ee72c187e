package claude

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

// TestForkCountedOnce: the fork fixture 9ee4fdd2 copied the three turns of
// 63a9dd20 (10 in / 5 out each) and added two of its own. Per session the
// figures stay whole (30/15 and 50/25); the fork says 30/15 of it is inherited,
// so the sum of Own over both is 50/25, not 80/40. `status` (Find) says the same.
func TestForkCountedOnce(t *testing.T) {
	const parent, fork = "63a9dd20-452d-46cb-844e-bd4800ad2458", "9ee4fdd2-41ff-4937-a320-74e0a6f6767c"
	env := newEnv(t, copyHome(t), nil)
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	p, f := got[parent], got[fork]
	if diff := cmp.Diff(&discover.Tokens{Input: 30, Output: 15}, p.Tokens); diff != "" {
		t.Errorf("parent tokens (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&discover.Tokens{Input: 50, Output: 25}, f.Tokens); diff != "" {
		t.Errorf("fork tokens (-want +got):\n%s", diff)
	}
	if _, ok := p.Extra["tokens_inherited"]; ok {
		t.Errorf("parent has inherited tokens: %v", p.Extra)
	}
	if diff := cmp.Diff(discover.Tokens{Input: 30, Output: 15}, f.Extra["tokens_inherited"]); diff != "" {
		t.Errorf("fork tokens_inherited (-want +got):\n%s", diff)
	}
	var sum discover.Tokens
	var usd float64
	for _, s := range []discover.Session{p, f} {
		tok, c := s.Own()
		sum.Add(tok)
		usd += c
	}
	if diff := cmp.Diff(discover.Tokens{Input: 50, Output: 25}, sum); diff != "" {
		t.Errorf("sum of own tokens (-want +got):\n%s", diff)
	}
	// opus-4-8: 50·5 + 25·25 = 875 per million.
	if math.Abs(usd-875e-6) > 1e-12 {
		t.Errorf("sum of own cost %v, want 0.000875", usd)
	}

	ss, err := testAdapter().Find(context.Background(), env.Env, discover.Query{Prefix: fork[:8]})
	if err != nil || len(ss) != 1 {
		t.Fatalf("Find: %v %v", ss, err)
	}
	if diff := cmp.Diff(f.Extra, ss[0].Extra); diff != "" {
		t.Errorf("Find extra (-Discover +Find):\n%s", diff)
	}
}
