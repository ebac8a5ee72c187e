package codex

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/google/go-cmp/cmp"
)

// testdata/reverted/.codex is what codex-cli 0.169.0's app-server wrote for one
// thread (TestCodexThreadAcrossFiles, e2e): turns "First", "Second", "Third";
// thread/revert before "Third"; "Fourth"; thread/revert before "Second";
// "Fifth". Three rollouts (docs/agents/codex.md §1.1):
//
//	rollout-2026-12-02T03-39-09-<thread>.jsonl                  turns 1–3
//	rollout-2026-12-02T03-39-10-<thread>_01a234d5-b3b5-….jsonl  history_base: the first up to turn 2, then turn 4
//	rollout-2026-12-02T03-39-10-<thread>_01a234d5-b427-….jsonl  history_base: the first up to turn 1, then turn 5
//
// threads.rollout_path names the third; threads.tokens_used is 110, the
// total_tokens of the third's last token_count (input 90, of it 4 cached,
// output 20), which carries on from the retained turn 1.
const (
	idReverted     = "01a234d5-b1e7-7860-a8e2-6a1f4b30bc7a"
	revertedNewest = "rollout-2026-12-02T03-39-10-01a234d5-b1e7-7860-a8e2-6a1f4b30bc7a_01a234d5-b427-7aa3-898f-4043aa87ad77.jsonl"
)

