package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

func indexFile(env *discover.Env) string { return filepath.Join(env.CacheDir(), Name+".index") }

// must fails the test on a setup error: a step that silently did nothing
// would make a cache test pass for the wrong reason.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// scanAll runs sc over ts; any file it could not read fails the test.
func scanAll(t *testing.T, sc *scanner, ts []transcript) []*fileState {
	t.Helper()
	files, errs := sc.scan(t.Context(), ts)
	if len(errs) > 0 {
		t.Fatalf("scan: %v", errs)
	}
	return files
}

// readFile is os.ReadFile for test setup.
func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return b
}

// TestCacheDeletionChangesNothing: cold, warm, after deleting the index, after
// corrupting it, and with caching disabled, the output is the same.
func TestCacheDeletionChangesNothing(t *testing.T) {
	home := copyHome(t)
	procs := &proc.Fake{Procs: []proc.Process{{PID: 14535, Comm: "claude", StartTicks: 25479}}}
	env := newEnv(t, home, procs)
	a := testAdapter()
	cold := discovertest.DiscoverAll(t, a, env.Env)
	if _, err := os.Stat(indexFile(env.Env)); err != nil {
		t.Fatalf("no index written: %v", err)
	}
	steps := []struct {
		name   string
		before func()
	}{
		{"warm", func() {}},
		{"index deleted", func() { must(t, os.Remove(indexFile(env.Env))) }},
		{"index corrupt", func() { must(t, os.WriteFile(indexFile(env.Env), []byte("garbage\x00\x01"), 0o600)) }},
		{"index truncated", func() {
			b := readFile(t, indexFile(env.Env))
			must(t, os.WriteFile(indexFile(env.Env), b[:len(b)/2], 0o600))
		}},
		{"caching disabled", func() { env.NoCache = true }},
	}
	for _, st := range steps {
		st.before()
		got := discovertest.DiscoverAll(t, a, env.Env)
		if diff := cmp.Diff(cold, got); diff != "" {
			t.Errorf("%s (-cold +now):\n%s", st.name, diff)
		}
	}
	if _, err := os.Stat(filepath.Join(env.StateDir, "cache")); err != nil {
		t.Fatal(err)
	}
	// The index is the only thing written, and only under the state dir.
	var written []string
	must(t, filepath.Walk(env.StateDir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			written = append(written, strings.TrimPrefix(p, env.StateDir))
		}
		return nil
	}))
	if diff := cmp.Diff([]string{"/cache/claude-code-forks.index", "/cache/claude-code.index"}, written); diff != "" {
		t.Errorf("files in the state dir (-want +got):\n%s", diff)
	}
}

// TestCacheFollowsAppends: each appended turn is picked up; the result always
// equals a parse without cache.
func TestCacheFollowsAppends(t *testing.T) {
	const sid, cwd = idA, "/w"
	home := t.TempDir()
	p := writeTranscript(t, home, "-w", sid, userPrompt(sid, cwd, "2026-11-20T21:00:00.000Z", "go"))
	env := newEnv(t, home, nil)
	plain := newEnv(t, home, nil)
	plain.NoCache = true
	a := testAdapter()
	for i := 1; i <= 5; i++ {
		ts := "2026-11-20T21:00:0" + string(rune('0'+i)) + ".000Z"
		line := assistantLine(sid, cwd, ts, "m1", "r1", "claude-opus-4-8", textBlock("part "+string(rune('0'+i))), "", usageJSON(7, 10*i, 0, 0))
		discovertest.AppendFile(t, p, line+"\n")
		mt := fixtureMtime.Add(time.Duration(i) * time.Second)
		must(t, os.Chtimes(p, mt, mt))
		got, want := discovertest.DiscoverAll(t, a, env.Env)[sid], discovertest.DiscoverAll(t, a, plain.Env)[sid]
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("after append %d (-no cache +cache):\n%s", i, diff)
		}
		if tok := tokensOf(t, got); tok.Output != int64(10*i) {
			t.Fatalf("after append %d: output %d, want %d (last line of the group)", i, tok.Output, 10*i)
		}
	}
	// Shrinking (or replacing) the file starts over.
	writeTranscript(t, home, "-w", sid, userPrompt(sid, cwd, "2026-11-20T21:00:00.000Z", "replaced"))
	if s := discovertest.DiscoverAll(t, a, env.Env)[sid]; s.Prompt != "replaced" || !tokensOf(t, s).Zero() {
		t.Errorf("after a rewrite: prompt %q tokens %+v", s.Prompt, s.Tokens)
	}
}

// TestFreshEntryNotReread: a transcript whose stamp (device, inode, size, mtime)
// is unchanged is answered from the index without opening it.
func TestFreshEntryNotReread(t *testing.T) {
	home := copyHome(t)
	env := newEnv(t, home, nil)
	a := testAdapter()
	before := discovertest.DiscoverAll(t, a, env.Env)[idWebapp]
	p := filepath.Join(home, ".claude/projects/-home-dev-webapp", idWebapp+".jsonl")
	b := readFile(t, p)
	copy(b, strings.Repeat(" ", 200)) // same size; restore the mtime below
	must(t, os.WriteFile(p, b, 0o600))
	must(t, os.Chtimes(p, fixtureMtime, fixtureMtime))
	if after := discovertest.DiscoverAll(t, a, env.Env)[idWebapp]; !cmp.Equal(before, after) {
		t.Errorf("a fresh entry was re-read:\n%s", cmp.Diff(before, after))
	}
}

