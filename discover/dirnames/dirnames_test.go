package dirnames

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover/index"
)

func names(t *testing.T, c *Cache, dir string) []string {
	t.Helper()
	var out []string
	if err := c.Each(dir, func(b []byte, k index.EntryKind) {
		s := string(b)
		if k == index.KindDir {
			s += "/"
		}
		out = append(out, s)
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// old sets dir's mtime outside the racy window.
func old(t *testing.T, dir string) {
	t.Helper()
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, past, past); err != nil {
		t.Fatal(err)
	}
}

func TestKeptListingIsTheListing(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	for _, n := range []string{"a.jsonl", "b.jsonl"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o600)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	old(t, dir)
	want := []string{"a.jsonl", "b.jsonl", "sub/"}

	c := Open(cache, "x")
	if got := names(t, c, dir); !slices.Equal(got, want) {
		t.Fatalf("first listing %v, want %v", got, want)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	// The kept listing is used: a name hidden from the file system without
	// changing the directory's stamp cannot be seen by a listing, only by
	// the cache. Prove it is read by corrupting nothing but checking reads.
	c2 := Open(cache, "x")
	if got := names(t, c2, dir); !slices.Equal(got, want) {
		t.Fatalf("kept listing %v, want %v", got, want)
	}
	if e := c2.dirs[dir]; e == nil || c2.dirty {
		t.Fatalf("the kept listing was not used (entry %v, dirty %v)", e, c2.dirty)
	}

	// A new name changes the directory's mtime: listed again.
	os.WriteFile(filepath.Join(dir, "c.jsonl"), nil, 0o600)
	old(t, dir)
	c3 := Open(cache, "x")
	want = []string{"a.jsonl", "b.jsonl", "c.jsonl", "sub/"}
	if got := names(t, c3, dir); !slices.Equal(got, want) {
		t.Fatalf("after a new file %v, want %v", got, want)
	}
	// A removed one too.
	os.Remove(filepath.Join(dir, "a.jsonl"))
	old(t, dir)
	c4 := Open(cache, "x")
	want = []string{"b.jsonl", "c.jsonl", "sub/"}
	if got := names(t, c4, dir); !slices.Equal(got, want) {
		t.Fatalf("after a removal %v, want %v", got, want)
	}
}

func TestRecentDirectoryNotKept(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.jsonl"), nil, 0o600) // mtime now
	c := Open(cache, "x")
	names(t, c, dir)
	if c.dirty || c.dirs[dir] != nil {
		t.Fatal("a directory changed within the racy window was kept")
	}
}

func TestDamagedOrMissingCache(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.jsonl"), nil, 0o600)
	old(t, dir)
	c := Open(cache, "x")
	names(t, c, dir)
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(cache, "x.dirnames")
	b, _ := os.ReadFile(p)
	for cut := len(header); cut < len(b); cut++ {
		os.WriteFile(p, b[:cut], 0o600)
		if got := names(t, Open(cache, "x"), dir); !slices.Equal(got, []string{"a.jsonl"}) {
			t.Fatalf("cache cut at %d: %v", cut, got)
		}
	}
	if got := names(t, Open("", "x"), dir); !slices.Equal(got, []string{"a.jsonl"}) {
		t.Fatalf("no cache dir: %v", got)
	}
	if err := Open(cache, "x").Each(filepath.Join(dir, "missing"), func([]byte, index.EntryKind) {}); err == nil {
		t.Fatal("a missing directory listed without error")
	}
}
