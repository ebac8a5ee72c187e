package discover

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
