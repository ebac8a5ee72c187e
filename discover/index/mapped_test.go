package index

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeBin saves an index of n entries, payload i named name+i, and returns the
// file's path.
func writeBin(t *testing.T, dir string, n int, name string) string {
	t.Helper()
	ix := Load[*binPayload](dir, "m", 1)
	for i := range n {
		ix.Put(fmt.Sprintf("/p/%05d", i), Entry[*binPayload]{Stamp: Stamp{1, uint64(i), 10, 1}, Offset: 10, Payload: &binPayload{i, name + fmt.Sprint(i)}})
	}
	if err := saveAll(ix); err != nil {
		t.Fatal(err)
	}
	return ix.Path()
}

// An index file replaced (by rename, as Save does) after Load is mapped: the
// loaded index keeps reading the bytes it loaded.
func TestMappedIndexFileReplaced(t *testing.T) {
	dir := t.TempDir()
	writeBin(t, dir, 500, "old")
	ix := Load[*binPayload](dir, "m", 1)
	writeBin(t, dir, 3, "new")
	runtime.GC()
	for i := range 500 {
		e, ok := ix.Get(fmt.Sprintf("/p/%05d", i))
		if !ok || e.Payload.Name != fmt.Sprint("old", i) || e.Payload.Lines != i {
			t.Fatalf("entry %d after the file was replaced: %+v, %v", i, e.Payload, ok)
		}
	}
	if ix.Len() != 500 {
		t.Errorf("Len = %d, want 500", ix.Len())
	}
}

// An index file truncated in place after Load (which no agentctl writer does)
// must not crash: its payloads become misses, and Save writes what it still has.
func TestMappedIndexFileTruncated(t *testing.T) {
	dir := t.TempDir()
	path := writeBin(t, dir, 2000, strings.Repeat("x", 40))
	ix := Load[*binPayload](dir, "m", 1)
	if _, ok := ix.Get("/p/00001"); !ok {
		t.Fatal("a fresh entry missed before truncation")
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if e, ok := ix.Get("/p/01999"); ok && ix.mapped() {
		t.Fatalf("an entry of a truncated mapped file was read: %+v", e.Payload)
	}
	// The paths are the index's own: lookups, Paths and Fresh still work.
	if got := ix.Paths(); len(got) != 2000 || got[1999] != "/p/01999" {
		t.Fatalf("Paths after truncation: %d paths", len(got))
	}
	if !ix.Fresh("/p/00005", Stamp{1, 5, 10, 1}) {
		t.Error("Fresh lost its stamp after truncation")
	}
	ix.Put("/q", Entry[*binPayload]{Stamp: Stamp{2, 2, 2, 2}, Payload: &binPayload{1, "put"}})
	if err := ix.Save(); err != nil {
		t.Fatalf("Save after truncation: %v", err)
	}
	again := Load[*binPayload](dir, "m", 1)
	if e, ok := again.Get("/q"); !ok || e.Payload.Name != "put" {
		t.Fatalf("the entry Put after truncation was not saved: %+v %v", e, ok)
	}
	if ix.mapped() {
		if _, ok := again.Get("/p/01999"); ok {
			t.Error("a payload lost to the truncation came back")
		}
	}
}

// Load maps the file where it can (otherwise the tests above prove nothing).
func TestIndexFileMapped(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("mapping is for unix")
	}
	dir := t.TempDir()
	writeBin(t, dir, 10, "a")
	if ix := Load[*binPayload](dir, "m", 1); !ix.mapped() {
		t.Error("the index file was not mapped")
	}
}

func TestPathArena(t *testing.T) {
	var a pathArena
	var want, got []string
	for i := range 3000 {
		p := strings.Repeat("d/", i%40) + fmt.Sprint(i)
		if i%500 == 0 {
			p = strings.Repeat("long/", 4000) // bigger than a chunk's share
		}
		b := []byte(p)
		want = append(want, p)
		got = append(got, a.str(b))
		clear(b) // the arena copied it
	}
	if a.str(nil) != "" {
		t.Error("empty path")
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("path %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

// A FIFO where the index file belongs is no index, and does not hang Load.
func TestIndexFileFIFO(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("mkfifo")
	}
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "m.index"), 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan int)
	go func() { done <- Load[*binPayload](dir, "m", 1).Len() }()
	select {
	case n := <-done:
		if n != 0 {
			t.Errorf("a FIFO gave %d entries", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Load blocked on a FIFO")
	}
}
