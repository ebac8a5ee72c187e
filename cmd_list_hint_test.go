package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// On a terminal the footer of a partial `list -a` is the table's last line, on
// stdout; stderr stays quiet (list_hints_all.txt covers the pipe: stderr).
func TestListFooterOnTTY(t *testing.T) {
	h, out, errOut := testHost(t)
	h.outTTY = true
	home := filepath.Join(t.TempDir(), "fixture-home")
	if err := os.CopyFS(home, os.DirFS("testdata/home")); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2026, 11, 20, 21, 55, 0, 0, time.UTC) // as TestScripts
	if err := filepath.WalkDir(home, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, old, old)
	}); err != nil {
		t.Fatal(err)
	}
	h.now = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	o := listOptions{globalOptions: globalOptions{Home: home, NoColor: true}, All: true}
	if err := runList(context.Background(), h, o); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if want := "27 sessions older than 7d not shown, the newest 10d ago (use --since 11d)"; len(lines) != 3 || lines[2] != want {
		t.Errorf("stdout:\n%s\nwant the table and last the line %q", out, want)
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr: %q, want nothing", errOut)
	}
}
