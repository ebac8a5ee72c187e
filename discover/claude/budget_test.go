package claude

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentctl/agentctl/discover"
)

// budgetHome writes transcripts whose listing depends on lines a head and a 64
// KiB tail do not hold: a model switch, a rename, a permission-mode change and
// a summary in the middle, a first prompt after a megabyte of other records, a
// late line with the earliest timestamp, and a last reply followed by a long
// tool output.
func budgetHome(t *testing.T) []transcript {
	home := t.TempDir()
	const cwd = "/w"
	big := strings.Repeat("output line of a long tool result\n", 3000) // ~100 KB
	ts := func(min int) string { return fmt.Sprintf("2026-11-20T21:%02d:00.000Z", min) }
	turn := func(sid string, min int, model, msg string) []string {
		return []string{
			userPrompt(sid, cwd, ts(min), fmt.Sprintf("prompt %d", min)),
			assistantLine(sid, cwd, ts(min), msg+"a", "r"+msg, model, toolUseBlock("t"+msg, "Bash", `{"command":"make"}`), "tool_use", usageJSON(10, 5, 0, 0)),
			toolResult(sid, cwd, ts(min), "t"+msg, big, false),
			assistantLine(sid, cwd, ts(min), msg+"b", "r"+msg+"b", model, textBlock("done "+msg), "end_turn", usageJSON(20, 7, 0, 0)),
		}
	}
	ids := []string{
		"b0000000-0000-4000-8000-000000000001",
		"b0000000-0000-4000-8000-000000000002",
		"b0000000-0000-4000-8000-000000000003",
	}
	var out []transcript
	// 1: model switch, rename, plan mode and a summary in the middle; the last
	// reply is followed by a long tool output.
	var l1 []string
	l1 = append(l1, turn(ids[0], 1, "claude-sonnet-4-5", "m1")...)
	l1 = append(l1, turn(ids[0], 2, "claude-opus-4-8", "m2")...)
	l1 = append(l1,
		fmt.Sprintf(`{"type":"custom-title","customTitle":"renamed in the middle","sessionId":%q}`, ids[0]),
		fmt.Sprintf(`{"type":"permission-mode","permissionMode":"plan","sessionId":%q}`, ids[0]),
		`{"type":"summary","summary":"a summary","leafUuid":"x"}`,
	)
	l1 = append(l1, turn(ids[0], 3, "claude-haiku-4-5", "m3")...)
	l1 = append(l1, toolResult(ids[0], cwd, ts(4), "tm3", big, false))
	// 2: the first prompt after a megabyte of meta records; a late line carries
	// the earliest timestamp.
	var l2 []string
	for i := 0; i < 12; i++ {
		l2 = append(l2, fmt.Sprintf(`{"type":"user","isMeta":true,"message":{"role":"user","content":%s},%s}`, q(big), envelope(ids[1], cwd, ts(10))))
	}
	l2 = append(l2, turn(ids[1], 11, "claude-opus-4-8", "p1")...)
	l2 = append(l2, turn(ids[1], 12, "claude-opus-4-8", "p2")...)
	l2 = append(l2, fmt.Sprintf(`{"type":"system","subtype":"informational","content":"x",%s}`, envelope(ids[1], cwd, ts(0))))
	l2 = append(l2, turn(ids[1], 13, "claude-opus-4-8", "p3")...)
	// 3: small, fully inside the head and tail.
	l3 := turn(ids[2], 20, "claude-opus-4-8", "s1")
	for i, lines := range [][]string{l1, l2, l3} {
		p := writeTranscript(t, home, "-w", ids[i], lines...)
		out = append(out, transcript{ID: ids[i], Path: p})
	}
	return out
}

// TestBudgetKeepsFields: a transcript summarised because the time budget ran out
// (past StopAt) lists every field as a full parse does; only the token totals
// and what derives from them (cost, usage slots) are left out.
func TestBudgetKeepsFields(t *testing.T) {
	ts := budgetHome(t)
	session := func(f *fileState) discover.Session {
		return toSession(f, discover.Verdict{}, newPriceTable(nil), func(string) {})
	}
	full := map[string]discover.Session{}
	for _, f := range scanAll(t, &scanner{ix: loadIndex("")}, ts) {
		if !f.Complete {
			t.Fatalf("%s: not complete without a budget", f.ID)
		}
		full[f.ID] = session(f)
	}
	past := time.Now().Add(-time.Second)
	for _, b := range []struct {
		name   string
		budget discover.Budget
	}{
		{"over", discover.Budget{StopAt: past}},
	} {
		files := scanAll(t, &scanner{ix: loadIndex(t.TempDir()), budget: b.budget}, ts)
		if len(files) != len(ts) {
			t.Fatalf("%s: %d of %d transcripts listed", b.name, len(files), len(ts))
		}
		for _, f := range files {
			if f.Complete {
				t.Errorf("%s: %s complete", b.name, f.ID)
			}
			got := session(f)
			if got.Tokens != nil || got.CostUSD != nil {
				t.Errorf("%s: %s has tokens %v cost %v from a summary", b.name, f.ID, got.Tokens, got.CostUSD)
			}
			want := full[f.ID]
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(discover.Session{}, "Tokens", "CostUSD", "CostSource", "Slots", "Extra")); diff != "" {
				t.Errorf("%s: %s (-full +summary):\n%s", b.name, filepath.Base(f.Path), diff)
			}
		}
	}
}

// TestGiveUpLeavesOutUnread: past the point where the budget gives up, the
// transcripts not read yet are left out and named (sc.late), instead of the
// adapter reading on into its deadline and answering nothing (a cold disk
// makes even summaries slow); those the index still covers are listed as
// ever, and a run with time lists every one again.
func TestGiveUpLeavesOutUnread(t *testing.T) {
	ts := budgetHome(t)
	cache := t.TempDir()
	ix := loadIndex(cache)
	if got := scanAll(t, &scanner{ix: ix}, ts); len(got) != len(ts) {
		t.Fatalf("%d of %d transcripts listed with time", len(got), len(ts))
	}
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	changed := ts[0] // its index entry no longer holds: it must be read again
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(changed.Path, later, later); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Second)
	sc := &scanner{ix: loadIndex(cache), budget: discover.Budget{StopAt: past, GiveUpAt: past}}
	var listed []string
	for _, f := range scanAll(t, sc, ts) {
		listed = append(listed, f.ID)
	}
	if len(listed) != len(ts)-1 || strings.Contains(strings.Join(listed, " "), changed.ID) {
		t.Errorf("listed %q, want every transcript but %s", listed, changed.ID)
	}
	if len(sc.late) != 1 || sc.late[0] != changed.ID {
		t.Errorf("left out %q, want [%s]", sc.late, changed.ID)
	}
	if got := scanAll(t, &scanner{ix: loadIndex(cache)}, ts); len(got) != len(ts) {
		t.Errorf("with time again: %d of %d transcripts listed", len(got), len(ts))
	}
}
