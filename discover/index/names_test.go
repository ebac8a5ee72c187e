package index

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEachNameAgreesWithReadDir: the same names and kinds as os.ReadDir, over
// more entries than one read returns.
func TestEachNameAgreesWithReadDir(t *testing.T) {
	dir := t.TempDir()
	for i := range 3000 {
		name := "rollout-" + strconv.Itoa(i) + "-a-rather-long-name-to-fill-the-buffer.jsonl"
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "2026"), 0o700)
	os.Symlink("2026", filepath.Join(dir, "link"))
	type ent struct {
		Name string
		Kind EntryKind
	}
	var got, want []ent
	if err := EachName(dir, func(name []byte, k EntryKind) { got = append(got, ent{string(name), k}) }); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		want = append(want, ent{e.Name(), kindOf(e.Type())})
	}
	slices.SortFunc(got, func(a, b ent) int { return cmpStr(a.Name, b.Name) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-ReadDir +EachName):\n%s", diff)
	}
	if err := EachName(filepath.Join(dir, "missing"), func([]byte, EntryKind) {}); !os.IsNotExist(err) {
		t.Errorf("a missing directory: %v", err)
	}
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
