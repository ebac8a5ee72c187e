package opencode

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
)

// TestLReader: a listing holds the *.json names that are not folders, sorted;
// a read returns the file's bytes and the identity a stat reports, through a
// reused buffer; a FIFO is refused (not waited on); a folder that is a file
// has that file's stamp, a missing one none; the opens reach agentfs's hook.
func TestLReader(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("msg_b.json", "bb")
	write("msg_a.json", strings.Repeat("a", 40<<10)) // larger than the first buffer
	write("msg_c.json", "c")
	write("notes.txt", "x")
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := runtime.GOOS == "linux" && syscall.Mkfifo(filepath.Join(dir, "msg_d.json"), 0o600) == nil

	var r lreader
	d, err := openDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	if got, want := d.stamp(), stampOf(dir); got != want {
		t.Errorf("folder stamp %+v, stat says %+v", got, want)
	}
	var opened []string
	restore := agentfs.SetHook(func(p string) { opened = append(opened, p) })
	defer restore()
	n := r.list(d)
	var names []string
	for i := range n {
		names = append(names, string(r.name(i)))
	}
	want := []string{"msg_a.json", "msg_b.json", "msg_c.json"}
	if fifo {
		want = append(want, "msg_d.json")
	}
	if !slices.Equal(names, want) {
		t.Fatalf("listed %q, want %q", names, want)
	}
	for i, name := range want {
		b, id, err := r.read(d, i)
		if name == "msg_d.json" {
			if err == nil {
				t.Errorf("a FIFO was read")
			}
			continue
		}
		wantB, _ := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != string(wantB) {
			t.Errorf("%s: read %d bytes (%v), want %d", name, len(b), err, len(wantB))
		}
		if st := stampOf(filepath.Join(dir, name)); index.Stamp(id) != st {
			t.Errorf("%s: identity %+v, stat says %+v", name, id, st)
		}
	}
	if b, _, err := r.readName(d, "msg_b.json"); err != nil || string(b) != "bb" {
		t.Errorf("readName: %q, %v", b, err)
	}
	slash := rootDir("/")
	defer slash.close()
	if b, _, err := r.readName(slash, filepath.Join(dir, "msg_c.json")[1:]); err != nil || string(b) != "c" {
		t.Errorf("readName of a relative path: %q, %v", b, err)
	}
	if len(opened) < 5 || opened[0] != filepath.Join(dir, "msg_a.json") {
		t.Errorf("the hook saw %q", opened)
	}

	root := rootDir(dir)
	defer root.close()
	if _, st, ok := subDir(root, "msg_c.json"); ok || st != stampOf(filepath.Join(dir, "msg_c.json")) || st == (index.Stamp{}) {
		t.Errorf("a file where a folder is expected: ok %v, stamp %+v", ok, st)
	}
	if _, st, ok := subDir(root, "missing"); ok || st != (index.Stamp{}) {
		t.Errorf("a missing folder: ok %v, stamp %+v", ok, st)
	}
	sd, st, ok := subDir(root, "sub.json")
	if !ok || st != stampOf(filepath.Join(dir, "sub.json")) {
		t.Errorf("a folder: ok %v, stamp %+v", ok, st)
	}
	sd.close()
	if missing := rootDir(filepath.Join(dir, "none")); true {
		if _, st, ok := subDir(missing, "x"); ok || st != (index.Stamp{}) {
			t.Errorf("under a missing root: ok %v, stamp %+v", ok, st)
		}
	}
}

// TestLegacyColdOpensOnly: a cold listing opens each session file, its
// message files, and part files of its first user message only; it never
// walks the other messages' part folders.
func TestLegacyColdOpensOnly(t *testing.T) {
	home, storage := legacyHome(t, 6)
	env := newEnv(home, nil, noProcs())
	env.StateDir = t.TempDir()
	var ss int
	opened := openedUnder(storage, func() { ss = len(discoverAll(t, env)) })
	parts := map[string]int{}
	kinds := map[string]int{}
	for _, p := range opened {
		el := strings.Split(p, string(filepath.Separator))
		kinds[el[0]]++
		if el[0] == "part" {
			parts[el[1]]++
		}
	}
	msgs, _ := filepath.Glob(filepath.Join(storage, "message", "*", "*.json"))
	if ss != 6 || kinds["session"] != 6 || kinds["message"] != len(msgs) {
		t.Errorf("%d sessions listed; opened %v; %d message files", ss, kinds, len(msgs))
	}
	if len(parts) == 0 || len(parts) > ss {
		t.Errorf("part files of %d messages opened for %d sessions: %v", len(parts), ss, parts)
	}
}
