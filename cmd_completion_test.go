package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestComplete(t *testing.T) {
	app := newApp(&host{IOStreams: &IOStreams{}})
	ids := func(prefix string, typed typedGlobals) []string {
		return []string{"ID(" + prefix + typed.Home + strings.Join(typed.Adapters, ",") + ")"}
	}
	first := func(cands []string) []string {
		var out []string
		for _, c := range cands {
			v, _, _ := strings.Cut(c, "\t")
			out = append(out, v)
		}
		return out
	}
	cases := []struct {
		words []string
		want  []string
	}{
		{[]string{"sta"}, []string{"status"}},
		{[]string{"--home", "/x", "sta"}, []string{"status"}},
		{[]string{"__c"}, nil}, // hidden commands are never offered
		{[]string{"status", ""}, []string{"ID()"}},
		{[]string{"peek", "-n", "5", "75"}, []string{"ID(75)"}},
		{[]string{"resume", "abc", ""}, nil}, // MESSAGE: free text
		{[]string{"wait", "a", "b", "c"}, []string{"ID(c)"}},
		{[]string{"launch", "co"}, []string{"codex", "copilot"}},
		{[]string{"list", "--status", "s"}, []string{"stopped"}},
		{[]string{"list", "--status", "b"}, []string{"blocked"}},
		{[]string{"notify", "--on", "w"}, []string{"waiting"}},
		{[]string{"list", "--adapter", "pi"}, []string{"pi", "pi-rust"}},
		{[]string{"list", "--wa"}, []string{"--watch"}},
		{[]string{"metrics", "--text"}, []string{"--textfile"}},
		{[]string{"completion", "z"}, []string{"zsh"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{[]string{"usage", "--by", "m"}, []string{"month", "model"}},
		{[]string{"usage", "--by", "day,m"}, []string{"day,month", "day,model"}},
		{[]string{"usage", "--by=ad"}, []string{"--by=adapter"}},
		{[]string{"notify", "--on", "idle,w"}, []string{"idle,waiting"}},
		{[]string{"notify", "--on", "idle,"}, []string{"idle,running", "idle,waiting", "idle,stopped", "idle,failed", "idle,unknown", "idle,blocked"}},
		{[]string{"wait", "--until", "any"}, []string{"any-change"}},
		{[]string{"events", "--type", "group."}, []string{"group.accepted"}},
		// Session ids of the --home (and --adapter) typed on the line.
		{[]string{"--home", "/h", "status", "75"}, []string{"ID(75/h)"}},
		{[]string{"status", "--home=/h", "--adapter", "codex", "01"}, []string{"ID(01/hcodex)"}},
		{[]string{"launch", "--adapter", "codex", "x"}, nil},
		{[]string{"lock", ""}, nil}, // DIR: the shell completes file names
		{[]string{"nosuch", ""}, nil},
	}
	for _, tc := range cases {
		if d := cmp.Diff(tc.want, first(complete(app, tc.words, ids))); d != "" {
			t.Errorf("%q (-want +got):\n%s", tc.words, d)
		}
	}
}
