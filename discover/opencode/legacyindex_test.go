package opencode

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/e2e/synth"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/meta"
)

// backdate sets the modification time of everything under root an hour back:
// a tree written long before the listing, whose stamps are not racy.
func backdate(t testing.TB, root string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p) // after their entries
			return nil
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i], old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// legacyHome is a synthetic legacy tree of n sessions, backdated.
func legacyHome(t testing.TB, n int) (home, storage string) {
	t.Helper()
	home = t.TempDir()
	storage = filepath.Join(home, ".local", "share", "opencode", "storage")
	if err := synth.WriteOpenCodeLegacy(storage, n, 3); err != nil {
		t.Fatal(err)
	}
	backdate(t, storage)
	return home, storage
}

// opened runs fn and returns the files it opened under storage, relative.
func openedUnder(storage string, fn func()) []string {
	var mu sync.Mutex
	var got []string
	restore := agentfs.SetHook(func(p string) {
		if rel, err := filepath.Rel(storage, p); err == nil && !strings.HasPrefix(rel, "..") {
			mu.Lock()
			got = append(got, rel)
			mu.Unlock()
		}
	})
	defer restore()
	fn()
	return got
}

// discoverAll lists with env, sorted by id, failing the test on an error.
func discoverAll(t testing.TB, env *discover.Env) []discover.Session {
	t.Helper()
	ss, err := testAdapter().Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	return discovertest.ByID(ss)
}

