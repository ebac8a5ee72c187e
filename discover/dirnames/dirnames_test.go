package dirnames

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

	c := Open(cache, "x", nil)
	if got := names(t, c, dir); !slices.Equal(got, want) {
		t.Fatalf("first listing %v, want %v", got, want)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	// The kept listing is used: a name hidden from the file system without
	// changing the directory's stamp cannot be seen by a listing, only by
	// the cache. Prove it is read by corrupting nothing but checking reads.
	c2 := Open(cache, "x", nil)
	if got := names(t, c2, dir); !slices.Equal(got, want) {
		t.Fatalf("kept listing %v, want %v", got, want)
	}
	if e := c2.dirs[dir]; e == nil || c2.dirty {
		t.Fatalf("the kept listing was not used (entry %v, dirty %v)", e, c2.dirty)
	}

	// A new name changes the directory's mtime: listed again.
	os.WriteFile(filepath.Join(dir, "c.jsonl"), nil, 0o600)
	old(t, dir)
	c3 := Open(cache, "x", nil)
	want = []string{"a.jsonl", "b.jsonl", "c.jsonl", "sub/"}
	if got := names(t, c3, dir); !slices.Equal(got, want) {
		t.Fatalf("after a new file %v, want %v", got, want)
	}
	// A removed one too.
	os.Remove(filepath.Join(dir, "a.jsonl"))
	old(t, dir)
	c4 := Open(cache, "x", nil)
	want = []string{"b.jsonl", "c.jsonl", "sub/"}
	if got := names(t, c4, dir); !slices.Equal(got, want) {
		t.Fatalf("after a removal %v, want %v", got, want)
	}
}

func TestRecentDirectoryNotKept(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.jsonl"), nil, 0o600) // mtime now
	c := Open(cache, "x", nil)
	names(t, c, dir)
	if c.dirty || c.dirs[dir] != nil {
		t.Fatal("a directory changed within the racy window was kept")
	}
}

func TestDamagedOrMissingCache(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.jsonl"), nil, 0o600)
	old(t, dir)
	c := Open(cache, "x", nil)
	names(t, c, dir)
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(cache, "x.dirnames")
	b, _ := os.ReadFile(p)
	for cut := len(header); cut < len(b); cut++ {
		os.WriteFile(p, b[:cut], 0o600)
		if got := names(t, Open(cache, "x", nil), dir); !slices.Equal(got, []string{"a.jsonl"}) {
			t.Fatalf("cache cut at %d: %v", cut, got)
		}
	}
	if got := names(t, Open("", "x", nil), dir); !slices.Equal(got, []string{"a.jsonl"}) {
		t.Fatalf("no cache dir: %v", got)
	}
	if err := Open(cache, "x", nil).Each(filepath.Join(dir, "missing"), func([]byte, index.EntryKind) {}); err == nil {
		t.Fatal("a missing directory listed without error")
	}
}

// testKey is a key function like the agents': the part of "<stamp>_<id>.jsonl"
// after the '_'; none for other names.
func testKey(name []byte) []byte {
	s := string(name)
	i := strings.IndexByte(s, '_')
	if i < 0 || !strings.HasSuffix(s, ".jsonl") {
		return nil
	}
	return name[i+1 : len(name)-len(".jsonl")]
}

