package index

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Dir.Stat answers what StatPath answers for the same path.
func TestDirStat(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("abc"), 0o600)
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	os.Symlink("f", filepath.Join(dir, "link"))
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	names, err := d.Names()
	sort.Strings(names)
	if err != nil || !cmp.Equal(names, []string{"f", "link", "sub"}) {
		t.Fatalf("names %v, %v", names, err)
	}
	for _, n := range names {
		s1, r1, e1 := d.Stat(n)
		s2, r2, e2 := StatPath(filepath.Join(dir, n))
		if s1 != s2 || r1 != r2 || (e1 == nil) != (e2 == nil) {
			t.Errorf("%s: Dir.Stat %+v %v %v, StatPath %+v %v %v", n, s1, r1, e1, s2, r2, e2)
		}
	}
	if _, _, err := d.Stat("gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing entry: %v", err)
	}
	if _, err := OpenDir(filepath.Join(dir, "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
}
