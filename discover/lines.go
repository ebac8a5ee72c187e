package discover

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxLine is the longest JSONL line agentctl parses; longer lines are skipped and
// counted. Agents write single lines of many megabytes (tool results, attachments),
// so bufio.Scanner's 64 KiB default is far too small.
const MaxLine = 64 << 20

// LineStats counts what a line reader skipped.
type LineStats struct {
	TooLong int
}

// ReadLines calls fn for every complete ('\n'-terminated) line of r, with the byte
// offset at which the line starts (base + position in r). A final line without '\n'
// is still being written and is NOT passed to fn. It returns the offset just past
// the last complete line, which is where an incremental reader resumes.
// Lines longer than MaxLine are skipped (counted in stats) without being buffered.
func ReadLines(r io.Reader, base int64, fn func(line []byte, off int64) error) (next int64, stats LineStats, err error) {
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
		if rerr == io.EOF {
			return lineStart, stats, nil // a partial last line is not ours yet
		}
		if rerr != nil {
			return lineStart, stats, rerr
		}
		start := lineStart
		lineStart = off
		if tooLong || fragLen+len(chunk) > MaxLine {
			stats.TooLong++
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

// ReadFileLines opens path and runs ReadLines from offset start.
func ReadFileLines(path string, start int64, fn func(line []byte, off int64) error) (int64, LineStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return start, LineStats{}, err
	}
	defer f.Close()
	if start > 0 {
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return start, LineStats{}, err
		}
	}
	return ReadLines(f, start, fn)
}

// TailLines returns the complete lines in the last `window` bytes of path (the
// first, possibly partial line of the window is dropped unless the window starts at
// 0), with their offsets. atStart reports whether the window reached offset 0.
func TailLines(path string, window int64) (lines [][]byte, offs []int64, atStart bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, false, err
	}
	start := st.Size() - window
	if start < 0 {
		start = 0
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, nil, false, err
	}
	skipFirst := start > 0
	_, _, err = ReadLines(io.LimitReader(f, st.Size()-start), start, func(line []byte, off int64) error {
		if skipFirst {
			skipFirst = false
			// The window may begin exactly at a line start; check the byte before.
			if !startsLine(f, off) {
				return nil
			}
		}
		lines = append(lines, append([]byte(nil), line...))
		offs = append(offs, off)
		return nil
	})
	return lines, offs, start == 0, err
}

func startsLine(f io.ReaderAt, off int64) bool {
	if off == 0 {
		return true
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], off-1); err != nil {
		return false
	}
	return b[0] == '\n'
}

// ErrNoSession is returned by Peek when a session has nothing to show yet.
var ErrNoSession = errors.New("no messages yet")

var ansiRE = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// Clean strips ANSI escapes and C0 control characters (except \n and \t) and
// replaces invalid UTF-8, so agent text cannot drive the user's terminal.
func Clean(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = ansiRE.ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// OneLine collapses whitespace and cuts s to max runes with an ellipsis.
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(Clean(s)), " ")
	if max > 0 && utf8.RuneCountInString(s) > max {
		r := []rune(s)
		return string(r[:max-1]) + "…"
	}
	return s
}

// Truncate cuts s to max runes (no whitespace changes).
func Truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max])
}

// Errorf wraps an adapter error with the path it concerns.
func Errorf(path string, err error) error { return fmt.Errorf("%s: %w", path, err) }
