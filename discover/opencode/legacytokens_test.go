package opencode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// TestLegacyTokensIncremental: legacy message files go through the parse index:
// a second listing takes unchanged files from it (a file edited in place to
// other numbers, same size and mtime, is not re-read) and re-reads a changed one.
func TestLegacyTokensIncremental(t *testing.T) {
	home := t.TempDir()
	storage := filepath.Join(home, ".local", "share", "opencode", "storage")
	copyTree(t, testdata(t, "legacy/storage"), storage)
	env := newEnv(home, nil, noProcs())
	env.StateDir = filepath.Join(t.TempDir(), "state")
	tokens := func() *discover.Tokens {
		t.Helper()
		got, _ := list(t, env)
		return got[legacyOnly].Tokens
	}
	if diff := cmp.Diff(&discover.Tokens{Input: 2500, Output: 300, CacheRead: 300}, tokens()); diff != "" {
		t.Fatalf("cold (-want +got):\n%s", diff)
	}
	ix := index.Load[*msgUsage](env.CacheDir(), Name+"-legacy", legacyIndexVersion)
	if n := ix.Len(); n < 5 {
		t.Fatalf("index holds %d message files, want every one of the session's", n)
	}

	dir := filepath.Join(storage, "message", legacyOnly)
	edit := func(name, from, to string, keepStamp bool) {
		t.Helper()
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		nb := strings.Replace(string(b), from, to, 1)
		if nb == string(b) {
			t.Fatalf("%s has no %q", name, from)
		}
		if err := os.WriteFile(p, []byte(nb), 0o644); err != nil {
			t.Fatal(err)
		}
		if keepStamp {
			os.Chtimes(p, st.ModTime(), st.ModTime())
		}
	}
	// Same size and mtime: the index answers, the old figure stays.
	edit("msg_0e9a1b2d1001DDDDDDDDDDDDDD.json", `"input": 1500`, `"input": 1600`, true)
	if got := tokens(); got == nil || got.Input != 2500 {
		t.Errorf("unchanged stamp re-read: input %v, want the indexed 2500", got)
	}
	// A real change (size differs): re-read.
	edit("msg_0e9a1b2d1001DDDDDDDDDDDDDD.json", `"input": 1600`, `"input": 15000`, false)
	if got := tokens(); got == nil || got.Input != 16000 {
		t.Errorf("after a change: input %v, want 1000 + 15000", got)
	}
}

// TestMsgUsageCodec: every field survives the parse index's binary encoding.
func TestMsgUsageCodec(t *testing.T) {
	for _, u := range []msgUsage{
		{Tokens: tokenClasses{1, 2, 3, 4, 5}, Cost: 0.125, HasTokens: true, HasCost: true, At: 1764028800123},
		{Bad: true},
		{},
		{Tokens: tokenClasses{-1, 1 << 62, 0, 7, 0}, HasTokens: true},
	} {
		b, err := u.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got msgUsage
		if err := got.UnmarshalBinary(b); err != nil || got != u {
			t.Errorf("%+v decoded as %+v (%v)", u, got, err)
		}
		if err := got.UnmarshalBinary(b[:len(b)-1]); err == nil {
			t.Errorf("%+v: a truncated payload decoded", u)
		}
	}
}
