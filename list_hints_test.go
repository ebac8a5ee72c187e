package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// On a terminal the footer of a partial `list -a` is the table's last line, on
// stdout; stderr stays quiet (list_hints_all.txt covers the pipe: stderr).
func TestListFooterOnTTY(t *testing.T) {
	h, out, errOut := testHost(t)
	h.outTTY = true
	home, _ := fixtureHome(t) // fixtureHome: cmd_metrics_test.go
	h.now = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	// 9 of the fixture's sessions were active from 21:50 on, 19 before (the
	// unknown one among them: untouched inside the window, it counts as ended).
	o := listOptions{globalOptions: globalOptions{Home: home, NoColor: true}, All: true, Since: "2026-11-20T21:50"}
	if err := runList(context.Background(), h, o); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if want := "19 sessions older than 10d not shown, the newest 10d ago (use --since 11d)"; len(lines) != 11 || lines[10] != want {
		t.Errorf("stdout:\n%s\nwant the table and last the line %q", out, want)
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr: %q, want nothing", errOut)
	}
}

// An empty plain list whose sessions ended inside the window says -a shows
// them (testHost's clock: an hour after the fixture files were written).
func TestListEmptySaysEndedInWindow(t *testing.T) {
	h, out, errOut := testHost(t)
	h.outTTY = true
	home, _ := fixtureHome(t)
	o := listOptions{globalOptions: globalOptions{Home: home, Adapters: []string{"codex"}}}
	if err := runList(context.Background(), h, o); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"No sessions found.\n", "\n8 sessions ended in the last 7d (use -a)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout:\n%s\nwant %q in it", out, want)
		}
	}
	if strings.Contains(out.String(), "older") || errOut.Len() > 0 {
		t.Errorf("stdout:\n%s\nstderr: %q; want no older sessions and no stderr", out, errOut)
	}
}

// Piped (a script, cron), an empty plain list reads no history to count what it
// left out: it points at -a instead.
func TestListEmptyPipedReadsNoHistory(t *testing.T) {
	h, out, _ := testHost(t)
	home, _ := fixtureHome(t)
	o := listOptions{globalOptions: globalOptions{Home: home, Adapters: []string{"codex"}}}
	if err := runList(context.Background(), h, o); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Contains(got, "ended in the last") || !strings.Contains(got, "Ended sessions are listed with -a") {
		t.Errorf("stdout:\n%s\nwant the -a pointer and no count", got)
	}
}

// On a terminal an empty plain list counts what the window left out (the same
// listing piped only points at -a: testdata/script/list_hints_adapter.txt).
func TestListEmptyCountsOlderOnTTY(t *testing.T) {
	h, out, _ := testHost(t)
	h.outTTY = true
	home, _ := fixtureHome(t)
	o := listOptions{globalOptions: globalOptions{Home: home, Adapters: []string{"codex"}}, Since: "1h"}
	if err := runList(context.Background(), h, o); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "sessions older than 1h not shown") {
		t.Errorf("stdout:\n%s\nwant the count of older sessions", got)
	}
}
