package discover

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