// TestBudget: when full parsing runs out of time, transcripts are summarised
// without token totals, and the next run finishes the job.
func TestBudget(t *testing.T) {
	home := copyHome(t)
	root := filepath.Join(home, ".claude")
	ts, err := listTranscripts(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sc := &scanner{ix: loadIndex(dir), budget: discover.Budget{StopAt: time.Now().Add(-time.Second)}}
	quick := map[string]*fileState{}
	files := scanAll(t, sc, ts)
	for _, f := range files {
		quick[f.ID] = f
	}
	full := map[string]*fileState{}
	files = scanAll(t, &scanner{ix: loadIndex("")}, ts)
	for _, f := range files {
		full[f.ID] = f
	}
	for id, f := range full {
		q := quick[id]
		if q == nil || q.Complete {
			t.Fatalf("%s: want a quick summary", id)
		}
		// Every field but the token totals (TestBudgetKeepsFields has the
		// transcripts a head and a tail would get wrong).
		type view struct {
			Cwd, LastCwd, Prompt, Version, Entrypoint, Perm, Model string
			Start, Last                                            int64
			Tail                                                   uint8
		}
		v := func(a *aggregate) view {
			return view{a.Cwd, a.LastCwd, a.firstPrompt(), a.Version, a.Entrypoint, a.permissionMode(), a.Model, a.StartMs, a.LastMs, a.Last.Kind}
		}
		if diff := cmp.Diff(v(f.Agg), v(q.Agg)); diff != "" {
			t.Errorf("%s summary (-full +summary):\n%s", id[:8], diff)
		}
	}
	// The next run without a budget completes every file.
	sc = &scanner{ix: loadIndex(dir)}
	files = scanAll(t, sc, ts)
	for _, f := range files {
		if !f.Complete || f.Agg.Tokens() != full[f.ID].Agg.Tokens() {
			t.Errorf("%s: complete=%v tokens %+v", f.ID[:8], f.Complete, f.Agg.Tokens())
		}
	}
}

// TestParseResumes: a parse stopped part-way (time budget) and resumed from its
// offset ends in exactly the state of one full parse.
func TestParseResumes(t *testing.T) {
	const sid, cwd = idA, "/w"
	var lines []string
	pad := strings.Repeat("p", 20<<10)
	for i := 0; i < 200; i++ {
		ts := time.Date(2026, 11, 20, 21, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format("2006-01-02T15:04:05.000Z")
		lines = append(lines,
			userPrompt(sid, cwd, ts, "prompt "+pad[:i]),
			assistantLine(sid, cwd, ts, "m"+itoa(i), "r"+itoa(i), "claude-opus-4-8", textBlock(pad), "end_turn", usageJSON(i, 2*i, 3, 4)))
	}
	p := writeTranscript(t, t.TempDir(), "-w", sid, lines...)
	whole := parseWhole(t, p)

	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	must(t, err)
	var a aggregate
	next, partial, err := parseRange(f, 0, st.Size(), &a, discover.Budget{StopAt: time.Now().Add(-time.Second)}, nil)
	if err != nil || !partial || next <= 0 || next >= st.Size() {
		t.Fatalf("budgeted parse: next %d of %d, partial %v, err %v", next, st.Size(), partial, err)
	}
	a = a.clone()
	if _, partial, err = parseRange(f, next, st.Size(), &a, discover.Budget{}, nil); err != nil || partial {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*whole, a, cmp.AllowUnexported(aggregate{})); diff != "" {
		t.Errorf("(-whole +resumed):\n%s", diff)
	}
}

// TestDeletedTranscript: a transcript Claude's cleanup removed disappears from
// the listing and from the index.
func TestDeletedTranscript(t *testing.T) {
	home := copyHome(t)
	env := newEnv(t, home, nil)
	a := testAdapter()
	discovertest.DiscoverAll(t, a, env.Env)
	if err := os.Remove(filepath.Join(home, ".claude/projects/-home-dev-webapp", idWebapp+".jsonl")); err != nil {
		t.Fatal(err)
	}
	got := discovertest.DiscoverAll(t, a, env.Env)
	if _, ok := got[idWebapp]; ok || len(got) != len(fixtureFacts)-1 {
		t.Errorf("%d sessions, deleted one listed: %v", len(got), ok)
	}
	if n := loadIndex(env.CacheDir()).Len(); n != len(fixtureFacts)-1 {
		t.Errorf("index holds %d entries, want %d", n, len(fixtureFacts)-1)
	}
}

// TestQuickSummaryLongHead: the prompt sits behind a line longer than the first
// 32 KiB read.
func TestQuickSummaryLongHead(t *testing.T) {
	const sid, cwd = idA, "/w"
	big := strings.Repeat("x", 100<<10)
	p := writeTranscript(t, t.TempDir(), "-w", sid,
		`{"type":"attachment","attachment":{"type":"skill_listing","content":"`+big+`"},"timestamp":"2026-11-20T21:00:00.000Z"}`,
		userPrompt(sid, cwd, "2026-11-20T21:00:01.000Z", "behind the big line"),
		assistantLine(sid, cwd, "2026-11-20T21:00:02.000Z", "m1", "r1", "claude-opus-4-8", textBlock("ok"), "end_turn", usageJSON(1, 1, 0, 0)),
	)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	must(t, err)
	a := quickSummary(f, st.Size(), nil)
	if a.Prompt != "behind the big line" || a.Cwd != cwd || a.Model != "claude-opus-4-8" || a.Last.Kind != tailEnd {
		t.Errorf("prompt %q cwd %q model %q tail %d", a.Prompt, a.Cwd, a.Model, a.Last.Kind)
	}
}
