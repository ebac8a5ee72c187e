package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

func cachedEnv(home, state string) *discover.Env {
	env := testEnv(home, nil, nil)
	env.StateDir = state
	return env
}

// The parse index is a cache: cold, warm, after appends and after a replaced
// file, the output equals a run without it.
func TestIndexDoesNotChangeOutput(t *testing.T) {
	home := fixtureHome(t)
	state := t.TempDir()
	a := testAdapter(nil)
	noCache := func() map[string]discover.Session {
		env := cachedEnv(home, state)
		env.NoCache = true
		return discovertest.DiscoverAll(t, a, env)
	}
	check := func(stage string) {
		t.Helper()
		want := noCache()
		got := discovertest.DiscoverAll(t, a, cachedEnv(home, state))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: cached output differs (-nocache +cached):\n%s", stage, diff)
		}
	}
	check("cold")
	if _, err := os.Stat(filepath.Join(state, "cache", Name+".index")); err != nil {
		t.Fatalf("no index written: %v", err)
	}
	check("warm")

	// A new turn appended to a thread (and the DB does not know it yet).
	discovertest.AppendFile(t, rolloutPath(t, home, id5425),
		`{"timestamp":"2026-11-20T22:00:00.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t9"}}`+"\n"+
			`{"timestamp":"2026-11-20T22:00:01.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":9,"total_tokens":109}}}}`+"\n")
	check("appended")
	if s := discovertest.DiscoverAll(t, a, cachedEnv(home, state))[id5425]; s.Tokens.Input != 60 || s.Extra["last_turn"] != "open" {
		t.Errorf("appended turn not seen: %+v %v", s.Tokens, s.Extra["last_turn"])
	}

	// A rollout replaced by another file (new inode), e.g. restored from backup.
	p := rolloutPath(t, home, idAA41)
	b, err := os.ReadFile(p)
	must(t, err)
	must(t, os.Remove(p))
	must(t, os.WriteFile(p, b[:strings.LastIndex(string(b[:len(b)-1]), "\n")+1], 0o644))
	check("replaced")

	// The DB row goes away: the head (not cached so far for DB threads) is read.
	must(t, os.Remove(filepath.Join(codexDir(home), "state_5.sqlite")))
	check("no db")
}

// A listing that does not show usage slots indexes rollouts without them
// (summary.NoSlots); a command that shows them counts them then, and the
// output is as without the index, whichever ran first.
func TestIndexSlotsCountedWhenAsked(t *testing.T) {
	home := fixtureHome(t)
	state := t.TempDir()
	a := testAdapter(nil)
	run := func(slots, noCache bool) map[string]discover.Session {
		env := cachedEnv(home, state)
		env.Slots, env.NoCache = slots, noCache
		return discovertest.DiscoverAll(t, a, env)
	}
	for _, slots := range []bool{false, true, false, true} {
		got, want := run(slots, false), run(slots, true)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("slots=%v: cached output differs (-nocache +cached):\n%s", slots, diff)
		}
		counted := 0
		for _, s := range got {
			if len(s.Slots) > 0 {
				counted++
			}
		}
		if slots != (counted > 0) {
			t.Errorf("slots=%v: %d sessions have slots", slots, counted)
		}
	}
}

// A warm run trusts the stamp (device, inode, size, mtime) and does not read the
// rollout: same-size garbage with the old mtime still lists from the index.
func TestIndexAvoidsReads(t *testing.T) {
	home := fixtureHome(t)
	state := t.TempDir()
	a := testAdapter(nil)
	want := discovertest.DiscoverAll(t, a, cachedEnv(home, state))[id1023]
	p := rolloutPath(t, home, id1023)
	fi, err := os.Stat(p)
	must(t, err)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt([]byte(strings.Repeat("#", int(fi.Size()))), 0)
	must(t, err)
	must(t, f.Close())
	must(t, os.Chtimes(p, time.Now(), fi.ModTime()))
	got := discovertest.DiscoverAll(t, a, cachedEnv(home, state))[id1023]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warm run re-read the rollout (-want +got):\n%s", diff)
	}
}

// must fails the test on a setup error: a step that silently did nothing
// would make a cache test pass for the wrong reason.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
