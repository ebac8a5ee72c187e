package pi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/discover/index"
)

func sessionsOf(t *testing.T, env *discover.Env) []discover.Session {
	t.Helper()
	ss, err := New().Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	discover.SortSessions(ss)
	return ss
}

// The parse index is a cache: cold, warm, after an append and after an in-place
// rewrite, the output equals a run without it.
func TestIndexIsACache(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	discovertest.CopyTree(t, fixtureHome, home)
	env, warns := testEnv(t, home, nil)
	env.StateDir = t.TempDir()
	noCache := func() []discover.Session {
		e := *env
		e.NoCache = true
		return sessionsOf(t, &e)
	}

	cold := sessionsOf(t, env)
	if diff := cmp.Diff(noCache(), cold); diff != "" {
		t.Fatalf("cold run differs from no-cache (-want +got):\n%s", diff)
	}
	ix := index.Load[summary](env.CacheDir(), Name, indexVersion)
	if ix.Len() != 4 {
		t.Errorf("index holds %d files, want 4", ix.Len())
	}
	if diff := cmp.Diff(cold, sessionsOf(t, env)); diff != "" {
		t.Errorf("warm run differs (-cold +warm):\n%s", diff)
	}

	// pi resumes by appending: the index parses only the new lines.
	p := filepath.Join(home, ".pi/agent/sessions/--home-dev-api-server--/2026-11-20T21-44-08-069Z_01a1faea-b485-714f-9f73-af5206c9d06d.jsonl")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(userMsg("c0000001", "309eacc8", "2026-11-20T21:58:00.000Z", textBlocks("more")) + "\n" +
		asstMsg("c0000002", "c0000001", "2026-11-20T21:58:01.000Z", "ok", "stop", 1000, 10, costObj(0.5)) + "\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	appended := sessionsOf(t, env)
	if diff := cmp.Diff(noCache(), appended); diff != "" {
		t.Errorf("after append (-nocache +indexed):\n%s", diff)
	}
	for _, s := range appended {
		if s.ID == "01a1faea-b485-714f-9f73-af5206c9d06d" && (s.Tokens.Input != 1123 || *s.CostUSD != 0.500213) {
			t.Errorf("after append tokens %+v cost %v", s.Tokens, *s.CostUSD)
		}
	}

	// pi-rust saves by rewriting the whole file (temp + rename, a new inode),
	// changing earlier rows: rebuilt, not appended to.
	b, _ := os.ReadFile(p)
	b = []byte(strings.Replace(string(b), `"input":123`, `"input":999`, 1))
	b = append(b, []byte(asstMsg("c0000003", "c0000002", "2026-11-20T21:59:00.000Z", "x", "stop", 1, 1, costObj(0))+"\n")...)
	if err := os.WriteFile(p+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(noCache(), sessionsOf(t, env)); diff != "" {
		t.Errorf("after in-place rewrite (-nocache +indexed):\n%s", diff)
	}
	if len(*warns) != 0 {
		t.Errorf("warnings %q", *warns)
	}
}

// Out of time with a cold index: every session is still listed, from its head
// and tail, with everything but the totals, and a warning says so.
func TestQuickSummaryWhenOverBudget(t *testing.T) {
	env, warns := testEnv(t, fixtureHome, nil)
	full := sessionsOf(t, env)

	sc := &scanner{ix: index.Load[summary]("", Name, indexVersion), budget: discover.Budget{StopAt: time.Unix(1, 0)}}
	files := oneper(env, sc.scan(context.Background(), env, listFiles(env, roots(env), nil, nil, nil)), nil)
	var quick []discover.Session
	for _, f := range files {
		if f.Complete {
			t.Errorf("%s complete despite the budget", f.Path)
		}
		quick = append(quick, f.session(discover.NewPrices(nil, env.Config), owner{}, false, true, nil))
	}
	discover.SortSessions(quick)
	for i := range full {
		full[i].Tokens, full[i].CostUSD, full[i].CostSource, full[i].Slots = nil, nil, "", nil
	}
	if diff := cmp.Diff(full, quick); diff != "" {
		t.Errorf("quick summaries differ from full ones beyond totals (-full +quick):\n%s", diff)
	}
	if len(*warns) != 1 || !strings.Contains((*warns)[0], "4 sessions were summarised without token totals") {
		t.Errorf("warnings %q", *warns)
	}
	for _, s := range full {
		if len(*warns) == 1 && !strings.Contains((*warns)[0], s.ID) {
			t.Errorf("the warning does not name incomplete session %s: %q", s.ID, (*warns)[0])
		}
	}
}

// Past the point where the budget gives up, the files not read yet are left
// out, named in a warning, instead of the adapter running into its deadline and
// answering nothing (a cold disk: even 10,000 summaries took longer than the
// timeout); the files the index still covers are listed as ever, and the next
// run with time lists every one again.
func TestGiveUpLeavesOutUnreadFiles(t *testing.T) {
	env, warns, paths, cache, all := indexedFixture(t)
	changed := all[0].Path // its index entry no longer holds: it must be read again
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(changed, later, later); err != nil {
		t.Fatal(err)
	}

	past := time.Now().Add(-time.Second)
	ix := index.Load[summary](cache, Name, indexVersion)
	got := (&scanner{ix: ix, budget: discover.Budget{StopAt: past, GiveUpAt: past}}).scan(context.Background(), env, paths)
	var listed []string
	for _, f := range got {
		listed = append(listed, f.Path)
		if f.Path == changed {
			t.Errorf("%s listed although it was not read", f.Path)
		}
	}
	if len(listed) != len(all)-1 {
		t.Errorf("listed %q, want every file but %s", listed, changed)
	}
	if len(*warns) != 1 || !strings.Contains((*warns)[0], "1 session files were not read in time and are missing") ||
		!strings.Contains((*warns)[0], filepath.Base(changed)) {
		t.Errorf("warnings %q, want one naming %s as missing", *warns, filepath.Base(changed))
	}

	*warns = nil
	if got := (&scanner{ix: index.Load[summary](cache, Name, indexVersion)}).scan(context.Background(), env, paths); len(got) != len(all) {
		t.Errorf("with time again: %d files listed, want %d", len(got), len(all))
	}
	if len(*warns) != 0 {
		t.Errorf("with time again: warnings %q", *warns)
	}
}

// Big tool results and later user messages are summarised from their first bytes;
// the summary must be exactly what a full decode gives.
func TestBigLinesSameSummary(t *testing.T) {
	lines := func(pad int) []string {
		big := strings.Repeat("x", pad)
		return []string{
			hdr("01a1fb00-0000-7000-8000-0000000000d1", "2026-11-20T21:00:00.000Z", "/p"),
			userMsg("u1", "", "2026-11-20T21:00:00.100Z", textBlocks("first "+big)),
			`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-20T21:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"cat big"}}],"provider":"p","model":"m","usage":{"input":5,"output":6,"cacheRead":0,"cacheWrite":0,"cost":{"total":0.5}},"stopReason":"toolUse","timestamp":1795208400900}}`,
			`{"type":"message","id":"t1","parentId":"a1","timestamp":"2026-11-20T21:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"` + big + `"}],"isError":false,"timestamp":1795208401999}}`,
			userMsg("u2", "t1", "2026-11-20T21:00:03.000Z", textBlocks("again "+big)),
		}
	}
	sum := func(ls []string) summary {
		var s summary
		for _, l := range ls {
			s.feed([]byte(l))
		}
		s.Prompt = strings.Fields(s.Prompt)[0]
		return s
	}
	for _, n := range []int{4, 5} { // ending with the tool result, then with the user message
		small, large := sum(lines(10)[:n]), sum(lines(200 << 10)[:n])
		if diff := cmp.Diff(small, large); diff != "" {
			t.Errorf("big-line summary differs (-decoded +fast):\n%s", diff)
		}
		if large.ToolResults != 1 || large.Users != n-3 || large.Leaf.Role != map[int]string{4: "toolResult", 5: "user"}[n] {
			t.Errorf("summary %+v", large)
		}
	}
}

// TestGiveUpKeepsMustRead: past the point where the budget gives up, a file
// the scanner must read (one a live session may be: mustRead) is read all the
// same, and before the others; the other changed file is left out and named.
func TestGiveUpKeepsMustRead(t *testing.T) {
	env, warns, paths, cache, all := indexedFixture(t)
	live, old := all[0].Path, all[1].Path // both changed: neither index entry holds
	later := time.Now().Add(time.Hour)
	for _, p := range []string{live, old} {
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-time.Second)
	sc := &scanner{ix: index.Load[summary](cache, Name, indexVersion), budget: discover.Budget{StopAt: past, GiveUpAt: past},
		mustRead: func(f *file) bool { return f.Path == live }}
	listed := map[string]bool{}
	for _, f := range sc.scan(context.Background(), env, paths) {
		listed[f.Path] = true
	}
	if !listed[live] || listed[old] || len(listed) != len(all)-1 {
		t.Errorf("listed %v, want every file but %s (%s included)", listed, old, live)
	}
	if len(*warns) != 1 || !strings.Contains((*warns)[0], "1 session files were not read in time") || !strings.Contains((*warns)[0], filepath.Base(old)) {
		t.Errorf("warnings %q, want one naming %s as left out", *warns, filepath.Base(old))
	}
}

// TestMustRead: which files a listing whose budget gave up reads anyway.
func TestMustRead(t *testing.T) {
	const id = "0b0b0b0b-1111-4222-8333-444455556666"
	start := time.Date(2026, 11, 20, 19, 0, 0, 0, time.UTC)
	cands := []candidate{{PID: 7, Start: start, Cwd: "/w"}, {PID: 8, Start: start.Add(time.Hour), Cwd: "/v"}}
	f := func(name string, mtime time.Time) *file { return &file{Path: "/s/--w--/" + name, mtime: mtime} }
	named := "2026-01-02T03-04-05-000Z_" + id + ".jsonl"
	other := "2026-01-02T03-04-05-000Z_1b0b0b0b-1111-4222-8333-444455556666.jsonl"
	for _, tt := range []struct {
		name     string
		launched map[string]string
		cands    []candidate
		file     *file
		want     bool
	}{
		{"nothing alive", nil, nil, f(named, start), false},
		{"launched by agentctl", map[string]string{id: Name}, nil, f(named, start.Add(-500*time.Hour)), true},
		{"another launch", map[string]string{id: Name}, nil, f(other, start.Add(-500*time.Hour)), false},
		{"written since the earliest pi process started", nil, cands, f(other, start.Add(30*time.Minute)), true},
		{"written just before it started", nil, cands, f(other, start.Add(-30*time.Second)), true},
		{"written long before", nil, cands, f(other, start.Add(-2*time.Hour)), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustRead(tt.launched, tt.cands)(tt.file); got != tt.want {
				t.Errorf("mustRead = %v, want %v", got, tt.want)
			}
		})
	}
}

// indexedFixture copies the fixture home and indexes every session file of it
// into cache, as a listing with time would: the env (and its warnings), the
// files, the cache dir and the files scanned (two or more).
func indexedFixture(t *testing.T) (env *discover.Env, warns *[]string, paths []string, cache string, all []*file) {
	t.Helper()
	home := t.TempDir()
	discovertest.CopyTree(t, fixtureHome, home)
	env, warns = testEnv(t, home, nil)
	paths = listFiles(env, roots(env), nil, nil, nil)
	cache = t.TempDir()
	ix := index.Load[summary](cache, Name, indexVersion)
	all = (&scanner{ix: ix}).scan(context.Background(), env, paths)
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Fatalf("%d session files: the test needs two or more", len(all))
	}
	return env, warns, paths, cache, all
}
