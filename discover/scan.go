package discover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/jsonl"
)

// Workers is how many goroutines an adapter reads its n files with: GOMAXPROCS,
// but at least 2 and at most 4, and never more than n. At least two because the
// work is reads as much as parsing, and a worker waiting on a cold file would
// otherwise leave the core idle; at most four because every adapter scans at the
// same time (All runs them side by side), so more would only contend for the
// same cores and disk, and each worker holds a parse's buffers in memory.
func Workers(n int) int { return max(0, min(max(runtime.GOMAXPROCS(0), 2), 4, n)) }

// Parallel runs fn(i) for every i in [0,n) on Workers(n) goroutines, handing out
// one i at a time: for tasks of uneven cost, such as parsing files. It stops
// handing out work when ctx ends and reports whether every i was run.
func Parallel(ctx context.Context, n int, fn func(i int)) bool {
	return ParallelWith(ctx, n, func(i int, _ *struct{}) { fn(i) })
}

// ParallelWith is Parallel with a scratch value per worker (zero at first),
// reused for every i that worker runs: buffers that need not be allocated per
// task.
func ParallelWith[S any](ctx context.Context, n int, fn func(i int, scratch *S)) bool {
	next := make(chan int)
	var wg sync.WaitGroup
	for range Workers(n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s S
			for i := range next {
				fn(i, &s)
			}
		}()
	}
	done := true
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			done = false
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return done
}

