package strictjson

import (
	"bytes"
	"encoding/binary"
)

// Clean reports whether line (without its newline) has no byte below 0x20 and
// every backslash in it starts one of JSON's escapes (\" \\ \/ \b \f \n \r \t
// \uXXXX). Every string in a clean line is valid wherever it starts: an escape
// cannot straddle a string's end, and a backslash outside a string is invalid
// anyway. A validating scanner can then find a string's end by its quotes
// alone (StringEnd, Scanner.Clean) instead of checking its bytes, which is most of a line's
// cost. Lines agents write are clean; a tab or CR between tokens is valid JSON
// but not clean, and is left to the byte-by-byte path.
func Clean(line []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	const ctl = ones * 0x20
	i := 0
	for ; i+32 <= len(line); i += 32 {
		c := line[i : i+32 : i+32]
		x0 := binary.LittleEndian.Uint64(c[0:])
		x1 := binary.LittleEndian.Uint64(c[8:])
		x2 := binary.LittleEndian.Uint64(c[16:])
		x3 := binary.LittleEndian.Uint64(c[24:])
		// A byte below 0x20 sets its high bit in x-ctl and has it clear in
		// x; a borrow can only flag bytes above a true one, so zero means
		// there is none.
		if ((x0-ctl)&^x0|(x1-ctl)&^x1|(x2-ctl)&^x2|(x3-ctl)&^x3)&highs != 0 {
			return false
		}
	}
	for _, c := range line[i:] {
		if c < 0x20 {
			return false
		}
	}
	for i = 0; ; {
		j := bytes.IndexByte(line[i:], '\\')
		if j < 0 {
			return true
		}
		i += j
		if i+1 >= len(line) {
			return false
		}
		switch line[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(line) {
				return false
			}
			for _, h := range line[i+2 : i+6] {
				if !isHexDigit(h) {
					return false
				}
			}
			i += 6
		default:
			return false
		}
	}
}

// StringEnd returns the index just past the string at b[i] == '"' found by
// its quotes alone (the first quote not preceded by an odd run of
// backslashes), or -1 when it does not end in b. It checks nothing else: the
// string is valid only when b is Clean.
func StringEnd(b []byte, i int) int {
	for i++; ; {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		q += i
		k := q - 1 // b[i-1] is a quote, which stops the count
		for b[k] == '\\' {
			k--
		}
		if (q-k)%2 == 1 {
			return q + 1
		}
		i = q + 1
	}
}
