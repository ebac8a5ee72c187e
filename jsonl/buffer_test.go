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
	if got.TooLong != 2 || len(got.Lines) != 2 {
		t.Errorf("%d lines, %d too long; want a and b, 2 too long", len(got.Lines), got.TooLong)
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
