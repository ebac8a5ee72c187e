package claude

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
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

// TestGiveUpKeepsLiveSessions: when the budget gives up, the transcripts left
// out are old sessions only. One that a live process owns (here the registry's
// busy 14535) is read all the same, first, and listed as a listing with time
// lists it but for its token totals; an idle old one is left out and named.
func TestGiveUpKeepsLiveSessions(t *testing.T) {
	home := copyHome(t)
	env := newEnv(t, home, &proc.Fake{Procs: []proc.Process{{PID: 14535, Comm: "claude", StartTicks: 25479}}})
	all := discovertest.DiscoverAll(t, testAdapter(), env.Env) // indexes every transcript
	live, ok := all[idInfra]
	if !ok || live.Status != discover.StatusRunning {
		t.Fatalf("fixture: %s is %q, want running", idInfra, live.Status)
	}
	var old discover.Session // an ended session, changed since it was indexed
	for _, s := range all {
		if s.ID != idInfra && s.PID == 0 && s.Path != "" && (old.ID == "" || s.ID < old.ID) {
			old = s
		}
	}
	if old.ID == "" {
		t.Fatal("fixture: no ended session besides the live one")
	}
	// Both transcripts changed long before the claude process started: only
	// the registry keeps the live one from being left out.
	long := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, p := range []string{live.Path, old.Path} {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}

	a := testAdapter()
	past := time.Now().Add(-time.Second)
	a.Budget = func(context.Context) discover.Budget { return discover.Budget{StopAt: past, GiveUpAt: past} }
	env.warnings = nil
	got := discovertest.DiscoverAll(t, a, env.Env)
	if _, listed := got[old.ID]; listed {
		t.Errorf("%s listed although the budget had given up before reading it", old.ID)
	}
	if len(env.warnings) != 1 || !strings.Contains(env.warnings[0], "1 transcripts were not read in time") || !strings.Contains(env.warnings[0], old.ID) {
		t.Errorf("warnings %q, want one naming %s (and nothing else) as left out", env.warnings, old.ID)
	}
	want := discovertest.DiscoverAll(t, testAdapter(), env.Env)[idInfra]
	if diff := cmp.Diff(want, got[idInfra], cmpopts.IgnoreFields(discover.Session{}, "Tokens", "CostUSD", "CostSource", "Slots", "Extra")); diff != "" {
		t.Errorf("live session %s (-with time +given up):\n%s", idInfra, diff)
	}
}

// TestMustRead: which transcripts a listing whose budget gave up reads anyway.
func TestMustRead(t *testing.T) {
	now := time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC)
	start := now.Add(-3 * time.Hour)
	proc := []claudeProc{{PID: 7, Cwd: "/w", StartMs: start.UnixMilli(), HasStart: true}}
	tiedProc := []claudeProc{{PID: 7, Cwd: "/w", StartMs: start.UnixMilli(), HasStart: true, Flags: args{Names: "c"}}}
	liveReg := []regCheck{{regEntry: regEntry{PID: 9, SessionID: "r", Entrypoint: "cli", StartedAt: start.Add(-time.Hour).UnixMilli()}, Verdict: regLive}}
	sdkReg := []regCheck{{regEntry: regEntry{PID: 9, SessionID: "r", Entrypoint: "sdk-cli", StartedAt: start.Add(-time.Hour).UnixMilli()}, Verdict: regLive}}
	deadReg := []regCheck{{regEntry: regEntry{SessionID: "b", StartedAt: start.Add(-48 * time.Hour).UnixMilli()}, Verdict: regStale}}
	f := func(id string, age time.Duration) *fileState {
		return &fileState{transcript: transcript{ID: id}, Mtime: now.Add(-age)}
	}
	named := func(id string) []regCheck {
		return []regCheck{{regEntry: regEntry{SessionID: id}, Verdict: regUnknown}}
	}
	for _, tt := range []struct {
		name   string
		regs   []regCheck
		claude []claudeProc
		file   *fileState
		want   bool
	}{
		{"old, nothing alive", nil, nil, f("a", 5*time.Hour), false},
		{"named by a registry entry that may be alive", named("a"), nil, f("a", 500*time.Hour), true},
		{"named by a claude argv", nil, []claudeProc{{PID: 8, Flags: args{Names: "a"}}}, f("a", 500*time.Hour), true},
		{"written in the last minute", nil, nil, f("a", 30*time.Second), true},
		{"written a minute and more ago", nil, nil, f("a", 61*time.Second), false},
		{"written since a claude process started", nil, proc, f("a", 2*time.Hour), true},
		{"written just before it started", nil, proc, f("a", 3*time.Hour+30*time.Second), true},
		{"written long before it started", nil, proc, f("a", 4*time.Hour), false},
		{"written since a live TUI registry entry started", liveReg, nil, f("a", 3*time.Hour+30*time.Minute), true},
		{"a live non-TUI registry entry has no /clear", sdkReg, nil, f("a", 3*time.Hour+30*time.Minute), false},
		{"a process its argv ties is no process scan's", nil, tiedProc, f("a", 2*time.Hour), false},
		{"the session its argv names", nil, tiedProc, f("c", 200*time.Hour), true},
		{"a dead registry entry names and ties nothing", deadReg, nil, f("b", 5*time.Hour), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustRead(&discover.Env{}, tt.regs, tt.claude, now)(tt.file); got != tt.want {
				t.Errorf("mustRead = %v, want %v", got, tt.want)
			}
		})
	}
}