// Spread is Parallel for many small tasks of even cost (a stat, an index
// lookup), where handing out each i costs more than the task: each worker takes
// every w-th i. It checks ctx every 64 tasks and reports whether every i was run.
func Spread(ctx context.Context, n int, fn func(i int)) bool {
	w := Workers(n)
	var wg sync.WaitGroup
	var stopped atomic.Bool
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j, i := 0, k; i < n; j, i = j+1, i+w {
				if j%64 == 0 && ctx.Err() != nil {
					stopped.Store(true)
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
	return !stopped.Load()
}

// Budget is how an adapter that parses whole files spends the time its context
// leaves, so that it answers within its timeout (the index saved, the next run
// continuing from it) whatever the size of the history: files are parsed in
// full until StopAt (half the time left), then summarised from their head and
// tail until GiveUpAt (three quarters); the files not reached by then are left
// out and named (NameLeftOut), except those of sessions that may be alive,
// which each adapter reads first and never leaves out (their mustRead). The
// zero Budget (no deadline) never runs out.
type Budget struct {
	StopAt, GiveUpAt time.Time
	// Now is the clock (nil: time.Now); tests move it.
	Now func() time.Time
}

func (b Budget) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// BudgetOf is the Budget for ctx's deadline.
func BudgetOf(ctx context.Context) Budget {
	dl, ok := ctx.Deadline()
	if !ok {
		return Budget{}
	}
	now := time.Now()
	left := dl.Sub(now)
	return Budget{StopAt: now.Add(left / 2), GiveUpAt: now.Add(left * 3 / 4)}
}

// Over reports whether full parsing must stop.
func (b Budget) Over() bool { return !b.StopAt.IsZero() && b.now().After(b.StopAt) }

// GivenUp reports whether even quick summaries must stop.
func (b Budget) GivenUp() bool { return !b.GiveUpAt.IsZero() && b.now().After(b.GiveUpAt) }

var errBudget = errors.New("time budget exhausted")

// budgetCheck is how many bytes a budgeted read takes between looks at the
// clock (the clock being dearer than a line, and lines being any length).
const budgetCheck = 1 << 20

// ReadLinesUntil is ReadLines that stops once the budget is over: partial is
// then true and next is where to resume, the start of the first line not passed
// to fn. The clock is checked every MiB read, inside a line as well as between
// lines: a single line of gigabytes (an unfinished one, a sparse file) costs no
// more than the budget. Such a line, once past jsonl.MaxLine, is skipped anyway,
// so next is then inside it, past what was read (ReadRangeUntil resumes there).
func ReadLinesUntil(r io.Reader, base int64, b Budget, fn func(line []byte, off int64) error) (next int64, stats jsonl.Stats, partial bool, err error) {
	return ReadLinesUntilWith(nil, r, base, b, fn)
}

// ReadLinesUntilWith is ReadLinesUntil reading through buf, a worker's buffer
// reused from file to file (nil: a buffer of its own).
func ReadLinesUntilWith(buf *jsonl.Buffer, r io.Reader, base int64, b Budget, fn func(line []byte, off int64) error) (next int64, stats jsonl.Stats, partial bool, err error) {
	read := jsonl.Read
	if buf != nil {
		read = buf.Read
	}
	if !b.StopAt.IsZero() {
		// The first MiB is read whatever the clock says: each run gets further.
		r = &budgetReader{r: r, b: b, left: budgetCheck}
	}
	next, stats, err = read(r, base, fn)
	if errors.Is(err, errBudget) {
		return next, stats, true, nil
	}
	return next, stats, false, err
}

// budgetReader fails with errBudget once b is over, looking at the clock every
// budgetCheck bytes.
type budgetReader struct {
	r    io.Reader
	b    Budget
	left int // bytes until the next look
}

func (br *budgetReader) Read(p []byte) (int, error) {
	if br.left <= 0 {
		if br.b.Over() {
			return 0, errBudget
		}
		br.left = budgetCheck
	}
	n, err := br.r.Read(p[:min(len(p), br.left)])
	br.left -= n
	return n, err
}

// ReadRangeUntil is ReadLinesUntilWith over [start, end) of f. An earlier read
// may have stopped inside a line over jsonl.MaxLine (next, above): when start is
// not a line start, the rest of that line is skipped, not read as a line of its
// own, nor counted again.
func ReadRangeUntil(buf *jsonl.Buffer, f io.ReaderAt, start, end int64, b Budget, fn func(line []byte, off int64) error) (next int64, stats jsonl.Stats, partial bool, err error) {
	inLine := !jsonl.StartsLine(f, start)
	next, stats, partial, err = ReadLinesUntilWith(buf, io.NewSectionReader(f, start, end-start), start, b, func(line []byte, off int64) error {
		if inLine && off == start {
			return nil // the rest of a line skipped before
		}
		return fn(line, off)
	})
	if inLine && stats.TooLong > 0 && stats.First == start {
		stats.TooLong-- // counted when first read
	}
	return next, stats, partial, err
}

// NameLeftOut is the warning for what a listing left out because its budget
// gave up (Budget.GivenUp) before reading it: it names them, up to five (ids
// or file names, sorted), and says that the next run gets further. "" when
// names is empty.
func NameLeftOut(names []string, what string) string {
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return fmt.Sprintf("%d %s were not read in time and are missing from this output (%s); run the command again: each run indexes more, or raise --timeout",
		len(names), what, strings.Join(names[:min(5, len(names))], ", "))
}

// NameTooLong is the warning for files with lines over jsonl.MaxLine, which
// every reader skips as unreadable: it names them, up to three (sorted), so the
// user can find what hides part of a session. "" when paths is empty.
func NameTooLong(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	sort.Strings(paths)
	more := ""
	if len(paths) > 3 {
		more = fmt.Sprintf(" and %d more", len(paths)-3)
	}
	return fmt.Sprintf("%d file(s) with a line over %d MiB, skipped as unreadable: %s%s; what those lines hold is missing, the rest of each session is listed",
		len(paths), jsonl.MaxLine>>20, strings.Join(paths[:min(3, len(paths))], ", "), more)
}

// NameIncomplete is the warning for sessions listed without their token totals
// because parsing ran out of time (the budget): it names them, up to five, so
// the user knows which figures are missing. nil when ids is empty.
func NameIncomplete(ids []string, what string) string {
	if len(ids) == 0 {
		return ""
	}
	sort.Strings(ids)
	shown := ids
	more := ""
	if len(ids) > 5 {
		shown, more = ids[:5], fmt.Sprintf(" and %d more", len(ids)-5)
	}
	return fmt.Sprintf("%d %s were summarised without token totals to answer in time (%s%s): their tokens and cost are missing from this output, every other field is listed; the next run continues indexing them",
		len(ids), what, strings.Join(shown, ", "), more)
}

// ClockSlack widens, for clocks that tick coarsely, how long before a process
// started a session file tied to it may have last been written (on top of the
// slack of the adapter's own tie rule).
const ClockSlack = time.Minute

// WrittenSince is the span of file mtimes that a listing whose budget gave up
// reads all the same, because an adapter ties a running process to a session
// by timing: a file written since the earliest such process started (less
// slack) may be the one it is tied to, and leaving it out could make another
// look tied. The zero value holds nothing.
type WrittenSince struct{ from time.Time }

// Open widens w to the files written since start, less slack and ClockSlack.
func (w *WrittenSince) Open(start time.Time, slack time.Duration) {
	if t := start.Add(-slack - ClockSlack); w.from.IsZero() || t.Before(w.from) {
		w.from = t
	}
}

// IsZero reports whether w holds nothing (Open was never called).
func (w WrittenSince) IsZero() bool { return w.from.IsZero() }

// Holds reports whether a file last written at mtime is within w.
func (w WrittenSince) Holds(mtime time.Time) bool { return !w.from.IsZero() && !mtime.Before(w.from) }

// MustFirst moves the items of xs that must names to the front, keeping their
// order and the others', and reports for each position of the reordered xs
// whether must named it: a listing reads those first and never leaves them out
// when its budget gives up (the sessions that may be alive). must nil names
// none.
func MustFirst[T any](xs []T, must func(T) bool) []bool {
	flags := make([]bool, len(xs))
	if must == nil {
		return flags
	}
	var named, rest []T
	for _, x := range xs {
		if must(x) {
			named = append(named, x)
		} else {
			rest = append(rest, x)
		}
	}
	copy(xs, named)
	copy(xs[len(named):], rest)
	for i := range named {
		flags[i] = true
	}
	return flags
}
