package jsonl

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func collect(t *testing.T, data string, base int64) ([]string, []int64, int64) {
	t.Helper()
	var lines []string
	var offs []int64
	next, _, err := Read(strings.NewReader(data), base, func(l []byte, off int64) error {
		lines = append(lines, string(l))
		offs = append(offs, off)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines, offs, next
}

func TestReadLinesPartialLastLine(t *testing.T) {
	data := "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":" // last line still being written
	lines, offs, next := collect(t, data, 100)
	if diff := cmp.Diff([]string{`{"a":1}`, `{"b":2}`}, lines); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]int64{100, 108}, offs); diff != "" {
		t.Error(diff)
	}
	// Resume point is the start of the partial line.
	if want := int64(100 + strings.Index(data, `{"c"`)); next != want {
		t.Errorf("next = %d, want %d", next, want)
	}
}

func TestReadLinesHugeLine(t *testing.T) {
	big := `{"x":"` + strings.Repeat("y", 10<<20) + `"}`
	data := "first\n" + big + "\nlast\n"
	var sizes []int
	var offs []int64
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, stats, err := Read(strings.NewReader(data), 0, func(l []byte, off int64) error {
		sizes = append(sizes, len(l))
		offs = append(offs, off)
		return nil
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{5, len(big), 4}, sizes); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]int64{0, 6, int64(6 + len(big) + 1)}, offs); diff != "" {
		t.Error(diff)
	}
	if stats.TooLong != 0 {
		t.Errorf("TooLong = %d", stats.TooLong)
	}
	// Bounded: the line itself plus buffers, not a multiple of the input.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*uint64(len(big)) {
		t.Errorf("allocated %d bytes for a %d-byte line", grew, len(big))
	}
}

func TestReadLinesSkipsOverMaxLine(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 64 MiB")
	}
	data := "a\n" + strings.Repeat("z", MaxLine+10) + "\nb\n"
	lines, offs, _ := collect(t, data, 0)
	if diff := cmp.Diff([]string{"a", "b"}, lines); diff != "" {
		t.Error(diff)
	}
	if offs[1] != int64(len(data)-2) {
		t.Errorf("offset of b = %d", offs[1])
	}
}

func TestTail(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.jsonl")
	var b bytes.Buffer
	for i := 0; i < 100; i++ {
		b.WriteString(strings.Repeat("x", 9) + "\n") // 10 bytes a line
	}
	b.WriteString("partial")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	lines, offs, atStart, err := Tail(p, 35) // window starts mid-line
	if err != nil {
		t.Fatal(err)
	}
	if atStart || len(lines) != 2 || offs[0] != 980 || offs[1] != 990 {
		t.Errorf("lines=%q offs=%v atStart=%v", lines, offs, atStart)
	}
	lines, _, atStart, _ = Tail(p, 1<<20)
	if !atStart || len(lines) != 100 {
		t.Errorf("whole file: %d lines, atStart=%v", len(lines), atStart)
	}
}

// TailFrom never reads before from, keeps the line at from, and drops a partial
// first line when the window starts later.
func TestTailFrom(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(p, []byte("old run\n{\"a\":1}\n{\"b\":2}\npartial"), 0o600); err != nil {
		t.Fatal(err)
	}
	lines, offs, atStart, err := TailFrom(p, 8, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`)}, lines); diff != "" || offs[0] != 8 || atStart {
		t.Errorf("from 8: offs=%v atStart=%v (-want +got):\n%s", offs, atStart, diff)
	}
	lines, offs, _, err = TailFrom(p, 8, 18) // starts inside {"a":1}
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || string(lines[0]) != `{"b":2}` || offs[0] != 16 {
		t.Errorf("window inside a line: %q %v", lines, offs)
	}
	lines, _, _, _ = TailFrom(p, 8, 15) // starts exactly at {"b":2}
	if len(lines) != 1 || string(lines[0]) != `{"b":2}` {
		t.Errorf("window at a line start: %q", lines)
	}
}