// matching is the names (directories with a trailing /) EachMatch gives that
// keep accepts, sorted, how many it gave in all, and whether it says it left
// keyed names out.
func matching(t *testing.T, c *Cache, dir string, prefixes []string, keep func(string) bool) ([]string, int, bool) {
	t.Helper()
	var out []string
	n := 0
	more, err := c.EachMatch(dir, prefixes, func(b []byte, k index.EntryKind) {
		n++
		s := string(b)
		if k == index.KindDir {
			s += "/"
		}
		if keep(s) {
			out = append(out, s)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out, n, more
}

// A lookup from a kept listing in key order gives what a full listing gives
// (the same names pass the caller's test), reading few names.
func TestEachMatchIsTheListingFiltered(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	const hexd = "0123456789abcdef"
	var ids []string
	for i := 0; i < 500; i++ {
		b := make([]byte, 12)
		for j := range b {
			b[j] = hexd[rng.IntN(4)] // few digits: shared prefixes
		}
		id := string(b)
		ids = append(ids, id)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%04d_%s.jsonl", i, id)), nil, 0o600)
	}
	os.WriteFile(filepath.Join(dir, "renamed.jsonl"), nil, 0o600) // no key
	os.WriteFile(filepath.Join(dir, "index.sqlite"), nil, 0o600)
	os.Mkdir(filepath.Join(dir, "sub_0000.jsonl"), 0o700) // a directory is never keyed
	old(t, dir)

	c := Open(cache, "x", testKey)
	if _, n, _ := matching(t, c, dir, []string{"0"}, func(string) bool { return true }); n != 503 {
		t.Fatalf("a first lookup lists everything: gave %d names, want 503", n)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	for _, prefixes := range [][]string{{ids[0]}, {ids[7][:3]}, {ids[3][:1], ids[3][:2]}, {"0000", "3333"}, {ids[9][:5], ids[11]}, {"zz"}, {"0", "1", "2", "3"}} {
		keep := func(s string) bool {
			k := string(testKey([]byte(s)))
			if k == "" {
				return true
			}
			for _, p := range prefixes {
				if strings.HasPrefix(k, p) {
					return true
				}
			}
			return false
		}
		want, all, _ := matching(t, Open("", "x", testKey), dir, prefixes, func(string) bool { return true })
		want = slices.DeleteFunc(want, func(s string) bool { return !keep(s) })
		got, n, more := matching(t, Open(cache, "x", testKey), dir, prefixes, keep)
		if !slices.Equal(got, want) {
			t.Fatalf("prefixes %q: kept listing gave %v, the directory %v", prefixes, got, want)
		}
		if n != len(want) {
			t.Fatalf("prefixes %q: gave %d names to test, want only the %d that match", prefixes, n, len(want))
		}
		if wantMore := all > len(want); more != wantMore {
			t.Fatalf("prefixes %q: more = %v, want %v (%d of %d names match)", prefixes, more, wantMore, len(want), all)
		}
	}
}

// A damaged kept listing is listed again: the same names.
func TestEachMatchDamagedOrder(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	for _, n := range []string{"1_aaa.jsonl", "2_abb.jsonl", "3_bbb.jsonl"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o600)
	}
	old(t, dir)
	c := Open(cache, "x", testKey)
	matching(t, c, dir, []string{"a"}, func(string) bool { return true })
	if _, _, more := matching(t, c, dir, []string{"a"}, func(string) bool { return true }); more {
		t.Fatal("a listing that is not kept yet left names out")
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(cache, "x.dirnames")
	b, _ := os.ReadFile(p)
	keepA := func(s string) bool { return strings.HasPrefix(string(testKey([]byte(s))), "a") }
	want := []string{"1_aaa.jsonl", "2_abb.jsonl"}
	// Each byte of the kept listing (its directory, stamp, names, key order
	// and checksum) set to each of a few values: the kept listing is refused
	// and the directory listed, or it is still sound: the names given are the
	// directory's every time.
	for i := len(header); i < len(b); i++ {
		for _, v := range []byte{0, 1, 2, 5, 9, 0x7f, 0xff} {
			d := slices.Clone(b)
			d[i] = v
			os.WriteFile(p, d, 0o600)
			got, _, _ := matching(t, Open(cache, "x", testKey), dir, []string{"a"}, keepA)
			if !slices.Equal(got, want) {
				t.Fatalf("byte %d set to %#x: gave %v, want %v", i, v, got, want)
			}
		}
	}
}

// One Cache used by several goroutines, one of them saving (run with -race):
// every lookup still gives the directory's names.
func TestEachMatchWhileSaving(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	for i := 0; i < 50; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d_a%02d.jsonl", i, i)), nil, 0o600)
	}
	old(t, dir)
	c := Open(cache, "x", testKey)
	keep := func(s string) bool { return strings.HasPrefix(string(testKey([]byte(s))), "a1") }
	want, _, _ := matching(t, Open("", "x", testKey), dir, []string{"a1"}, keep)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 50; i++ {
			c.Save()
		}
	}()
	for i := 0; i < 50; i++ {
		if got, _, _ := matching(t, c, dir, []string{"a1"}, keep); !slices.Equal(got, want) {
			t.Fatalf("lookup %d: %v, want %v", i, got, want)
		}
	}
	<-done
}
