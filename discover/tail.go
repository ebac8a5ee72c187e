package discover

import (
	"bytes"
	"errors"
	"io"
	"os"

	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// Tail reads the complete lines at the end of a file in growing windows, as
// jsonl.Tail does for each window size, but each larger window reads only the
// bytes before the lines it already holds. The file's size is taken once, at
// open, so every window describes the same snapshot.
type Tail struct {
	f      *os.File
	size   int64
	mapped []byte // the whole file, when memory-mapped
	start  int64  // the current window starts here (size: no window yet)
	lines  [][]byte
	offs   []int64
}

// OpenTail opens path for Window; the lines it returns stay valid after Close.
func OpenTail(path string) (*Tail, error) {
	f, err := agentfs.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Tail{f: f, size: st.Size(), start: st.Size()}, nil
}

// OpenTailMapped is OpenTail, memory-mapping the file where the platform
// allows (Mapped reports whether it did): a window of many megabytes then costs
// neither a copy nor fresh memory. The lines it returns are views of the mapping,
// valid only until Close, and reading them faults (SIGBUS) if the file is
// truncated meanwhile: callers run with debug.SetPanicOnFault and fall back to
// OpenTail when that happens.
func OpenTailMapped(path string) (*Tail, error) {
	t, err := OpenTail(path)
	if err != nil || t.size == 0 {
		return t, err
	}
	if m, err := mapFile(t.f, t.size); err == nil {
		t.mapped = m
	}
	return t, nil
}

// Size is the file's size when it was opened: the end of every window.
func (t *Tail) Size() int64 { return t.size }

// Start is where the widest window so far begins (Size before the first):
// the file's last Size()-Start() bytes are all that was read.
func (t *Tail) Start() int64 { return t.start }

// Mapped reports whether the file is memory-mapped.
func (t *Tail) Mapped() bool { return t.mapped != nil }

// Close closes the file (and unmaps it).
func (t *Tail) Close() error {
	if t.mapped != nil {
		_ = unmapFile(t.mapped)
		t.mapped = nil
	}
	return t.f.Close()
}

// Window returns the complete lines in the last window bytes (the first, possibly
// partial line dropped unless the window starts at 0) with their offsets, and
// whether the window reaches offset 0: jsonl.Tail's answer. The returned slices
// are shared with later calls; callers must not modify them.
func (t *Tail) Window(window int64) (lines [][]byte, offs []int64, atStart bool, err error) {
	start := max(t.size-window, 0)
	if start >= t.start {
		return t.lines, t.offs, t.start == 0, nil // no wider than what is held
	}
	// Read up to the first line held: the lines before it are the new ones. One
	// read (or none, mapped), and the lines are views of its buffer.
	end := t.size
	if len(t.offs) > 0 {
		end = t.offs[0]
	}
	from := max(start-1, 0) // the byte before the window tells whether it starts a line
	var buf []byte
	if t.mapped != nil {
		buf = t.mapped[from:end:end]
	} else {
		buf = make([]byte, end-from)
		n, err := t.f.ReadAt(buf, from)
		if err != nil && !(errors.Is(err, io.EOF) && n < len(buf)) {
			return nil, nil, false, err
		}
		buf = buf[:n]
	}
	pos := 0
	if start > 0 && len(buf) > 0 {
		pos = 1
		if buf[0] != '\n' {
			// The window begins inside a line: drop that line.
			if i := bytes.IndexByte(buf[1:], '\n'); i < 0 {
				pos = len(buf)
			} else {
				pos = 1 + i + 1
			}
		}
	}
	var newLines [][]byte
	var newOffs []int64
	for pos < len(buf) {
		i := bytes.IndexByte(buf[pos:], '\n')
		if i < 0 {
			break // a final line still being written
		}
		line := buf[pos : pos+i : pos+i]
		off := from + int64(pos)
		pos += i + 1
		if len(line)+1 > jsonl.MaxLine {
			continue // as jsonl.Read: too long to parse
		}
		if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 {
			newLines = append(newLines, line)
			newOffs = append(newOffs, off)
		}
	}
	if len(t.offs) == 0 {
		t.lines, t.offs = newLines, newOffs
	} else {
		t.lines = append(newLines, t.lines...)
		t.offs = append(newOffs, t.offs...)
	}
	t.start = start
	return t.lines, t.offs, start == 0, nil
}
