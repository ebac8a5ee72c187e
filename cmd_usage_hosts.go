package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/remote/fleet"
)

// usage across hosts (README "Several machines"): each host sums its own
// sessions (its `usage --json`, never its raw sessions) and the totals are
// merged here. --by takes one more key, host, combinable with the others
// (--by host,day); without it rows with the same key are summed over the
// hosts. A host that does not answer is a warning and is named under the
// totals (totals exclude: gpu (connection refused)), never a silent zero.

// usageHostsCommand is usage, able to run across hosts.
// --strict is its own: a host left out of the totals exits 1.
func usageHostsCommand(s *host, a *acrossHosts) *cli.Command {
	cmd := usageCommand(s)
	for _, f := range cmd.Flags {
		if by, ok := f.(*cli.StringSliceFlag); ok && by.Name == "by" {
			by.Usage += "; across hosts (--host, --hosts all) also host"
		}
	}
	cmd.Flags = append(cmd.Flags, &cli.BoolFlag{Name: "strict", Usage: "across hosts: exit 1 when a host is left out of the totals"})
	local := cmd.Action
	cmd.Action = func(c *cli.Context) error {
		if c.Bool("strict") {
			return usageErrorf("usage --strict: only across hosts (with --host or --hosts all)")
		}
		if slices.Contains(splitBy(c.StringSlice("by")), usageHostKey) {
			return usageErrorf("usage --by host: only across hosts (with --host H or --hosts all)")
		}
		return local(c)
	}
	return a.on(cmd, usageAcross(s))
}

// usageHostKey is the --by key only a usage across hosts knows.
const usageHostKey = "host"

func usageAcross(s *host) remoteSpec {
	return func(c *cli.Context) fleet.Spec {
		by := splitBy(c.StringSlice("by"))
		asJSON := c.Bool("json")
		var missing []fleet.Missing
		refuse := ""
		for _, k := range by {
			if k != usageHostKey && !slices.Contains(usageKeys, k) {
				refuse = fmt.Sprintf("--by %q: want one or more of %s, %s, comma-separated", k, usageHostKey, strings.Join(usageKeys, ", "))
			}
		}
		return fleet.Spec{Refuse: refuse, Mode: fleet.Merged, AskJSON: true, Rewrite: usageRemoteFlags,
			Missed: func(m []fleet.Missing) { missing = m },
			Print: func(_ *fleet.Streams, outs []fleet.Answer) (bool, error) {
				m, failed := readUsageAnswers(s, outs, &missing)
				merged := mergeUsage(by, m, missing)
				if asJSON {
					return failed, writeJSON(s.Out, merged)
				}
				printUsageHosts(s.Out, merged)
				return failed, nil
			}}
	}
}

// splitBy is the --by keys, in order, each once (default adapter).
func splitBy(vals []string) []string {
	var by []string
	for _, v := range vals {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" && !slices.Contains(by, k) {
				by = append(by, k)
			}
		}
	}
	if len(by) == 0 {
		by = []string{"adapter"}
	}
	return by
}

