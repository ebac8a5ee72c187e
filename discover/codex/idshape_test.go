package codex

import (
	"testing"

	"github.com/agentctl/agentctl/discover/discovertest"
)

// MayHold must never turn away an id this adapter lists (discover.FindFor would
// then resolve without it): every fixture thread passes, other agents' ids do not.
func TestMayHoldEveryListedID(t *testing.T) {
	a := testAdapter(nil)
	got := discovertest.DiscoverAll(t, a, testEnv(fixtureHome(t), nil, nil))
	if len(got) == 0 {
		t.Fatal("no fixture threads")
	}
	for id := range got {
		if !a.MayHold(id) {
			t.Errorf("MayHold(%q) = false for a listed thread", id)
		}
	}
	for _, id := range []string{"ses_3c1f0a8bffeeY2pq0kR7m1xN4T", "agent:main:main", "0193"} {
		if a.MayHold(id) {
			t.Errorf("MayHold(%q) = true, want false", id)
		}
	}
}
