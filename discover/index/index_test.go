package index

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type payload struct {
	Lines int
	Names []string
}

func TestPlan(t *testing.T) {
	base := Stamp{Dev: 1, Ino: 2, Size: 100, MtimeNs: 5}
	e := Entry[payload]{Stamp: base, Offset: 90} // 10 bytes of an unfinished line
	tests := []struct {
		name string
		e    Entry[payload]
		now  Stamp
		want Action
	}{
		{"unchanged", e, base, Fresh},
		{"grew", e, Stamp{1, 2, 150, 6}, Append},
		{"touched, same size", e, Stamp{1, 2, 100, 6}, Append},
		{"shrank", e, Stamp{1, 2, 95, 6}, Rebuild},
		{"shrank below the parsed offset", e, Stamp{1, 2, 80, 6}, Rebuild},
		{"replaced (new inode)", e, Stamp{1, 3, 150, 6}, Rebuild},
		{"other device", e, Stamp{9, 2, 100, 5}, Rebuild},
		{"unfinished on purpose", Entry[payload]{Stamp: base, Offset: 40, Partial: true}, base, Append},
	}
	for _, tt := range tests {
		if got := tt.e.Plan(tt.now); got != tt.want {
			t.Errorf("%s: Plan = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ix := Load[payload](dir, "demo", 1)
	if _, ok := ix.Get("/a"); ok {
		t.Fatal("empty index has an entry")
	}
	want := Entry[payload]{Stamp: Stamp{1, 2, 3, 4}, Offset: 3, Check: 99, Payload: payload{Lines: 7, Names: []string{"x"}}}
	ix.Put("/a", want)
	if err := saveAll(ix); err != nil {
		t.Fatal(err)
	}
	got, ok := Load[payload](dir, "demo", 1).Get("/a")
	if !ok {
		t.Fatal("entry lost")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-put +loaded):\n%s", diff)
	}
	// Another version, or another payload shape, starts empty.
	if _, ok := Load[payload](dir, "demo", 2).Get("/a"); ok {
		t.Error("version 2 read a version 1 index")
	}
	type other struct{ Lines string }
	if _, ok := Load[other](dir, "demo", 1).Get("/a"); ok {
		t.Error("a different payload type was decoded")
	}
}

func TestCorruptIsDiscarded(t *testing.T) {
	dir := t.TempDir()
	ix := Load[payload](dir, "demo", 1)
	ix.Put("/a", Entry[payload]{Offset: 1})
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(ix.Path())
	for name, data := range map[string][]byte{"garbage": []byte("not gob"), "truncated": b[:len(b)/2], "empty": nil} {
		if err := os.WriteFile(ix.Path(), data, 0o600); err != nil {
			t.Fatal(err)
		}
		got := Load[payload](dir, "demo", 1)
		if got.Len() != 0 {
			t.Errorf("%s: %d entries", name, got.Len())
		}
		// It is rewritten on the next save, so the damage costs one run.
		if err := got.Save(); err != nil {
			t.Fatal(err)
		}
		if Load[payload](dir, "demo", 1).Len() != 0 {
			t.Errorf("%s: rewritten index not empty", name)
		}
	}
}

func TestDisabled(t *testing.T) {
	ix := Load[payload]("", "demo", 1)
	ix.Put("/a", Entry[payload]{Offset: 1})
	if _, ok := ix.Get("/a"); ok || ix.Enabled() {
		t.Error("a disabled index stores entries")
	}
	if err := saveAll(ix); err != nil {
		t.Error(err)
	}
}

func TestPruneAndNoIdleWrites(t *testing.T) {
	dir := t.TempDir()
	ix := Load[payload](dir, "demo", 1)
	ix.Put("/a", Entry[payload]{Offset: 1})
	ix.Put("/b", Entry[payload]{Offset: 2})
	if err := saveAll(ix); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(ix.Path())

	// A run that reads everything and changes nothing does not write.
	ix = Load[payload](dir, "demo", 1)
	ix.Get("/a")
	ix.Get("/b")
	if err := saveAll(ix); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(ix.Path()) // a rewrite is a rename: a new inode
	if StampOf(st1) != StampOf(st2) {
		t.Error("an unchanged index was rewritten")
	}

	// /b vanished: a complete run drops it; a partial run (no prune) keeps it.
	ix = Load[payload](dir, "demo", 1)
	ix.Get("/a")
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	if got := Load[payload](dir, "demo", 1).Paths(); len(got) != 2 {
		t.Errorf("without prune: %v", got)
	}
	ix = Load[payload](dir, "demo", 1)
	ix.Get("/a")
	if err := saveAll(ix); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/a"}, Load[payload](dir, "demo", 1).Paths()); diff != "" {
		t.Errorf("after prune (-want +got):\n%s", diff)
	}
	// Only the index file (no temp files) is left.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "demo.index" {
		t.Errorf("dir holds %v", ents)
	}
}

func TestPrefixSum(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	content := strings.Repeat("line of text\n", 100)
	os.WriteFile(p, []byte(content), 0o600)
	f, _ := os.Open(p)
	defer f.Close()
	off := int64(len(content) - 13)
	sum, err := PrefixSum(f, off)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := PrefixSum(f, off); again != sum {
		t.Error("not deterministic")
	}
	if other, _ := PrefixSum(f, off-13); other == sum {
		t.Error("the offset is not part of the sum")
	}
	// A rewrite in place before the offset changes the sum.
	b := []byte(content)
	b[off-5] = 'X'
	os.WriteFile(p, b, 0o600)
	if changed, _ := PrefixSum(f, off); changed == sum {
		t.Error("a changed prefix has the same sum")
	}
	if zero, err := PrefixSum(f, 0); err != nil || zero != sumOfEmpty() {
		t.Errorf("offset 0: %v %v", zero, err)
	}
}

func sumOfEmpty() uint64 {
	s, _ := PrefixSum(strings.NewReader(""), 0)
	return s
}

func TestStampOf(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("abc"), 0o600)
	st, _ := os.Stat(p)
	s := StampOf(st)
	if s.Size != 3 || s.MtimeNs != st.ModTime().UnixNano() || s.Ino == 0 {
		t.Errorf("stamp %+v", s)
	}
	q := filepath.Join(filepath.Dir(p), "g")
	os.WriteFile(q, []byte("abc"), 0o600)
	st2, _ := os.Stat(q)
	if StampOf(st2).SameFile(s) {
		t.Error("two files are the same file")
	}
}

func saveAll[T any](ix *Index[T]) error {
	ix.PruneUnseen("")
	return ix.Save()
}

func TestPruneUnderPrefix(t *testing.T) {
	dir := t.TempDir()
	ix := Load[payload](dir, "demo", 1)
	for _, p := range []string{"/root1/a", "/root1/b", "/root2/a"} {
		ix.Put(p, Entry[payload]{Offset: 1})
	}
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	ix = Load[payload](dir, "demo", 1)
	ix.Get("/root1/a")
	ix.PruneUnseen("/root1/")
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/root1/a", "/root2/a"}, Load[payload](dir, "demo", 1).Paths()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
