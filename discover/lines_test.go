package discover

import (
	"strings"
	"testing"
)

func TestCleanStripsControls(t *testing.T) {
	in := "ok \x1b[31mred\x1b[0m \x1b]0;title\x07bell\x07 tab\tnl\n bad\xff"
	want := "ok red bell tab\tnl\n bad\uFFFD"
	if got := Clean(in); got != want {
		t.Errorf("Clean = %q, want %q", got, want)
	}
	if got := OneLine("a\n  b\tc "+strings.Repeat("é", 70), 10); got != "a b c ééé…" {
		t.Errorf("OneLine = %q", got)
	}
}
