package jsonl

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// readAll is what a reader hands fn: lines (copied), offsets, next, stats, error.
type readAll struct {
	Lines   []string
	Offs    []int64
	Next    int64
	TooLong int
	Err     string
}

func collectWith(read func(io.Reader, int64, func([]byte, int64) error) (int64, Stats, error), r io.Reader, base int64, stopAt int) readAll {
	var out readAll
	next, st, err := read(r, base, func(l []byte, off int64) error {
		out.Lines = append(out.Lines, string(l))
		out.Offs = append(out.Offs, off)
		if len(out.Lines) == stopAt {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	out.Next, out.TooLong = next, st.TooLong
	if err != nil {
		out.Err = err.Error()
	}
	return out
}

// checkSame compares Buffer.Read with Read on data, whole and in small reads,
// with a reader error, and with fn stopping early; b is reused throughout.
func checkSame(t *testing.T, b *Buffer, data string) {
	t.Helper()
	readers := map[string]func() io.Reader{
		"whole":   func() io.Reader { return strings.NewReader(data) },
		"onebyte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(data)) },
		"half":    func() io.Reader { return iotest.HalfReader(strings.NewReader(data)) },
		"limit":   func() io.Reader { return io.LimitReader(strings.NewReader(data), int64(len(data)/2)) },
		"error": func() io.Reader {
			return io.MultiReader(strings.NewReader(data[:len(data)/2]), iotest.ErrReader(errors.New("disk gone")))
		},
	}
	for name, r := range readers {
		for _, stop := range []int{0, 2} {
			want := collectWith(Read, r(), 7, stop)
			got := collectWith(b.Read, r(), 7, stop)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s, stop after %d (-Read +Buffer.Read):\n%s", name, stop, diff)
			}
		}
	}
}

func TestBufferReadSameAsRead(t *testing.T) {
	long := strings.Repeat("x", bufferStart+100) // longer than the first buffer
	huge := strings.Repeat("y", bufferKeep+100)  // grows the buffer past what it keeps
	var b Buffer
	for _, data := range []string{
		"",
		"\n\n",
		"{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":",
		"no end",
		"a\r\r\n\rb\n",
		"a\n" + long + "\nb\n" + long,
		long + "\n" + long + "\n",
		"x\n" + huge + "\ny\n",
		"short\n",
	} {
		checkSame(t, &b, data)
	}
	if len(b.b) > bufferKeep {
		t.Errorf("the buffer kept %d bytes after a long line, want at most %d", len(b.b), bufferKeep)
	}
}

func TestBufferReadSkipsOverMaxLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 64 MiB line")
	}
	data := "a\n" + strings.Repeat("z", MaxLine+10) + "\nb\n" + strings.Repeat("z", MaxLine) + "\n" + strings.Repeat("w", MaxLine+5)
	var b Buffer
	want := collectWith(Read, strings.NewReader(data), 0, 0)
	got := collectWith(b.Read, strings.NewReader(data), 0, 0)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-Read +Buffer.Read):\n%s", diff)
	}
	// The unfinished last line is over MaxLine already: skipped as well.
	if got.TooLong != 3 || len(got.Lines) != 2 {
		t.Errorf("%d lines, %d too long; want a and b, 3 too long", len(got.Lines), got.TooLong)
	}
}

// FuzzBufferRead: Buffer.Read hands fn what Read does, for any bytes read in
// any pieces.
func FuzzBufferRead(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":"))
	f.Add([]byte("\r\n\n\r"))
	var b Buffer
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSame(t, &b, string(data))
	})
}

// zeros is an endless stream of one byte, as a sparse file reads.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'z'
	}
	return len(p), nil
}

// A final line already over MaxLine when the input ends or fails is skipped,
// counted, and the resume point is past what was read of it, not its start: the
// next run does not read those bytes again (issue 34 item 4: an 8 GB transcript
// with no newline was read from 0 by every listing).
func TestReadSkipsPastAnUnfinishedOverlongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 64 MiB lines")
	}
	head := "a\nb\n"
	size := int64(MaxLine + 1<<20)
	type result struct {
		Lines   []string
		Next    int64
		TooLong int
		First   int64
		Err     string
	}
	run := func(read func(io.Reader, int64, func([]byte, int64) error) (int64, Stats, error), r io.Reader) result {
		var out result
		next, st, err := read(r, 100, func(l []byte, off int64) error {
			out.Lines = append(out.Lines, string(l))
			return nil
		})
		out.Next, out.TooLong, out.First = next, st.TooLong, st.First
		if err != nil {
			out.Err = err.Error()
		}
		return out
	}
	ended := func() io.Reader { return io.MultiReader(strings.NewReader(head), io.LimitReader(zeros{}, size)) }
	failed := func() io.Reader {
		return io.MultiReader(strings.NewReader(head), io.LimitReader(zeros{}, size), iotest.ErrReader(errors.New("budget")))
	}
	short := func() io.Reader { return io.MultiReader(strings.NewReader(head), io.LimitReader(zeros{}, 1000)) }
	end := 100 + int64(len(head)) + size
	var b Buffer
	for _, c := range []struct {
		name string
		r    func() io.Reader
		want result
	}{
		{"ends", ended, result{Lines: []string{"a", "b"}, Next: end, TooLong: 1, First: 104}},
		{"fails", failed, result{Lines: []string{"a", "b"}, Next: end, TooLong: 1, First: 104, Err: "budget"}},
		// Under MaxLine, an unfinished line is still the writer's: resume at its start.
		{"short", short, result{Lines: []string{"a", "b"}, Next: 104}},
	} {
		for name, read := range map[string]func(io.Reader, int64, func([]byte, int64) error) (int64, Stats, error){"Read": Read, "Buffer.Read": b.Read} {
			if diff := cmp.Diff(c.want, run(read, c.r())); diff != "" {
				t.Errorf("%s, %s (-want +got):\n%s", c.name, name, diff)
			}
		}
	}
}
