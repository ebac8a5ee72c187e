package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/metrics"
	"github.com/agentctl/agentctl/remote/fleet"
)

// metricsOptions is everything `metrics` takes from its command line.
type metricsOptions struct {
	textfile string        // "" prints to stdout
	since    time.Duration // window for ended sessions
	until    time.Time     // --until: sessions last active later are left out; zero: now
}

func metricsCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:  "metrics",
		Usage: "print Prometheus metrics about sessions, launches, locks and adapters",
		Description: `Prints the Prometheus text exposition of what one discovery sees now — sessions
by adapter and status, their tokens and cost over the window (--since, default
7d, as list -a), live locks and fuses, each adapter's up state and discovery
time — plus launches by outcome and their run time, derived from the events
journal. There is no daemon to scrape: run it from cron into node_exporter's
textfile collector; --textfile replaces the file atomically.

Examples:
  agentctl metrics
  agentctl metrics --since 30d --adapter claude-code
  agentctl metrics --textfile /var/lib/node_exporter/textfile/agentctl.prom

Example crontab line:
  */5 * * * * agentctl metrics --textfile /var/lib/node_exporter/textfile/agentctl.prom`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "textfile", Usage: "write to `PATH` (temp file + rename in its directory) instead of stdout"},
			&cli.StringFlag{Name: "since", Usage: "window for ended sessions' counts, tokens and cost, from `WHEN`: a duration back from now (2h, 30d, 2w) or a date (2026-11-01) (default: 7d)"},
			&cli.StringFlag{Name: "until", Usage: "end the window at `WHEN` (same forms as --since; a date alone includes that day): sessions last active later are left out, as in usage (default: now)"},
		},
		Action: func(c *cli.Context) error {
			o, err := metricsOptionsFrom(c, s.now())
			if err != nil {
				return err
			}
			e, err := setup(s, globalsFrom(c))
			if err != nil {
				return err
			}
			return runMetrics(c.Context, e, o)
		},
	}
}

func metricsOptionsFrom(c *cli.Context, now time.Time) (metricsOptions, error) {
	if c.NArg() > 0 {
		return metricsOptions{}, usageErrorf("metrics takes no arguments (got %q); to write a file use --textfile PATH", c.Args().First())
	}
	o := metricsOptions{textfile: c.String("textfile"), since: 7 * 24 * time.Hour}
	if v := c.String("since"); v != "" {
		d, err := sinceWindow(v, now)
		if err != nil {
			return o, err
		}
		o.since = d
	}
	if v := c.String("until"); v != "" {
		t, err := untilFlag(v, now.Add(-o.since), now)
		if err != nil {
			return o, err
		}
		o.until = t
	}
	if c.IsSet("textfile") && o.textfile == "" {
		return o, usageErrorf("--textfile: want a file path such as /var/lib/node_exporter/textfile/agentctl.prom")
	}
	return o, nil
}

// runMetrics gathers the inputs with the same fan-out `list` runs and prints or
// writes the exposition.
func runMetrics(ctx context.Context, e *cmdEnv, o metricsOptions) error {
	in, err := (&metricsGatherer{e: e}).input(ctx, o.since, o.until)
	if err != nil {
		return err
	}
	reg, err := metrics.Registry(in)
	if err != nil {
		return &exitError{exitFailed, fmt.Errorf("build metrics: %w", err)}
	}
	if o.textfile == "" {
		return metrics.Write(e.s.Out, reg)
	}
	path, err := filepath.Abs(e.expand(o.textfile))
	if err != nil {
		return usageErrorf("--textfile %s: %v", o.textfile, err)
	}
	if err := metrics.WriteTextfile(path, reg); err != nil {
		return &exitError{exitFailed, fmt.Errorf("write %s: %w (the directory must exist and be writable)", path, err)}
	}
	return nil
}

// metricsGatherer does the I/O of metrics: the same fan-out `list` runs, the
// locks and fuses files and the journal's reader, into a metrics.Input.
type metricsGatherer struct{ e *cmdEnv }

func (g *metricsGatherer) input(ctx context.Context, since time.Duration, until time.Time) (metrics.Input, error) {
	e := g.e
	res, ls := e.listing(ctx)
	f := discover.Filter{All: true, Since: since, Until: until, Now: e.s.now()}
	ls.Filter(f)
	in := metrics.Input{Sessions: ls, Up: res.Up, Elapsed: res.Elapsed, Journal: e.store.ReadEvents}
	for _, n := range agents.Names() {
		if e.only == nil || e.only[n] {
			in.SessionAdapters = append(in.SessionAdapters, n)
		}
	}
	for _, a := range e.adapters {
		in.Adapters = append(in.Adapters, a.Name())
	}
	live, err := locks.List(e.store)
	if err != nil {
		return in, &exitError{exitFailed, fmt.Errorf("%w (see agentctl doctor)", err)}
	}
	in.Locks = map[string]int{}
	for _, l := range live {
		in.Locks[l.Type]++
	}
	if in.Fuses, err = countFuses(e.store); err != nil {
		return in, &exitError{exitFailed, fmt.Errorf("%w (see agentctl doctor)", err)}
	}
	return in, nil
}

// countFuses counts the armed fuses of fuses.json (product.md §6); a fuse that
// is firing right now is no longer waiting to expire.
func countFuses(s *meta.Store) (int, error) {
	fs, err := locks.ReadFuses(s)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range fs {
		if f.State != locks.FuseFiring {
			n++
		}
	}
	return n, nil
}

// metricsAcross is how metrics runs across hosts: the hosts' expositions
// merged, every sample with a host label.
func metricsAcross(s *host) remoteSpec {
	return same(fleet.Spec{Mode: fleet.Merged,
		Print: func(_ *fleet.Streams, outs []fleet.Answer) (bool, error) { return false, printRemoteMetrics(s, outs) }})
}

// printRemoteMetrics merges the hosts' expositions (metrics.Merge).
func printRemoteMetrics(s *host, outs []fleet.Answer) error {
	in := make([]metrics.Exposition, len(outs))
	for i, h := range outs {
		in[i] = metrics.Exposition{Host: h.Host.Name, Text: h.Out}
	}
	fams, warnings := metrics.Merge(in)
	for _, w := range warnings {
		warn(s, w)
	}
	return fams.Write(s.Out)
}