func revertedHome(t *testing.T, withDBs bool) string {
	t.Helper()
	home := t.TempDir()
	discovertest.CopyTree(t, "testdata/reverted", home)
	if !withDBs {
		for _, db := range []string{"state_5.sqlite", "thread_history_1.sqlite"} {
			if err := os.Remove(filepath.Join(codexDir(home), db)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A clean exit leaves the lock folder without the thread's lock.
	if err := os.MkdirAll(filepath.Join(codexDir(home), "thread-writer-locks"), 0o755); err != nil {
		t.Fatal(err)
	}
	return home
}

// One thread over three rollouts is one session: its id, Codex's own
// cumulative total from the newest rollout (never a sum over the files), the
// first prompt and start from the first rollout, the newest's last turn.
func TestThreadAcrossRollouts(t *testing.T) {
	for _, withDBs := range []bool{true, false} {
		name := "rollouts only"
		if withDBs {
			name = "with state and history DBs"
		}
		t.Run(name, func(t *testing.T) {
			home := revertedHome(t, withDBs)
			env := testEnv(home, nil, nil)
			got := discovertest.DiscoverAll(t, testAdapter(nil), env)
			var ids []string
			for id := range got {
				ids = append(ids, id)
			}
			if len(got) != 1 {
				t.Fatalf("listed %d sessions %v; want the one thread %s", len(got), ids, idReverted)
			}
			s, ok := got[idReverted]
			if !ok {
				t.Fatalf("listed %v; want %s", ids, idReverted)
			}
			if diff := cmp.Diff(&discover.Tokens{Input: 86, CacheRead: 4, Output: 20}, s.Tokens); diff != "" {
				t.Errorf("tokens (-want +got):\n%s", diff)
			}
			if s.Extra["tokens_total"] != int64(110) {
				t.Errorf("tokens_total %v, want 110 (threads.tokens_used)", s.Extra["tokens_total"])
			}
			if s.Prompt != "First: list the ledgers" {
				t.Errorf("prompt %q, want the thread's first", s.Prompt)
			}
			if want := ts("2026-12-02T03:39:09.675Z"); s.StartedAt == nil || !s.StartedAt.Equal(want) {
				t.Errorf("started %v, want %v (the first rollout's session_meta)", s.StartedAt, want)
			}
			if filepath.Base(s.Path) != revertedNewest {
				t.Errorf("path %s, want the newest rollout %s", filepath.Base(s.Path), revertedNewest)
			}
			if s.Status != discover.StatusStopped || s.Extra["last_turn"] != "completed" {
				t.Errorf("status %s, last turn %v; want stopped after a completed turn", s.Status, s.Extra["last_turn"])
			}
			if s.Extra["rollout_files"] != 3 {
				t.Errorf("rollout_files %v, want 3", s.Extra["rollout_files"])
			}

			// A lookup by id or by prefix says the same.
			for _, q := range []discover.Query{{IDs: []string{idReverted}}, {Prefix: idReverted[:13]}} {
				found, err := testAdapter(nil).Find(context.Background(), env, q)
				if err != nil {
					t.Fatal(err)
				}
				if len(found) != 1 {
					t.Fatalf("Find(%+v): %d sessions, want 1", q, len(found))
				}
				if diff := cmp.Diff(s, found[0]); diff != "" {
					t.Errorf("Find(%+v) differs from Discover (-discover +find):\n%s", q, diff)
				}
			}
		})
	}
}

// Peek reads the thread as Codex holds it: the first rollout up to the newest's
// history_base (turn 1), then the newest (turn 5). The reverted turns are not
// part of it.
func TestPeekAcrossRollouts(t *testing.T) {
	home := revertedHome(t, false)
	env := testEnv(home, nil, nil)
	s := discovertest.DiscoverAll(t, testAdapter(nil), env)[idReverted]
	for _, sess := range []discover.Session{s, {ID: idReverted}} {
		msgs, err := testAdapter(nil).Peek(context.Background(), env, sess, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"First: list the ledgers", "Fifth: after the second revert"}, texts(msgs, "user")); diff != "" {
			t.Errorf("peek prompts (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"FAKE-REPLY to: First: list the ledgers", "FAKE-REPLY to: Fifth: after the second revert"}, texts(msgs, "assistant")); diff != "" {
			t.Errorf("peek replies (-want +got):\n%s", diff)
		}
		// A window larger than the newest rollout alone reaches into the first.
		some, err := testAdapter(nil).Peek(context.Background(), env, sess, 5)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(msgs[len(msgs)-5:], some); len(msgs) < 6 || diff != "" {
			t.Errorf("peek -n 5 is not the last 5 of %d items (-want +got):\n%s", len(msgs), diff)
		}
	}
}

// The names alone: a later rollout's name carries the thread id first.
func TestRolloutNameIDs(t *testing.T) {
	for _, c := range []struct{ stem, thread, rollout string }{
		{"rollout-2026-12-02T03-39-09-01a234d5-b1e7-7860-a8e2-6a1f4b30bc7a", idReverted, idReverted},
		{"rollout-2026-12-02T03-39-10-01a234d5-b1e7-7860-a8e2-6a1f4b30bc7a_01a234d5-b427-7aa3-898f-4043aa87ad77", idReverted, "01a234d5-b427-7aa3-898f-4043aa87ad77"},
		{"rollout-2026-12-02T03-39-10-01A234D5-B1E7-7860-A8E2-6A1F4B30BC7A_01a234d5-b427-7aa3-898f-4043aa87ad77", idReverted, "01a234d5-b427-7aa3-898f-4043aa87ad77"},
		{"rollout-2026-12-02T03-39-10-notauuid_01a234d5-b427-7aa3-898f-4043aa87ad77", "01a234d5-b427-7aa3-898f-4043aa87ad77", "01a234d5-b427-7aa3-898f-4043aa87ad77"},
		{"rollout-x", "", ""},
	} {
		if got := idFromStem(c.stem); got != c.thread {
			t.Errorf("idFromStem(%s) = %q, want %q", c.stem, got, c.thread)
		}
		if got := rolloutIDFromStem(c.stem); got != c.rollout {
			t.Errorf("rolloutIDFromStem(%s) = %q, want %q", c.stem, got, c.rollout)
		}
		if got := string(rolloutKey([]byte(c.stem + ".jsonl"))); got != c.thread {
			t.Errorf("rolloutKey(%s) = %q, want %q", c.stem, got, c.thread)
		}
	}
}

// `codex migrate-rollouts --apply` (0.169.0) rewrites a legacy rollout in place
// in the paginated format (ordinals, item_completed instead of user_message and
// agent_message, history_mode "paginated"): testdata/migrated holds what it made
// of two of testdata/legacy's rollouts. The thread reads the same before and
// after: id, tokens, prompt, start, cwd, status, and the peek's prompts and
// replies. One exception is Codex's: the mixed rollout (a legacy turn, then a
// paginated one) loses its token_count records in the migration, and Codex's
// own state DB then says tokens_used 0; agentctl shows no tokens, as Codex does.
func TestMigratedRolloutReadsTheSame(t *testing.T) {
	before := legacyHome(t)
	after := t.TempDir()
	discovertest.CopyTree(t, "testdata/migrated", filepath.Join(after, ".codex", "sessions", "2025", "09", "01"))
	b := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(before, nil, nil))
	a := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(after, nil, nil))
	for _, id := range []string{"0199a000-0000-7000-8000-000000000001", "0199a001-0000-7000-8000-000000000002"} {
		sb, sa := b[id], a[id]
		if sa.ID != id || sb.ID != id {
			t.Fatalf("%s: listed before %v, after %v", id, sb.ID != "", sa.ID != "")
		}
		type view struct {
			Tokens      *discover.Tokens
			Prompt, Cwd string
			Status      string
			Started     string
			Total       any
		}
		of := func(s discover.Session) view {
			return view{s.Tokens, s.Prompt, s.Cwd, string(s.Status), s.StartedAt.String(), s.Extra["tokens_total"]}
		}
		if of(sb).Tokens == nil {
			t.Fatalf("%s: no tokens before the migration", id)
		}
		want := of(sb)
		if id == "0199a001-0000-7000-8000-000000000002" {
			want.Tokens, want.Total = nil, nil
		}
		if diff := cmp.Diff(want, of(sa)); diff != "" {
			t.Errorf("%s: the migrated rollout reads differently (-legacy +migrated):\n%s", id, diff)
		}
		pb, pa := peekAll(t, before, id, 0), peekAll(t, after, id, 0)
		for _, kind := range []string{"user", "assistant"} {
			if len(texts(pb, kind)) == 0 {
				t.Errorf("%s: no %s items before the migration", id, kind)
			}
			if diff := cmp.Diff(texts(pb, kind), texts(pa, kind)); diff != "" {
				t.Errorf("%s: peek %s items differ (-legacy +migrated):\n%s", id, kind, diff)
			}
		}
	}
}

// testdata/fork/.codex: the thread of testdata/reverted recorded again (its three
// rollouts), then forked through the app-server (`thread/fork`) and given one
// turn in the fork ("Sixth: in the fork"). The fork's rollout is named by its
// own id; its session_meta has forked_from_id and a history_base naming the
// parent's newest rollout at its end. Its token totals start from the parent's
// (110: input 90 of which 4 cached, output 20) and end at 171 (input 138 of
// which 6 cached, output 33); Codex's state DB says tokens_used 171.
func TestForkSaysWhatItInherited(t *testing.T) {
	const parent, fork = "01a234e2-1142-7ae2-8e09-be0c3b231d8a", "01a234e2-1c9d-7150-acc8-aed979c1698c"
	for _, withDB := range []bool{true, false} {
		home := t.TempDir()
		discovertest.CopyTree(t, "testdata/fork", home)
		if !withDB {
			if err := os.Remove(filepath.Join(codexDir(home), "state_5.sqlite")); err != nil {
				t.Fatal(err)
			}
		}
		env := testEnv(home, nil, nil)
		got := discovertest.DiscoverAll(t, testAdapter(nil), env)
		if len(got) != 2 {
			t.Fatalf("db %v: listed %d sessions, want the parent and the fork", withDB, len(got))
		}
		f, p := got[fork], got[parent]
		if diff := cmp.Diff(&discover.Tokens{Input: 132, CacheRead: 6, Output: 33}, f.Tokens); diff != "" {
			t.Errorf("db %v: fork tokens (-want +got):\n%s", withDB, diff)
		}
		if diff := cmp.Diff(discover.Tokens{Input: 86, CacheRead: 4, Output: 20}, f.Extra["tokens_inherited"]); diff != "" {
			t.Errorf("db %v: fork tokens_inherited (-want +got):\n%s", withDB, diff)
		}
		if f.Extra["forked_from"] != parent {
			t.Errorf("db %v: forked_from %v, want %s", withDB, f.Extra["forked_from"], parent)
		}
		if f.Prompt != "Sixth: in the fork" {
			t.Errorf("db %v: fork prompt %q", withDB, f.Prompt)
		}
		if _, ok := p.Extra["tokens_inherited"]; ok || p.Extra["rollout_files"] != 3 {
			t.Errorf("db %v: parent extra %v; want 3 rollouts and nothing inherited", withDB, p.Extra)
		}
		// Counted once over both: the parent's 110 and the fork's own 61.
		var own discover.Tokens
		for _, s := range []discover.Session{p, f} {
			o, _ := s.Own()
			own.Input, own.CacheRead, own.Output = own.Input+o.Input, own.CacheRead+o.CacheRead, own.Output+o.Output
		}
		if diff := cmp.Diff(discover.Tokens{Input: 132, CacheRead: 6, Output: 33}, own); diff != "" {
			t.Errorf("db %v: own tokens of parent and fork together (-want +got):\n%s", withDB, diff)
		}
		found, err := testAdapter(nil).Find(context.Background(), env, discover.Query{IDs: []string{fork}})
		if err != nil || len(found) != 1 {
			t.Fatalf("Find(fork): %v, %d sessions", err, len(found))
		}
		if diff := cmp.Diff(f, found[0]); diff != "" {
			t.Errorf("db %v: Find(fork) differs from Discover (-discover +find):\n%s", withDB, diff)
		}
	}
}
