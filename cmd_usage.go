package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
)

func usageCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:  "usage",
		Usage: "token and cost totals over every agent session on this machine",
		Description: `Sums tokens and cost over every session the adapters know (launched by agentctl
or not), grouped by --by: day, week, month, adapter, model, cwd, group (comma
list, e.g. --by day,model). The numbers are the sums of what ` + "`list -a --json`" + ` shows
for the same window — the same read path — except that history a fork copied
from its parent is counted once, in the parent.

The window is --since (default: 7d, as for list -a) and --until, each a duration
back from now (30d, 12h) or a date (2026-11-01). A session falls in the window
by its last activity, as in list; its tokens then fall in days, weeks and months
by its records' own timestamps (local time; TZ names the zone), so a session
that ran over midnight counts on both days (tokens of records without a
timestamp count on the day of the session's last activity). Its cost is split over
them in proportion to its tokens (output weighted 5x input, cache reads 0.1x,
cache writes 1.25x, the shape of the price tables). Costs marked ~ are estimates
from the price table; the others are what the agent itself reported. Sessions
with tokens but no known price add no cost: the UNPRICED column counts them
(agentctl doctor lists their models).

Examples:
  agentctl usage
  agentctl usage --by day,model --since 30d
  agentctl usage --by adapter --since 2026-11-01 --until 2026-11-15 --json
  agentctl usage --adapter codex --by week`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "by", Usage: "group by `KEY[,…]`: " + strings.Join(usageKeys, ", ") + " (repeatable) (default: adapter)"},
			&cli.StringFlag{Name: "since", Usage: "from `WHEN`: a duration back from now (30m, 2h, 7d, 2w) or a date (2026-11-01, 2026-11-01T15:04) (default: 7d)"},
			&cli.StringFlag{Name: "until", Usage: "up to `WHEN` (a duration back from now or a date; a date alone includes that day) (default: now)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object {since, until, by, rows, total}"},
			&cli.BoolFlag{Name: "wide", Aliases: []string{"no-trunc"}, Usage: "on a terminal too, every column in full (no fitting to its width)"},
		},
		Action: func(c *cli.Context) error {
			o, err := usageOptionsFrom(c, s.now())
			if err != nil {
				return err
			}
			return runUsage(c.Context, s, o)
		},
	}
}

// usageOptions are usage's flags and arguments.
type usageOptions struct {
	globalOptions
	Args         []string // none are accepted
	By           []string
	Since, Until string
	JSON         bool
	Wide         bool // --wide: no fitting to the terminal's width
}

// usageRow is one group of `usage --json`.
type usageRow struct {
	Key         map[string]string `json:"key"`
	Sessions    int               `json:"sessions"`
	Tokens      discover.Tokens   `json:"tokens"`
	TokensTotal int64             `json:"tokens_total"`
	CostUSD     float64           `json:"cost_usd"`
	// CostSource: agent (every cost the agent's own), estimate (every one from
	// the price table), mixed, or "" when no session had a cost.
	CostSource string `json:"cost_source,omitempty"`
	// Unpriced counts sessions with tokens and no cost (no price for the model).
	Unpriced int `json:"unpriced_sessions"`
}

type usageOut struct {
	Since time.Time  `json:"since"`
	Until time.Time  `json:"until"`
	By    []string   `json:"by"`
	Rows  []usageRow `json:"rows"`
	Total usageRow   `json:"total"`
}

// usageOptionsFrom reads usage's command line and checks it against the
// clock's now, before any I/O.
func usageOptionsFrom(c *cli.Context, now time.Time) (usageOptions, error) {
	o := usageOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(),
		By: c.StringSlice("by"), Since: c.String("since"), Until: c.String("until"), JSON: c.Bool("json"), Wide: c.Bool("wide")}
	_, _, _, err := o.check(now)
	return o, err
}

// check checks the options and returns the grouping keys and the window. It
// reads nothing.
func (o usageOptions) check(now time.Time) (by []string, since, until time.Time, err error) {
	if len(o.Args) > 0 {
		return nil, since, until, usageErrorf("usage takes no arguments (got %q); see agentctl usage --help", o.Args[0])
	}
	for _, v := range o.By {
		for _, k := range strings.Split(v, ",") {
			k = strings.TrimSpace(k)
			if !slices.Contains(usageKeys, k) {
				return nil, since, until, usageErrorf("--by %q: want one or more of %s, comma-separated", k, strings.Join(usageKeys, ", "))
			}
			if !slices.Contains(by, k) {
				by = append(by, k)
			}
		}
	}
	if len(by) == 0 {
		by = []string{"adapter"}
	}
	since, until = now.Add(-7*24*time.Hour), now
	if o.Since != "" {
		if since, err = whenFlag("since", o.Since, now, false); err != nil {
			return nil, since, until, err
		}
	}
	if o.Until != "" {
		if until, err = whenFlag("until", o.Until, now, true); err != nil {
			return nil, since, until, err
		}
	}
	if !until.After(since) {
		return nil, since, until, usageErrorf("--until %s is not after --since %s", until.Format(time.RFC3339), since.Format(time.RFC3339))
	}
	return by, since, until, nil
}

