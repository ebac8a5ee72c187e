package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
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

// clockAt is a time of day as peek and events show it: 15:04:05 today (in
// the local zone), 2006-01-02 15:04:05 any other day, so an old transcript's
// times are never read as today's.
func clockAt(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
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
	return prefix + money(*s.CostUSD)
}

// money is the one way a cost is shown to people (list, status, usage,
// compare, accept's commit): cents from a cent up ($0.41, $12.30), two
// significant digits below a cent ($0.00056, $0.0035, $0.0007), so a small cost is
// never shown as $0.00; $0.00 is zero.
func money(usd float64) string {
	if usd <= 0 || math.IsNaN(usd) || math.IsInf(usd, 0) {
		return fmt.Sprintf("$%.2f", usd)
	}
	if usd < 0.01 {
		digits := 1 - int(math.Floor(math.Log10(usd)))
		s := strconv.FormatFloat(usd, 'f', digits, 64)
		if v, _ := strconv.ParseFloat(s, 64); v < 0.01 {
			return "$" + strings.TrimRight(s, "0")
		}
	}
	return fmt.Sprintf("$%.2f", usd)
}

// termWidth is the width tables fit on a terminal: $COLUMNS when it is a
// number (as ls and ps read it), else the terminal's own (f, when given); 0
// when stdout is not a terminal, so pipes keep every column in full.
func termWidth(tty bool, f *os.File, getenv func(string) string) int {
	if !tty {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	if f != nil {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

// colFit is how a column gives way when a table must fit a terminal.
type colFit struct {
	min     int  // shortened down to this many runes, with "…" (0: never shortened)
	soft    int  // shortened first only down to this many (0: min), before any column drops
	keepEnd bool // shortened at the start, keeping the end (a path's last elements)
	drop    int  // dropped in this order, 1 first, when shortening is not enough (0: never)
}

// table writes aligned columns; widths are measured in runes.
type table struct {
	rows [][]string
	// width, when > 0, is what the table must fit in (a terminal's columns):
	// the columns of fit shorten, last first, down to their min, then drop by
	// their drop order. 0 (a pipe, --wide) prints every cell in full.
	width int
	fit   []colFit
}

func (t *table) add(cols ...string) { t.rows = append(t.rows, cols) }

// fitTo sets the width the table must fit in and how each column gives way.
func (t *table) fitTo(width int, fit ...colFit) {
	t.width, t.fit = width, fit
}

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
	keep, widths := t.layout(widths)
	last := len(widths) - 1
	for last > 0 && !keep[last] {
		last--
	}
	for ri, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			if !keep[i] {
				continue
			}
			if ri > 0 && utf8.RuneCountInString(c) > widths[i] {
				c = shorten(c, widths[i], t.fit[i].keepEnd)
			} else if ri == 0 && utf8.RuneCountInString(c) > widths[i] {
				c = shorten(c, widths[i], false)
			}
			cell := c
			if colorize != nil {
				cell = colorize(ri, i, c)
			}
			b.WriteString(cell)
			if i < last {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// layout is which columns are shown and how wide, for natural widths: all in
// full without a width to fit; else the fewest drops (in drop order) after
// which shortening to the soft widths fits; failing that, to the mins; or
// everything droppable dropped.
func (t *table) layout(natural []int) (keep []bool, widths []int) {
	keep = make([]bool, len(natural))
	for i := range keep {
		keep[i] = true
	}
	if t.width <= 0 || len(t.fit) != len(natural) {
		return keep, natural
	}
	var order []int
	for i, f := range t.fit {
		if f.drop > 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return t.fit[order[a]].drop < t.fit[order[b]].drop })
	for _, hard := range []bool{false, true} {
		for i := range keep {
			keep[i] = true
		}
		for k := 0; ; k++ {
			widths = t.shrink(natural, keep, hard)
			if tableWidth(widths, keep) <= t.width {
				return keep, widths
			}
			if k == len(order) {
				break
			}
			keep[order[k]] = false
		}
	}
	return keep, widths
}

// shrink shortens the shown columns, the last first, each down to its soft
// width (hard: its min), by no more than the table is too wide.
func (t *table) shrink(natural []int, keep []bool, hard bool) []int {
	w := append([]int(nil), natural...)
	excess := tableWidth(w, keep) - t.width
	for i := len(w) - 1; i >= 0 && excess > 0; i-- {
		floor := t.fit[i].min
		if !hard && t.fit[i].soft > floor {
			floor = t.fit[i].soft
		}
		if !keep[i] || t.fit[i].min == 0 || w[i] <= floor {
			continue
		}
		cut := min(excess, w[i]-floor)
		w[i] -= cut
		excess -= cut
	}
	return w
}

// tableWidth is the printed width of the shown columns, two spaces apart.
func tableWidth(widths []int, keep []bool) int {
	n, cols := 0, 0
	for i, w := range widths {
		if keep[i] {
			n += w
			cols++
		}
	}
	return n + 2*max(cols-1, 0)
}

// shorten cuts s to n runes with an ellipsis: at the end, or at the start
// (keepEnd, for paths: "…/code/api").
func shorten(s string, n int, keepEnd bool) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:n])
	}
	if keepEnd {
		return "…" + string(r[len(r)-n+1:])
	}
	return string(r[:n-1]) + "…"
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