// usageRemoteFlags is the command line each host gets: --by without host (a
// --by that held only host goes: the host's total is its row).
func usageRemoteFlags(flags []string) []string {
	var out []string
	for i := 0; i < len(flags); i++ {
		a := flags[i]
		name, val, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "by" {
			out = append(out, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(flags) {
				out = append(out, a)
				continue
			}
			i++
			val = flags[i]
		}
		var keep []string
		for _, k := range strings.Split(val, ",") {
			if k = strings.TrimSpace(k); k != usageHostKey && k != "" {
				keep = append(keep, k)
			}
		}
		if len(keep) > 0 {
			out = append(out, "--by", strings.Join(keep, ","))
		}
	}
	return out
}

// hostUsage is one host's answer.
type hostUsage struct {
	host string
	out  usageOut
}

// readUsageAnswers decodes each host's usage --json; a host whose answer is
// not one (an error there, another version) joins the missing.
func readUsageAnswers(s *host, outs []fleet.Answer, missing *[]fleet.Missing) (hs []hostUsage, failed bool) {
	for _, a := range outs {
		var u usageOut
		switch err := json.Unmarshal(a.Out, &u); {
		case a.Exit != 0:
			*missing = append(*missing, fleet.Missing{Host: a.Host.Name, Cause: fmt.Sprintf("exit %d", a.Exit)})
			failed = true
		case err != nil:
			warn(s, fmt.Sprintf("%s: the answer of usage --json is unreadable: %v; is agentctl there the same version?", a.Host.Name, err))
			*missing = append(*missing, fleet.Missing{Host: a.Host.Name, Cause: "unreadable answer"})
			failed = true
		default:
			hs = append(hs, hostUsage{a.Host.Name, u})
		}
	}
	return hs, failed
}

// usageHostRow is one row across hosts: with its host when grouped by host.
type usageHostRow struct {
	Host string `json:"host,omitempty"`
	usageRow
}

type usageExcluded struct {
	Host  string `json:"host"`
	Cause string `json:"cause"`
}

// usageHostsOut is `usage --json` across hosts.
type usageHostsOut struct {
	usageOut
	Rows     []usageHostRow  `json:"rows"`
	Hosts    []string        `json:"hosts"`
	Excluded []usageExcluded `json:"excluded"`
}

// mergeUsage merges the hosts' answers: grouped by host, each host's rows
// (its total when --by is host alone) with the host in their key; else rows of
// the same key summed over the hosts. The total sums the hosts' totals.
func mergeUsage(by []string, hs []hostUsage, missing []fleet.Missing) usageHostsOut {
	out := usageHostsOut{usageOut: usageOut{By: by}, Rows: []usageHostRow{}, Hosts: []string{}, Excluded: []usageExcluded{}}
	out.Total.Key = map[string]string{}
	byHost := slices.Contains(by, usageHostKey)
	rows := map[string]*usageHostRow{}
	var order []string
	for i, h := range hs {
		if i == 0 {
			out.Since, out.Until = h.out.Since, h.out.Until
		}
		out.Hosts = append(out.Hosts, h.host)
		src := h.out.Rows
		if byHost && len(by) == 1 {
			src = []usageRow{h.out.Total}
		}
		for _, r := range src {
			key := map[string]string{}
			var vals []string
			for _, k := range by {
				v := r.Key[k]
				if k == usageHostKey {
					v = h.host
				}
				key[k] = v
				vals = append(vals, v)
			}
			id := strings.Join(vals, "\x00")
			if rows[id] == nil {
				nr := &usageHostRow{usageRow: usageRow{Key: key}}
				if byHost {
					nr.Host = h.host
				}
				rows[id] = nr
				order = append(order, id)
			}
			rows[id].usageRow.sum(r)
		}
		out.Total.sum(h.out.Total)
	}
	sort.Strings(order)
	for _, id := range order {
		out.Rows = append(out.Rows, *rows[id])
	}
	for _, m := range missing {
		out.Excluded = append(out.Excluded, usageExcluded{m.Host, m.Cause})
	}
	return out
}

// sum adds row r (another host's) to u; the first one is copied as it is, so
// that a row of one host is that host's row exactly.
func (u *usageRow) sum(r usageRow) {
	u.Sessions += r.Sessions
	u.Tokens.Add(r.Tokens)
	u.TokensTotal = discover.SatAdd(u.TokensTotal, r.TokensTotal)
	u.CostUSD += r.CostUSD
	u.Unpriced += r.Unpriced
	switch {
	case r.CostSource == "":
	case u.CostSource == "" || u.CostSource == r.CostSource:
		u.CostSource = r.CostSource
	default:
		u.CostSource = "mixed"
	}
}

// printUsageHosts prints the table across hosts and, under it, the hosts the
// totals leave out.
// Their cwds are the hosts' paths: none is shortened under this home.
func printUsageHosts(w io.Writer, out usageHostsOut) {
	u := out.usageOut
	u.Rows = nil
	for _, r := range out.Rows {
		u.Rows = append(u.Rows, r.usageRow)
	}
	printUsage(w, "", 0, u) // the full layout: host rows are not fitted to the terminal
	if len(out.Excluded) > 0 {
		var ex []string
		for _, m := range out.Excluded {
			ex = append(ex, m.Host+" ("+m.Cause+")")
		}
		fmt.Fprintln(w, termSafe("totals exclude: "+strings.Join(ex, ", ")))
	}
}
