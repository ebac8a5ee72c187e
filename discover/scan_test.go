package discover

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/jsonl"
)

func TestParallelAndSpreadRunEachOnce(t *testing.T) {
	for _, n := range []int{0, 1, 3, 1000} {
		for name, run := range map[string]func(context.Context, int, func(int)) bool{"Parallel": Parallel, "Spread": Spread} {
			counts := make([]atomic.Int32, n)
			if !run(t.Context(), n, func(i int) { counts[i].Add(1) }) {
				t.Fatalf("%s(%d) reported a cut without a cancelled context", name, n)
			}
			for i := range counts {
				if c := counts[i].Load(); c != 1 {
					t.Fatalf("%s(%d): task %d ran %d times", name, n, i, c)
				}
			}
		}
	}
}

func TestParallelStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, run := range map[string]func(context.Context, int, func(int)) bool{"Parallel": Parallel, "Spread": Spread} {
		var ran atomic.Int32
		if run(ctx, 1000, func(int) { ran.Add(1) }) {
			t.Errorf("%s reported every task run under a cancelled context", name)
		}
		if ran.Load() == 1000 {
			t.Errorf("%s ran every task under a cancelled context", name)
		}
	}
}

func TestReadLinesUntilStopsAtALineBoundary(t *testing.T) {
	line := strings.Repeat("x", 1<<10) + "\n"
	in := strings.Repeat(line, 3<<10) // 3 MiB: the budget is checked after the first MiB
	var seen int64
	next, _, partial, err := ReadLinesUntil(strings.NewReader(in), 0, Budget{StopAt: time.Unix(1, 0)}, func(l []byte, off int64) error {
		seen++
		return nil
	})
	if err != nil || !partial {
		t.Fatalf("partial %v, err %v; want a partial read", partial, err)
	}
	if next != seen*int64(len(line)) || next >= int64(len(in)) {
		t.Fatalf("next %d after %d lines of %d bytes", next, seen, len(line))
	}
	next, _, partial, err = ReadLinesUntil(strings.NewReader(in), 0, Budget{}, func([]byte, int64) error { return nil })
	if err != nil || partial || next != int64(len(in)) {
		t.Fatalf("without a budget: next %d, partial %v, err %v; want the whole input", next, partial, err)
	}
}

// The budget's warning names the sessions whose totals are missing, five at
// most, sorted.
func TestNameIncomplete(t *testing.T) {
	if w := NameIncomplete(nil, "sessions"); w != "" {
		t.Errorf("no incomplete sessions: %q", w)
	}
	w := NameIncomplete([]string{"g", "b", "a", "f", "e", "d", "c"}, "transcripts")
	if !strings.HasPrefix(w, "7 transcripts were summarised without token totals to answer in time (a, b, c, d, e and 2 more)") {
		t.Errorf("%q", w)
	}
}

// TestMustFirst: the named items move to the front, both parts keep their
// order, and the flags follow the new positions.
func TestMustFirst(t *testing.T) {
	for _, tt := range []struct {
		name      string
		in        []int
		must      func(int) bool
		want      []int
		wantFlags []bool
	}{
		{"none named", []int{5, 4, 3}, func(int) bool { return false }, []int{5, 4, 3}, []bool{false, false, false}},
		{"nil names none", []int{5, 4, 3}, nil, []int{5, 4, 3}, []bool{false, false, false}},
		{"odd ones first", []int{6, 5, 4, 3, 2, 1}, func(i int) bool { return i%2 == 1 }, []int{5, 3, 1, 6, 4, 2}, []bool{true, true, true, false, false, false}},
		{"all named", []int{2, 1}, func(int) bool { return true }, []int{2, 1}, []bool{true, true}},
		{"empty", nil, func(int) bool { return true }, nil, []bool{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			xs := append([]int(nil), tt.in...)
			flags := MustFirst(xs, tt.must)
			if diff := cmp.Diff(tt.want, xs); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFlags, flags); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWrittenSince: the window opens at the earliest start less the tie rule's
// slack and ClockSlack; the zero value holds nothing.
func TestWrittenSince(t *testing.T) {
	start := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	var w WrittenSince
	if !w.IsZero() || w.Holds(start) {
		t.Fatalf("the zero WrittenSince holds %v", start)
	}
	w.Open(start.Add(time.Hour), 0)
	w.Open(start, 2*time.Second)
	w.Open(start.Add(2*time.Hour), 0)
	edge := start.Add(-2*time.Second - ClockSlack)
	for _, tt := range []struct {
		mtime time.Time
		want  bool
	}{
		{start.Add(time.Minute), true},
		{edge, true},
		{edge.Add(-time.Nanosecond), false},
		{start.Add(-time.Hour), false},
	} {
		if got := w.Holds(tt.mtime); got != tt.want {
			t.Errorf("Holds(%v) = %v, want %v", tt.mtime, got, tt.want)
		}
	}
}

// sparseLines writes "a\n", a line of size zero bytes (a hole: no disk), then
// "\nb\n", and returns the open file and the offset of the long line's end.
func sparseLines(t *testing.T, size int64) (*os.File, int64) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "t.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.WriteString("a\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("\nb\n"), 2+size); err != nil {
		t.Fatal(err)
	}
	return f, 2 + size
}

// lookClock is a clock that is past StopAt from its n-th look on.
func lookClock(n int) Budget {
	stop := time.Unix(1000, 0)
	looks := 0
	return Budget{StopAt: stop, GiveUpAt: stop.Add(time.Second), Now: func() time.Time {
		looks++
		if looks >= n {
			return stop.Add(time.Millisecond)
		}
		return stop.Add(-time.Second)
	}}
}

// The budget is looked at inside a line too (issue 34 item 4: a transcript of
// one 8 GB line was read to its end whatever the timeout), and a read stopped
// inside a line already over jsonl.MaxLine resumes where it stopped: the next
// read skips the rest of that line (not counted twice) and goes on.
func TestReadRangeUntilStopsInsideALongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 70 MiB")
	}
	size := int64(jsonl.MaxLine + 6<<20)
	f, end := sparseLines(t, size)
	total := end + 3
	var lines []string
	collect := func(l []byte, _ int64) error { lines = append(lines, string(l)); return nil }

	// Stopped a few MiB in: the line is not known to be too long yet, so the
	// resume point is its start.
	next, st, partial, err := ReadRangeUntil(nil, f, 0, total, lookClock(4), collect)
	if err != nil || !partial || next != 2 || st.TooLong != 0 {
		t.Fatalf("stopped early: next %d, partial %v, too long %d, err %v; want a partial read resuming at 2", next, partial, st.TooLong, err)
	}
	// Stopped past MaxLine: the resume point is inside the line, past what was read.
	var b jsonl.Buffer
	next, st, partial, err = ReadRangeUntil(&b, f, 2, total, lookClock(68), collect)
	if err != nil || !partial || st.TooLong != 1 || next <= 2+jsonl.MaxLine || next >= end {
		t.Fatalf("stopped past MaxLine: next %d, partial %v, too long %d, err %v; want a partial read resuming inside the line, one line too long", next, partial, st.TooLong, err)
	}
	next, st, partial, err = ReadRangeUntil(&b, f, next, total, Budget{}, collect)
	if err != nil || partial || st.TooLong != 0 || next != total {
		t.Fatalf("resumed: next %d, partial %v, too long %d, err %v; want the rest read, the long line not counted again", next, partial, st.TooLong, err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}