// TestLegacyIndex: a warm listing of the legacy tree reads no session, message
// or part file, and stays what a listing without the index shows when a
// session grows, a message streaming its turn is rewritten in place (its
// directory's stamp unchanged), a message file is deleted, and a session file
// is rewritten; deleting the cache changes nothing either. After each change
// only the changed session's files are read.
func TestLegacyIndex(t *testing.T) {
	home, storage := legacyHome(t, 30)
	env := newEnv(home, nil, noProcs())
	env.StateDir = filepath.Join(t.TempDir(), "state")
	bare := newEnv(home, nil, noProcs()) // no state dir: no index
	check := func(step string) []discover.Session {
		t.Helper()
		got := discoverAll(t, env)
		if diff := cmp.Diff(discoverAll(t, bare), got); diff != "" {
			t.Fatalf("%s: indexed listing differs from a fresh one (-fresh +indexed):\n%s", step, diff)
		}
		return got
	}
	_ = check("cold")
	// Warm: only the project files (their worktrees) are read.
	var warm []discover.Session
	opened := openedUnder(storage, func() { warm = discoverAll(t, env) })
	for _, p := range opened {
		if !strings.HasPrefix(p, "project"+string(filepath.Separator)) {
			t.Errorf("warm listing opened %s", p)
		}
	}
	if len(warm) != 30 {
		t.Fatalf("warm listing has %d sessions, want 30", len(warm))
	}

	// The session with the most messages, and its message files.
	var ses string
	var names []string
	for _, s := range warm {
		if n := jsonNames(filepath.Join(storage, "message", s.ID)); len(n) > len(names) && s.Tokens != nil {
			ses, names = s.ID, n
		}
	}
	if len(names) < 3 {
		t.Fatalf("no session with 3 messages and tokens")
	}
	mdir := filepath.Join(storage, "message", ses)
	onlyChanged := func(step string) {
		t.Helper()
		opened := openedUnder(storage, func() { discoverAll(t, env) })
		for _, p := range opened {
			if !strings.HasPrefix(p, "project"+string(filepath.Separator)) && !strings.Contains(p, ses) &&
				!strings.HasPrefix(p, "part"+string(filepath.Separator)) {
				t.Errorf("%s: the listing after the change opened %s, not the changed session's", step, p)
			}
		}
	}
	tokensOf := func() *discover.Tokens {
		for _, s := range discoverAll(t, env) {
			if s.ID == ses {
				return s.Tokens
			}
		}
		t.Fatalf("%s not listed", ses)
		return nil
	}
	before := tokensOf()
	dirTime := func() time.Time {
		st, err := os.Stat(mdir)
		if err != nil {
			t.Fatal(err)
		}
		return st.ModTime()
	}

	// The session grows: a new assistant message, still streaming (no
	// time.completed), then the listing indexes it.
	streaming := "msg_ffffffffffffZZZZZZZZZZZZZZ.json"
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(mdir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(streaming, `{"id":"msg_ffffffffffffZZZZZZZZZZZZZZ","sessionID":"`+ses+`","role":"assistant","time":{"created":1795211000000},"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0}`)
	backdate(t, mdir)
	check("grown")
	onlyChanged("grown")

	// The streaming message is rewritten in place with its final usage; the
	// directory's stamp stays as it was (OpenCode writes in place).
	old := dirTime()
	write(streaming, `{"id":"msg_ffffffffffffZZZZZZZZZZZZZZ","sessionID":"`+ses+`","role":"assistant","time":{"created":1795211000000,"completed":1795211005000},"finish":"stop","tokens":{"input":7000,"output":11,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0}`)
	if err := os.Chtimes(mdir, old, old); err != nil {
		t.Fatal(err)
	}
	check("rewritten in place")
	if got := tokensOf(); got == nil || got.Input != before.Input+7000 {
		t.Fatalf("after the in-place rewrite: tokens %+v, want input %d", got, before.Input+7000)
	}

	// A message file deleted.
	if err := os.Remove(filepath.Join(mdir, streaming)); err != nil {
		t.Fatal(err)
	}
	check("deleted")
	onlyChanged("deleted")
	if got := tokensOf(); !cmp.Equal(got, before) {
		t.Fatalf("after the deletion: tokens %+v, want %+v", got, before)
	}

	// The session file rewritten (a new title).
	var sf string
	for _, s := range warm {
		if s.ID == ses {
			sf = s.Path
		}
	}
	b, err := os.ReadFile(sf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sf, []byte(strings.Replace(string(b), `"title":"`, `"title":"Renamed `, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range check("session file rewritten") {
		if s.ID == ses && !strings.HasPrefix(s.Title, "Renamed ") {
			t.Fatalf("title %q after the rewrite", s.Title)
		}
	}

	// Deleting the cache changes no output.
	withCache := discoverAll(t, env)
	if err := os.RemoveAll(env.CacheDir()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(withCache, discoverAll(t, env)); diff != "" {
		t.Fatalf("deleting the cache changed the listing:\n%s", diff)
	}
}

func stampFor(n uint64) index.Stamp {
	return index.Stamp{Dev: n, Ino: n + 1, Size: int64(n) + 2, MtimeNs: int64(n) + 3}
}

// TestLegacyIndexRacy: an entry built from a stamp as recent as the file
// system's clock tick is rebuilt by the next listing, so a change made in the
// same tick (leaving the stamp as it was) is still seen.
func TestLegacyIndexRacy(t *testing.T) {
	home, storage := legacyHome(t, 3)
	env := newEnv(home, nil, noProcs())
	env.StateDir = filepath.Join(t.TempDir(), "state")
	ss := discoverAll(t, env)
	s := ss[0]
	mdir := filepath.Join(storage, "message", s.ID)
	names := jsonNames(mdir)
	if len(names) == 0 {
		t.Fatal("no messages")
	}
	// The last message written just now, and a listing indexes it (afresh).
	p := filepath.Join(mdir, names[len(names)-1])
	st, _ := os.Stat(p)
	now := time.Now()
	os.Chtimes(p, now, now)
	os.RemoveAll(env.CacheDir())
	discoverAll(t, env)
	// A change in the same tick: same size, same mtime.
	b, _ := os.ReadFile(p)
	nb := strings.Replace(string(b), `"role":"assistant"`, `"role":"assistanX"`, 1)
	nb = strings.Replace(nb, `"role":"user"`, `"role":"usex"`, 1)
	if nb == string(b) || len(nb) != int(st.Size()) {
		t.Fatalf("cannot edit %s in place", p)
	}
	os.WriteFile(p, []byte(nb), 0o644)
	os.Chtimes(p, now, now)
	if diff := cmp.Diff(discoverAll(t, newEnv(home, nil, noProcs())), discoverAll(t, env)); diff != "" {
		t.Fatalf("a same-tick change was missed (-fresh +indexed):\n%s", diff)
	}
}

// TestLegacyEntryCodec: every field of an entry survives the parse index's
// binary encoding, and a truncated one does not decode.
func TestLegacyEntryCodec(t *testing.T) {
	cost, prompt := 0.125, "fix it"
	for _, l := range []legacyEntry{
		{},
		{Rec: record{ID: "ses_1", Dir: "/d", Title: "t", Version: "1.1", ParentID: "ses_0", ProjectID: "p", Slug: "s",
			Model: modelRef{"prov", "m", "v"}, Cost: &cost, Tokens: &tokenClasses{1, 2, 3, 4, 5},
			Slots:   discover.Slots{{At: 900, Tokens: discover.Tokens{Input: 1}}, {At: 9000, Tokens: discover.Tokens{Output: 2}}},
			Created: 1, Updated: 2, Archived: 3, Prompt: &prompt, LastUserAt: 4, BadUsage: 2,
			Last: lastMessage{ID: "msg", Role: "assistant", Created: 5, Completed: 6, Finish: "stop", ErrName: "E", ErrMsg: "m", Provider: "p", ModelID: "m"}},
			Msgs:  stampFor(1),
			Watch: []watched{{Rel: "message/x/y.json", Stamp: stampFor(2)}, {Rel: "part/z"}}},
	} {
		b, err := l.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got legacyEntry
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(l, got, cmp.AllowUnexported(legacyEntry{}, record{}, lastMessage{}, modelRef{}, tokenClasses{}, watched{})); diff != "" {
			t.Errorf("decoded differs:\n%s", diff)
		}
		if err := got.UnmarshalBinary(b[:len(b)-1]); err == nil {
			t.Errorf("a truncated payload decoded")
		}
	}
}

// TestLegacyOutOfTime: a cold listing short of time summarises the sessions it
// cannot read whole, every field but the token totals as a full read shows
// it, names them in a warning and indexes none of them; past the give-up point
// it leaves the rest out, saying so. The next listing with time reads them all.
func TestLegacyOutOfTime(t *testing.T) {
	home, storage := legacyHome(t, 12)
	// A folder named like a session file is none: never counted among the
	// sessions left out.
	projects, _ := filepath.Glob(filepath.Join(storage, "session", "*"))
	if len(projects) == 0 {
		t.Fatal("no project folder")
	}
	if err := os.Mkdir(filepath.Join(projects[0], "ses_ffffffffffffFolderNotASess.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	full := discoverAll(t, newEnv(home, nil, noProcs()))
	defer func(f func(context.Context) discover.Budget) { budgetOf = f }(budgetOf)
	past := time.Now().Add(-time.Second)

	env := newEnv(home, nil, noProcs())
	env.StateDir = filepath.Join(t.TempDir(), "state")
	var warns []string
	wenv := env.WithWarn(func(s string) { warns = append(warns, s) })
	budgetOf = func(context.Context) discover.Budget { return discover.Budget{StopAt: past} }
	got := discoverAll(t, wenv)
	var want []discover.Session
	tokens := 0
	for _, s := range full {
		if s.Tokens != nil {
			tokens++
		}
		s.Tokens, s.CostUSD, s.CostSource, s.Slots = nil, nil, "", nil
		if s.Extra != nil {
			extra := map[string]any{}
			for k, v := range s.Extra {
				if k != "tokens_reasoning" {
					extra[k] = v
				}
			}
			s.Extra = extra
		}
		want = append(want, s)
	}
	if tokens == 0 {
		t.Fatal("no session of the home has tokens: the test proves nothing")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summarised listing (-full without tokens +summarised):\n%s", diff)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "12 OpenCode sessions") || !strings.Contains(warns[0], full[0].ID) {
		t.Errorf("warnings %q, want one naming the 12 summarised sessions", warns)
	}

	warns = nil
	budgetOf = func(context.Context) discover.Budget { return discover.Budget{StopAt: past, GiveUpAt: past} }
	if got := discoverAll(t, wenv); len(got) != 0 {
		t.Errorf("given up: %d sessions listed, want none read", len(got))
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "12 OpenCode sessions") || !strings.Contains(warns[0], "missing") {
		t.Errorf("warnings %q, want one saying 12 sessions are missing", warns)
	}

	budgetOf = discover.BudgetOf
	if diff := cmp.Diff(full, discoverAll(t, env)); diff != "" {
		t.Errorf("with time again (-full +listed):\n%s", diff)
	}
}

// TestLegacyNamesNotIDs: a session file whose name is not "ses_" and 26
// characters is no session OpenCode wrote: neither the listing nor a lookup by
// a complete id (which stats that id's file instead of listing the names)
// shows it, so the two agree.
func TestLegacyNamesNotIDs(t *testing.T) {
	home, storage := legacyHome(t, 3)
	env := newEnv(home, nil, noProcs())
	all := discoverAll(t, env)
	src := all[0]
	long := src.ID + "Z"
	b, err := os.ReadFile(src.Path)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(filepath.Dir(src.Path), long+".json")
	if err := os.WriteFile(dst, []byte(strings.Replace(string(b), src.ID, long, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	discovertest.CopyTree(t, filepath.Join(storage, "message", src.ID), filepath.Join(storage, "message", long))
	if diff := cmp.Diff(all, discoverAll(t, env)); diff != "" {
		t.Errorf("a %d-character id was listed:\n%s", len(long), diff)
	}
	for _, q := range []discover.Query{{Prefix: src.ID}, {Prefix: long}, {IDs: []string{long}}, {Prefix: src.ID[:12]}} {
		got, err := testAdapter().Find(context.Background(), env, q)
		if err != nil {
			t.Fatal(err)
		}
		var want []discover.Session
		for _, s := range all {
			if q.Match(s.ID) {
				want = append(want, s)
			}
		}
		if diff := cmp.Diff(want, discovertest.ByID(got)); diff != "" {
			t.Errorf("Find(%+v) (-listing +Find):\n%s", q, diff)
		}
	}
}

// TestLegacyGiveUpKeepsLive: past the give-up point, a session a live process
// may serve (here the one an `opencode run -s` names) is read all the same and
// listed as a listing with time lists it but for its token totals; the others,
// old, are left out and counted in the warning.
func TestLegacyGiveUpKeepsLive(t *testing.T) {
	home, _ := legacyHome(t, 12)
	first := discoverAll(t, newEnv(home, nil, noProcs()))
	id := first[len(first)/2].ID
	procs := table(ocRun(500, "/", 1795212000000, "--session", id))
	full := discoverAll(t, newEnv(home, nil, procs))
	defer func(f func(context.Context) discover.Budget) { budgetOf = f }(budgetOf)
	past := time.Now().Add(-time.Second)
	budgetOf = func(context.Context) discover.Budget { return discover.Budget{StopAt: past, GiveUpAt: past} }
	var warns []string
	env := newEnv(home, nil, procs)
	env.StateDir = filepath.Join(t.TempDir(), "state")
	got := discoverAll(t, env.WithWarn(func(s string) { warns = append(warns, s) }))
	if len(got) != 1 || got[0].ID != id {
		t.Fatalf("given up: listed %d sessions, want only %s", len(got), id)
	}
	var want discover.Session
	for _, s := range full {
		if s.ID == id {
			want = s
		}
	}
	if want.PID != 500 {
		t.Fatalf("fixture: %s is not served by pid 500 (%s)", id, want.EvidenceDetail)
	}
	if diff := cmp.Diff(want, got[0], cmpopts.IgnoreFields(discover.Session{}, "Tokens", "CostUSD", "CostSource", "Slots", "Extra")); diff != "" {
		t.Errorf("live session (-with time +given up):\n%s", diff)
	}
	var left string
	for _, w := range warns {
		if strings.Contains(w, "missing") {
			left = w
		}
	}
	if !strings.Contains(left, "11 OpenCode sessions") || strings.Contains(left, id) {
		t.Errorf("warnings %q, want one saying the 11 others are missing", warns)
	}
}

// TestLegacyMustRead: which sessions the legacy listing reads when its budget
// has given up.
func TestLegacyMustRead(t *testing.T) {
	start := time.UnixMilli(1795212000000)
	launched := &discover.Env{Launches: []meta.Launch{{Adapter: Name, SessionID: "ses_launched"}}}
	for _, tt := range []struct {
		name  string
		env   *discover.Env
		procs []ocProc
		id    string
		mtime time.Time
		want  bool
		none  bool // legacyMustRead is nil: nothing can be alive
	}{
		{"nothing alive", &discover.Env{}, nil, "ses_a", start, false, true},
		{"launched by agentctl", launched, nil, "ses_launched", start.Add(-500 * time.Hour), true, false},
		{"another session than the launch's", launched, nil, "ses_a", start.Add(-500 * time.Hour), false, false},
		{"named by run -s", &discover.Env{}, []ocProc{{PID: 5, Session: "ses_a", Start: start, StartOK: true}}, "ses_a", start.Add(-500 * time.Hour), true, false},
		{"written since a process started", &discover.Env{}, []ocProc{{PID: 5, Start: start, StartOK: true}}, "ses_a", start.Add(time.Minute), true, false},
		{"written just before it started", &discover.Env{}, []ocProc{{PID: 5, Start: start, StartOK: true}}, "ses_a", start.Add(-30 * time.Second), true, false},
		{"written long before", &discover.Env{}, []ocProc{{PID: 5, Start: start, StartOK: true}}, "ses_a", start.Add(-2 * time.Hour), false, false},
		{"a process whose start is unknown may serve any", &discover.Env{}, []ocProc{{PID: 5}}, "ses_a", start.Add(-500 * time.Hour), true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := legacyMustRead(tt.env, tt.procs)
			if (m == nil) != tt.none {
				t.Fatalf("legacyMustRead nil: %v, want %v", m == nil, tt.none)
			}
			if m != nil && m(tt.id, tt.mtime) != tt.want {
				t.Errorf("mustRead = %v, want %v", !tt.want, tt.want)
			}
		})
	}
}
