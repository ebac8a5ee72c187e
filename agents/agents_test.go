package agents

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRegistry(t *testing.T) {
	if diff := cmp.Diff([]string{"claude-code", "codex", "opencode", "pi", "pi-rust", "openclaw"}, Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"claude-code", "codex", "opencode", "pi", "openclaw"}, Readers()); diff != "" {
		t.Errorf("readers (-want +got):\n%s", diff)
	}
	if got := SubsOf("pi"); len(got) != 1 || got[0] != "pi-rust" {
		t.Errorf("SubsOf(pi) = %v", got)
	}
	if ReaderOf("pi-rust") != "pi" || Known("gemini") || !Known("openclaw") {
		t.Error("ReaderOf/Known")
	}
	if got, want := UnknownError("x").Error(), `unknown adapter "x"; known adapters: claude-code, codex, opencode, pi, pi-rust, openclaw`; got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
}