// runUsage sums and prints. It checks the options again, so that a caller
// that builds them in code gets the same usage errors before any I/O.
func runUsage(ctx context.Context, s *host, o usageOptions) error {
	now := s.now()
	by, since, until, err := o.check(now)
	if err != nil {
		return err
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	// The listing of `list -a --since`: the same fan-out, the same window.
	timed := slices.ContainsFunc(by, func(k string) bool { return k == "day" || k == "week" || k == "month" })
	e.slots = timed
	_, ls := e.listing(ctx)
	// Sessions are selected by their activity inside the window, never by their
	// status: one alive (or unknown) but still since before --since spent
	// nothing in it.
	ls.Keep(func(ss *discover.Session) bool {
		t := ss.LastSeen()
		return t.IsZero() || (!t.Before(since) && !t.After(until))
	})
	out := usageOut{Since: since.UTC(), Until: until.UTC(), By: by, Rows: []usageRow{}}
	out.Total.Key = map[string]string{}
	rows := map[string]*usageRow{}
	var order []string
	loc := usageLocation(s)
	for i := 0; i < ls.Len(); i++ {
		ss := ls.At(i)
		tok, usd := ss.Own()
		parts := []usagePart{{at: ss.LastSeen(), tok: tok, usd: usd}}
		if timed {
			parts = usageParts(ss)
		}
		inSession := map[string]*usageRow{} // this session's share of each row
		for _, p := range parts {
			key := map[string]string{}
			var vals []string
			for _, k := range by {
				v := usageKey(k, ss, p.at, loc)
				key[k] = v
				vals = append(vals, v)
			}
			id := strings.Join(vals, "\x00")
			if rows[id] == nil {
				rows[id] = &usageRow{Key: key}
				order = append(order, id)
			}
			if inSession[id] == nil {
				inSession[id] = &usageRow{}
			}
			inSession[id].Tokens.Add(p.tok)
			inSession[id].CostUSD += p.usd
		}
		for id, sh := range inSession {
			rows[id].add(ss, sh.Tokens, sh.CostUSD)
		}
		out.Total.add(ss, tok, usd)
	}
	sort.Strings(order)
	for _, id := range order {
		rows[id].CostUSD = discover.RoundCost(rows[id].CostUSD) // sums of floats: 0.00056, not 0.0005600000000000001
		out.Rows = append(out.Rows, *rows[id])
	}
	out.Total.CostUSD = discover.RoundCost(out.Total.CostUSD)
	if o.JSON {
		return writeJSON(s.Out, out)
	}
	width := e.s.outWidth
	if o.Wide {
		width = 0
	}
	printUsage(e.s.Out, e.home, width, out)
	return nil
}

// usageLocation is the zone days begin in: TZ as the command sees it (tests
// set it), else the machine's.
func usageLocation(s *host) *time.Location {
	if tz := strings.TrimPrefix(s.getenv("TZ"), ":"); tz != "" {
		if loc, err := time.LoadLocation(tz); err == nil {
			return loc
		}
	}
	return time.Local
}

// usagePart is the share of a session's own tokens and cost spent at one time.
type usagePart struct {
	at  time.Time
	tok discover.Tokens
	usd float64
}

// usageParts spreads a session's own tokens (discover.Session.Own) over its
// slots, the tokens of its records by their timestamps. History a fork copied
// from its parent is the start of its records, so what Own leaves out is taken
// from the earliest slots; tokens no slot holds (records without a timestamp,
// an adapter without slots) count at the session's last activity. The cost is
// split in proportion to costWeight. The parts add up to Own exactly in tokens,
// and to its cost up to rounding.
func usageParts(s *discover.Session) []usagePart {
	own, usd := s.Own()
	slots := s.Slots.Clone()
	excess := slots.Sum()
	excess.Add(neg(own))
	for i := range slots {
		t := &slots[i].Tokens
		for _, c := range [][2]*int64{{&t.Input, &excess.Input}, {&t.Output, &excess.Output},
			{&t.CacheRead, &excess.CacheRead}, {&t.CacheWrite, &excess.CacheWrite}} {
			if n := min(*c[0], *c[1]); n > 0 {
				*c[0] -= n
				*c[1] -= n
			}
		}
	}
	var parts []usagePart
	rest := own
	for _, sl := range slots {
		if sl.Tokens.Zero() {
			continue
		}
		parts = append(parts, usagePart{at: time.Unix(sl.At, 0), tok: sl.Tokens})
		rest.Add(neg(sl.Tokens))
	}
	if !rest.Zero() || len(parts) == 0 {
		parts = append(parts, usagePart{at: s.LastSeen(), tok: rest})
	}
	var total float64
	for _, p := range parts {
		total += costWeight(p.tok)
	}
	for i := range parts {
		switch {
		case total > 0:
			parts[i].usd = usd * costWeight(parts[i].tok) / total
		case i == 0:
			parts[i].usd = usd
		}
	}
	return parts
}

// costWeight is how much tokens cost relative to each other, in the shape every
// built-in price table has: output about 5x input, cache reads 0.1x, cache
// writes 1.25x.
func costWeight(t discover.Tokens) float64 {
	return float64(t.Input) + 5*float64(t.Output) + 0.1*float64(t.CacheRead) + 1.25*float64(t.CacheWrite)
}

func neg(t discover.Tokens) discover.Tokens {
	return discover.Tokens{Input: -t.Input, Output: -t.Output, CacheRead: -t.CacheRead, CacheWrite: -t.CacheWrite}
}

// usageKey is the value of key k for a session's part at time t.
func usageKey(k string, s *discover.Session, t time.Time, loc *time.Location) string {
	if t.IsZero() && (k == "day" || k == "week" || k == "month") {
		return "unknown"
	}
	t = t.In(loc)
	switch k {
	case "day":
		return t.Format("2006-01-02")
	case "week":
		y, w := t.ISOWeek()
		return fmt.Sprintf("%d-W%02d", y, w)
	case "month":
		return t.Format("2006-01")
	case "adapter":
		return s.Adapter
	case "model":
		return orDash(s.Model)
	case "cwd":
		return orDash(s.Cwd)
	case "group":
		return orDash(s.Group)
	}
	return ""
}

// add counts one session's tokens t and cost usd in r: its own (discover.Session.Own:
// without the history a fork copied from its parent), or the part of them that
// falls in r's day, week or month.
func (r *usageRow) add(s *discover.Session, t discover.Tokens, usd float64) {
	r.Sessions++
	r.Tokens.Add(t)
	r.TokensTotal = discover.SatAdd(r.TokensTotal, discover.SatAdd(discover.SatAdd(t.Input, t.Output), discover.SatAdd(t.CacheRead, t.CacheWrite)))
	if s.CostUSD == nil {
		if !t.Zero() {
			r.Unpriced++
		}
		return
	}
	r.CostUSD += usd
	src := s.CostSource
	if src != "estimate" {
		src = "agent"
	}
	switch r.CostSource {
	case "":
		r.CostSource = src
	case src:
	default:
		r.CostSource = "mixed"
	}
}

func (r usageRow) cost() string {
	if r.CostSource == "" {
		return "-"
	}
	prefix := ""
	if r.CostSource != "agent" {
		prefix = "~" // an estimate, in whole or in part
	}
	return prefix + money(r.CostUSD)
}

// printUsage prints the table of usage (cwd keys shortened under home),
// fitted to width when it is not 0 (a terminal): long keys shorten, then
// UNPRICED, CACHE WRITE, CACHE READ, SESSIONS, INPUT and OUTPUT go, in that
// order; the keys, TOTAL and COST stay.
func printUsage(w io.Writer, home string, width int, out usageOut) {
	if len(out.Rows) == 0 {
		printHuman(w, "No sessions between %s and %s.\n", out.Since.Local().Format(time.RFC3339), out.Until.Local().Format(time.RFC3339))
		return
	}
	var t table
	var head []string
	for _, k := range out.By {
		head = append(head, strings.ToUpper(k))
	}
	head = append(head, "SESSIONS", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "TOTAL", "COST", "UNPRICED")
	t.add(head...)
	var fit []colFit
	for _, k := range out.By {
		fit = append(fit, colFit{min: 10, soft: 16, keepEnd: k == "cwd"})
	}
	t.fitTo(width, append(fit, colFit{drop: 4}, colFit{drop: 5}, colFit{drop: 6}, colFit{drop: 3},
		colFit{drop: 2}, colFit{}, colFit{}, colFit{drop: 1})...)
	estimated := false
	row := func(keys []string, r usageRow) {
		n := func(v int64) string { return strconv.FormatInt(v, 10) }
		cost := r.cost()
		estimated = estimated || strings.HasPrefix(cost, "~")
		t.add(append(keys, strconv.Itoa(r.Sessions), n(r.Tokens.Input), n(r.Tokens.Output), n(r.Tokens.CacheRead),
			n(r.Tokens.CacheWrite), n(r.TokensTotal), cost, strconv.Itoa(r.Unpriced))...)
	}
	for _, r := range out.Rows {
		var keys []string
		for _, k := range out.By {
			v := r.Key[k]
			if k == "cwd" {
				v = shortHome(v, home)
			}
			keys = append(keys, v)
		}
		row(keys, r)
	}
	keys := make([]string, len(out.By))
	keys[0] = "TOTAL"
	row(keys, out.Total)
	t.write(w, nil)
	if estimated {
		fmt.Fprintln(w, "~ marks costs estimated from the price table (in whole or in part); the others are the agents' own.")
	}
}
