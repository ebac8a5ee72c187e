package main

import (
	"io"

	"github.com/agentctl/agentctl/discover"
)

// writeJSONArray prints items as an indented JSON array one element at a time,
// so a listing of 10,000 sessions never holds the whole document in memory.
func writeJSONArray[T any](w io.Writer, items []T) error {
	if ss, ok := any(items).([]discover.Session); ok {
		return writeSessionsJSON(w, len(ss), func(i int) *discover.Session { return &ss[i] }, nil)
	}
	var e elemEncoder
	return writeJSONElems(w, len(items), func(i int) ([]byte, error) { return e.encode(items[i]) })
}
