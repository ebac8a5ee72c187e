package claude

import (
	"testing"

	"github.com/agentctl/agentctl/discover/discovertest"
)

// MayHold must never turn away an id this adapter lists (discover.FindFor would
// then resolve without it): every fixture session passes, other agents' ids do not.
func TestMayHoldEveryListedID(t *testing.T) {
	env := newEnv(t, copyHome(t), nil)
	a := testAdapter()
	got := discovertest.DiscoverAll(t, a, env.Env)
	if len(got) == 0 {
		t.Fatal("no fixture sessions")
	}
	for id := range got {
		if !a.MayHold(id) {
			t.Errorf("MayHold(%q) = false for a listed session", id)
		}
	}
	for _, id := range []string{"ses_3c1f0a8bffeeY2pq0kR7m1xN4T", "agent:main:main", "0193"} {
		if a.MayHold(id) {
			t.Errorf("MayHold(%q) = true, want false", id)
		}
	}
}

func TestUUIDShape(t *testing.T) {
	for _, c := range []struct {
		s              string
		uuid, prefixOK bool
	}{
		{"0b3c5a1e-7f2d-4c8e-9a6b-1d2e3f4a5b6c", true, true},
		{"0B3C5A1E-7F2D-4C8E-9A6B-1D2E3F4A5B6C", true, true},
		{"0b3c5a1e-7f2d-4c8e-9a6b-1d2e3f4a5b6", false, true},    // one short: a prefix
		{"0b3c5a1e-7f2d-4c8e-9a6b-1d2e3f4a5b6c0", false, false}, // one long
		{"0b3c5a1e-7f2d-4c8e-9a6b-1d2e3f4a5b6g", false, false},  // not hex
		{"0b3c5a1e07f2d-4c8e-9a6b-1d2e3f4a5b6c", false, false},  // no dash at 8
		{"0b3c5a1e-", false, true},
		{"0b3c", false, true},
		{"", false, true},
		{"0b3c-", false, false},
	} {
		if got := isUUID(c.s); got != c.uuid {
			t.Errorf("isUUID(%q) = %v, want %v", c.s, got, c.uuid)
		}
		if got := uuidPrefix(c.s); got != c.prefixOK {
			t.Errorf("uuidPrefix(%q) = %v, want %v", c.s, got, c.prefixOK)
		}
	}
}
