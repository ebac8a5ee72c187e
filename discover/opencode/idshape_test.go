package opencode

import (
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/discover/discovertest"
)

// MayHold must never turn away an id this adapter lists (discover.FindFor would
// then resolve without it): every session of both layouts' fixtures passes, a
// UUID (Claude, Codex, Pi) does not.
func TestMayHoldEveryListedID(t *testing.T) {
	a := testAdapter()
	legacy := t.TempDir()
	discovertest.CopyTree(t, testdata(t, "legacy/storage"), filepath.Join(legacy, ".local", "share", "opencode", "storage"))
	for home, dir := range map[string]string{"db": testdata(t, "home"), "legacy": legacy} {
		got, _ := list(t, newEnv(dir, nil, noProcs()))
		if len(got) == 0 {
			t.Fatalf("%s: no fixture sessions", home)
		}
		for id := range got {
			if !a.MayHold(id) {
				t.Errorf("%s: MayHold(%q) = false for a listed session", home, id)
			}
		}
	}
	if a.MayHold("3f498825-ee20-4a4f-b5f0-5b3714aa7f3c") {
		t.Error("MayHold(a UUID) = true, want false")
	}
}
