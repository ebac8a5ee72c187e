package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// send's ID argument completes session ids, its MESSAGE nothing; -f takes a
// file name (the shell's), after which the ID is still completed.
func TestSendCompletion(t *testing.T) {
	app := newApp(&host{IOStreams: &IOStreams{}})
	ids := func(prefix string, _ typedGlobals) []string { return []string{"ID(" + prefix + ")"} }
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"se"}, []string{"send"}},
		{[]string{"send", "75"}, []string{"ID(75)"}},
		{[]string{"send", "abc", ""}, nil},
		{[]string{"send", "-f", "notes.md", "01"}, []string{"ID(01)"}},
		{[]string{"send", "--no"}, []string{"--no-color", "--no-wait"}},
	} {
		var got []string
		for _, c := range complete(app, tc.words, ids) {
			v, _, _ := strings.Cut(c, "\t")
			got = append(got, v)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%q (-want +got):\n%s", tc.words, d)
		}
	}
}
