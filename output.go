package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch/worktree"
)

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeSessionsJSON prints n sessions, the i-th at(i) (used only until the next
// call, as Listing.View's), as an indented JSON array one element at a time, so
// a listing of 10,000 sessions never holds the whole document in memory. They take appendSessionJSON's path, which prints the same
// bytes as encoding/json without reflection.
func writeSessionsJSON(w io.Writer, n int, at func(int) *discover.Session, warnf func(string)) error {
	var e elemEncoder
	var buf []byte
	return writeJSONElems(w, n, func(i int) ([]byte, error) {
		s := at(i)
		if needsScrub(s) {
			c := *s
			dropped := scrubSession(&c)
			if len(dropped) > 0 {
				for _, m := range scrubWarnings(s, dropped) {
					if warnf != nil {
						warnf(m)
					}
				}
				s = &c
			}
		}
		var ok bool
		if buf, ok = appendSessionJSON(buf[:0], s); ok {
			return buf, nil
		}
		b, err := e.encode(s)
		if err != nil { // never abort the stream: the session without the values JSON refuses
			c := *s
			for _, m := range scrubWarnings(s, scrubSession(&c)) {
				if warnf != nil {
					warnf(m)
				}
			}
			if b, err = e.encode(&c); err != nil {
				c.Extra = nil
				if warnf != nil {
					warnf(fmt.Sprintf("%s session %s: extra: %v; left out", s.Adapter, s.ID, err))
				}
				return e.encode(&c)
			}
		}
		return b, nil
	})
}

// writeJSONElems prints an array of n elements; elem(i) returns element i as
// encoded at depth 1, without the leading indent and the trailing newline, in a
// buffer that is only read until the next call.
func writeJSONElems(w io.Writer, n int, elem func(i int) ([]byte, error)) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if n == 0 {
		bw.WriteString("[]\n")
		return bw.Flush()
	}
	bw.WriteString("[\n")
	for i := 0; i < n; i++ {
		b, err := elem(i)
		if err != nil {
			return err
		}
		bw.WriteString("  ")
		bw.Write(b)
		if i < n-1 {
			bw.WriteString(",\n")
		} else {
			bw.WriteString("\n")
		}
	}
	bw.WriteString("]\n")
	return bw.Flush()
}

// elemEncoder encodes array elements with encoding/json.
type elemEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func (e *elemEncoder) encode(v any) ([]byte, error) {
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.buf)
		e.enc.SetIndent("  ", "  ")
		e.enc.SetEscapeHTML(false)
	}
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(e.buf.Bytes(), "\n"), nil
}

// age renders a duration as 5s, 5m, 3h, 2d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// shortHome replaces a leading $HOME/ (only a real path prefix) with ~/.
func shortHome(p, home string) string {
	if home == "" || home == "/" {
		return p
	}
	home = strings.TrimSuffix(home, "/")
	if p == home {
		return "~"
	}
	if strings.HasPrefix(p, home+"/") {
		return "~/" + p[len(home)+1:]
	}
	return p
}

func costString(s discover.Session) string {
	if s.CostUSD == nil {
		return "-"
	}
	prefix := ""
	if s.CostSource == "estimate" {
		prefix = "~"
	}
	return fmt.Sprintf("%s$%.2f", prefix, *s.CostUSD)
}

// table writes aligned columns; widths are measured in runes.
type table struct {
	rows [][]string
}

func (t *table) add(cols ...string) { t.rows = append(t.rows, cols) }

func (t *table) write(w io.Writer, colorize func(row, col int, s string) string) {
	if len(t.rows) == 0 {
		return
	}
	for _, r := range t.rows {
		for i, c := range r {
			r[i] = termSafe(c)
		}
	}
	widths := make([]int, len(t.rows[0]))
	for _, r := range t.rows {
		for i, c := range r {
			if n := utf8.RuneCountInString(c); n > widths[i] {
				widths[i] = n
			}
		}
	}
	for ri, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			cell := c
			if colorize != nil {
				cell = colorize(ri, i, c)
			}
			b.WriteString(cell)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

const (
	ansiReset  = "\x1b[0m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiRed    = "\x1b[31m"
	ansiDim    = "\x1b[2m"
	ansiCyan   = "\x1b[36m"
)

func statusColor(status string) string {
	switch status {
	case discover.StatusRunning:
		return ansiGreen
	case discover.StatusWaiting:
		return ansiYellow
	case discover.StatusIdle:
		return ansiCyan
	case discover.StatusFailed:
		return ansiRed
	case discover.StatusUnknown:
		return ansiYellow
	}
	return ansiDim
}

// jsonErrorOut is what a --json command prints on stdout when it fails before
// printing anything there, so a script reading stdout always gets a JSON answer
// (the same message still goes to stderr).
type jsonErrorOut struct {
	Error     string   `json:"error"`
	ExitCode  int      `json:"exit_code"`
	Conflicts []string `json:"conflicts,omitempty"` // accept: the paths that conflict
}

// jsonErrors makes every command of cmds (subcommands too) that was asked for
// --json print a jsonErrorOut when it fails with an error and wrote nothing on
// stdout; a command that printed its own JSON (e.g. wait's timeout) keeps it.
func jsonErrors(s *host, cmds []*cli.Command) {
	for _, c := range cmds {
		jsonErrors(s, c.Subcommands)
		act := c.Action
		if act == nil {
			continue
		}
		c.Action = func(c *cli.Context) error {
			if !c.Bool("json") {
				return act(c)
			}
			out := s.Out
			cw := &countingWriter{w: out}
			s.Out = cw
			err := act(c)
			s.Out = out
			if err != nil && cw.n == 0 {
				if v, ok := jsonErrorOf(err); ok {
					_ = writeJSON(out, v)
				}
			}
			return err
		}
	}
}

// jsonErrorOf is err as a jsonErrorOut, with the exit code run gives it; false
// for an exit code without a message (launch --wait passing the agent's own).
func jsonErrorOf(err error) (jsonErrorOut, bool) {
	v := jsonErrorOut{Error: err.Error(), ExitCode: exitFailed}
	var ee *exitError
	var ce cli.ExitCoder
	switch {
	case errors.As(err, &ee):
		if ee.err == nil || ee.err.Error() == "" {
			return v, false
		}
		v.Error, v.ExitCode = ee.err.Error(), ee.code
	case errors.As(err, &ce):
		v.ExitCode = ce.ExitCode()
	}
	var conflict *worktree.ConflictError
	if errors.As(err, &conflict) {
		v.Conflicts = conflict.Paths
	}
	return v, true
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
