// Package jsonl reads the line-oriented files agents and agentctl append to
// (JSONL transcripts, launch logs, the events journal) the one way all of
// agentctl does: complete lines only, since the writer may be mid-line; lines of
// many megabytes read without bufio.Scanner's limit; lines over MaxLine skipped
// and counted, never buffered whole.
package jsonl

import (
	"bufio"
	"bytes"
	"io"

	"github.com/agentctl/agentctl/internal/agentfs"
)

// MaxLine is the longest JSONL line agentctl parses; longer lines are skipped and
// counted. Agents write single lines of many megabytes (tool results, attachments),
// so bufio.Scanner's 64 KiB default is far too small.
const MaxLine = 64 << 20

// Stats counts what a line reader skipped.
type Stats struct {
	TooLong int
	// First is the offset of the first line skipped as too long (when TooLong > 0).
	First int64
}

// tooLong counts a line skipped as too long, starting at off.
func (s *Stats) tooLong(off int64) {
	if s.TooLong == 0 {
		s.First = off
	}
	s.TooLong++
}

// Read calls fn for every complete ('\n'-terminated) line of r, with the byte
// offset at which the line starts (base + position in r). A final line without '\n'
// is still being written and is NOT passed to fn. It returns the offset just past
// the last complete line, which is where an incremental reader resumes.
// Lines longer than MaxLine are skipped (counted in stats) without being buffered.
// A final line already longer than MaxLine when r ends (or fails) is skipped too,
// finished or not: next is then the end of what was read, inside that line, so
// that a reader resuming there does not read its first MaxLine bytes again (it
// skips the rest of the line: see StartsLine).
func Read(r io.Reader, base int64, fn func(line []byte, off int64) error) (next int64, stats Stats, err error) {
	size := 256 << 10
	if lr, ok := r.(*io.LimitedReader); ok && lr.N < int64(size) {
		size = int(lr.N) + 1 // a small file or tail needs no 256 KiB buffer (cold indexes read thousands)
	}
	br := bufio.NewReaderSize(r, size)
	off := base        // bytes consumed so far
	lineStart := base  // start of the line being assembled
	var frags [][]byte // pieces of a line longer than the reader's buffer
	fragLen := 0
	tooLong := false
	for {
		chunk, rerr := br.ReadSlice('\n')
		off += int64(len(chunk))
		if rerr == bufio.ErrBufferFull {
			if !tooLong {
				if fragLen+len(chunk) > MaxLine {
					tooLong, frags, fragLen = true, nil, 0
				} else {
					frags = append(frags, append([]byte(nil), chunk...))
					fragLen += len(chunk)
				}
			}
			continue
		}
		if rerr != nil {
			if tooLong || fragLen+len(chunk) >= MaxLine {
				// Too long already (its '\n' to come makes it longer than MaxLine): skipped whatever follows, so the resume
				// point need not go back to its start.
				stats.tooLong(lineStart)
				lineStart = off
			}
			if rerr == io.EOF {
				return lineStart, stats, nil // a partial last line is not ours yet
			}
			return lineStart, stats, rerr
		}
		start := lineStart
		lineStart = off
		if tooLong || fragLen+len(chunk) > MaxLine {
			stats.tooLong(start)
			tooLong, frags, fragLen = false, nil, 0
			continue
		}
		line := chunk
		if frags != nil {
			// Join once, at the exact size: memory stays ~2x the line.
			line = make([]byte, 0, fragLen+len(chunk))
			for _, f := range frags {
				line = append(line, f...)
			}
			line = append(line, chunk...)
			frags, fragLen = nil, 0
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			continue
		}
		if err := fn(line, start); err != nil {
			return off, stats, err
		}
	}
}

// ReadFile opens path and runs Read from offset start.
func ReadFile(path string, start int64, fn func(line []byte, off int64) error) (int64, Stats, error) {
	f, err := agentfs.Open(path)
	if err != nil {
		return start, Stats{}, err
	}
	defer f.Close()
	if start > 0 {
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return start, Stats{}, err
		}
	}
	return Read(f, start, fn)
}

// Tail returns the complete lines in the last `window` bytes of path (the first,
// possibly partial line of the window is dropped unless the window starts at 0),
// with their offsets. atStart reports whether the window reached offset 0.
func Tail(path string, window int64) (lines [][]byte, offs []int64, atStart bool, err error) {
	return TailFrom(path, 0, window)
}

// TailFrom is Tail over the part of path from offset from on (a line start, such
// as where a run began appending to a shared log): the window never reaches
// before from, and a window that starts at from keeps its first line.
func TailFrom(path string, from, window int64) (lines [][]byte, offs []int64, atStart bool, err error) {
	f, err := agentfs.Open(path)
	if err != nil {
		return nil, nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, false, err
	}
	start := max(st.Size()-window, from, 0)
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, nil, false, err
	}
	skipFirst := start > from
	_, _, err = Read(io.LimitReader(f, st.Size()-start), start, func(line []byte, off int64) error {
		if skipFirst {
			skipFirst = false
			// The window may begin exactly at a line start; check the byte before.
			if !StartsLine(f, off) {
				return nil
			}
		}
		lines = append(lines, append([]byte(nil), line...))
		offs = append(offs, off)
		return nil
	})
	return lines, offs, start == 0, err
}

// StartsLine reports whether offset off of f is the start of a line: a window
// that begins elsewhere begins inside a line, which is dropped as partial.
func StartsLine(f io.ReaderAt, off int64) bool {
	if off == 0 {
		return true
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], off-1); err != nil {
		return false
	}
	return b[0] == '\n'
}
