package jsonl

import (
	"bytes"
	"io"
)

// Buffer is Read's memory, kept by one goroutine from file to file: a cold
// parse index reads thousands of transcripts, and a fresh read buffer per file
// (plus a copy of every line longer than it) costs more than the reading on a
// machine where first-touched memory is dear. The zero Buffer is ready to use;
// it is not safe for concurrent use.
type Buffer struct {
	b []byte
}

const (
	bufferStart = 256 << 10 // a Buffer's first size, as Read's
	bufferKeep  = 4 << 20   // a Buffer grown past this for one long line is let go after it
)

// Read is jsonl.Read through b: the same lines, offsets, stats and errors, with
// lines handed to fn straight from b's memory (valid until fn returns). A line
// longer than the buffer grows it (up to MaxLine) instead of being copied in
// pieces.
func (b *Buffer) Read(r io.Reader, base int64, fn func(line []byte, off int64) error) (next int64, stats Stats, err error) {
	if len(b.b) == 0 {
		b.b = make([]byte, bufferStart)
	}
	defer func() {
		if len(b.b) > bufferKeep {
			b.b = nil
		}
	}()
	buf := b.b
	n := 0            // buf[:n] holds bytes read and not yet consumed
	off := base       // offset of buf[0]
	lineStart := base // start of the line being assembled (or skipped)
	skipping := false // the current line passed MaxLine: its bytes are dropped
	empty := 0        // reads in a row that returned nothing
	for {
		if n == len(buf) {
			// No line end in a full buffer.
			if len(buf) >= MaxLine {
				skipping = true
				off += int64(n)
				n = 0
			} else {
				grown := make([]byte, min(2*len(buf), MaxLine))
				copy(grown, buf[:n])
				buf, b.b = grown, grown
			}
		}
		m, rerr := r.Read(buf[n:])
		if m < 0 || m > len(buf)-n {
			return lineStart, stats, io.ErrShortBuffer
		}
		if m == 0 && rerr == nil {
			if empty++; empty >= 100 {
				return lineStart, stats, io.ErrNoProgress
			}
			continue
		}
		empty = 0
		scanFrom := n
		n += m
		pos := 0 // start of the unconsumed bytes in buf
		for {
			i := bytes.IndexByte(buf[scanFrom:n], '\n')
			if i < 0 {
				break
			}
			end := scanFrom + i + 1 // past the '\n'
			start := lineStart
			lineStart = off + int64(end)
			line := buf[pos:end]
			pos, scanFrom = end, end
			if skipping || lineStart-start > MaxLine {
				stats.tooLong(start)
				skipping = false
				continue
			}
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				continue
			}
			if err := fn(line, start); err != nil {
				return lineStart, stats, err
			}
		}
		if skipping {
			pos = n // the too-long line's bytes so far: dropped
		}
		if pos > 0 {
			n = copy(buf, buf[pos:n])
			off += int64(pos)
		}
		if rerr != nil {
			if skipping || n >= MaxLine {
				// As Read: a line too long already is skipped, and the
				// resume point is past what was read of it.
				stats.tooLong(lineStart)
				lineStart = off + int64(n)
			}
			if rerr == io.EOF {
				return lineStart, stats, nil // a partial last line is not ours yet
			}
			return lineStart, stats, rerr
		}
	}
}
