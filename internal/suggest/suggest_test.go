package suggest

import "testing"

func TestClosest(t *testing.T) {
	cmds := [][]string{{"list", "ls"}, {"status"}, {"sweep", "prune"}, {"stop"}, {"events"}}
	for _, tc := range []struct{ typed, want string }{
		{"lsit", "list"},   // a transposition is one edit
		{"swepe", "sweep"}, // and so here
		{"prnue", "sweep"}, // an alias answers with the canonical name
		{"stat", "status"}, // a prefix of exactly one
		{"st", ""},         // a prefix of several: no guess
		{"frobnicate", ""}, // nothing near
		{"evnts", "events"},
	} {
		if got := Closest(tc.typed, cmds); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
}
