package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
)

func waitCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "wait",
		Usage:     "block until sessions have stopped",
		ArgsUsage: "ID...",
		Description: `Waits until every named session has stopped (--any: the first one), printing one
line per session as it ends (--json: one object per line). Polls every 500 ms,
backing off to 2 s. Exit 0 if all ended successfully, 1 if any failed or was
killed, 124 when --timeout passes first. Here --timeout is the wait's limit;
adapters keep their own timeout (AGENTCTL_ADAPTER_TIMEOUT or config).

Examples:
  agentctl wait 75098152
  agentctl wait --any --timeout 30m 75098152 0199a1b2`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "any", Usage: "return when the first session ends"},
			&cli.BoolFlag{Name: "json", Usage: "print one session object per line as each ends"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usageErrorf("wait: want one or more session IDs (see agentctl wait --help)")
			}
			var limit time.Duration
			if v := c.String("timeout"); c.IsSet("timeout") && v != "" {
				d, err := meta.ParseDuration(v)
				if err != nil || d <= 0 {
					return usageErrorf("--timeout %q: want a duration such as 90s, 30m or 2h", v)
				}
				limit = d
			}
			e, err := setup(s, globalsFrom(c))
			if err != nil {
				return err
			}
			if c.IsSet("timeout") {
				e.timeout = adapterTimeout(s, e.config)
			}
			return e.wait(c, c.Args().Slice(), limit)
		},
	}
}

// adapterTimeout is the discovery timeout without --timeout, which wait uses for
// itself.
func adapterTimeout(s *host, cfg *meta.Config) time.Duration {
	for _, v := range []string{s.getenv("AGENTCTL_ADAPTER_TIMEOUT"), cfg.Timeout} {
		if d, err := meta.ParseDuration(v); v != "" && err == nil && d > 0 {
			return d
		}
	}
	return discover.DefaultTimeout
}

type waited struct {
	arg, id, adapter string
	done             bool
}

func (e *cmdEnv) wait(c *cli.Context, args []string, limit time.Duration) error {
	ctx := c.Context
	start := time.Now()
	for _, a := range args {
		if err := discover.CheckID(a); err != nil {
			return &exitError{exitUsage, err}
		}
	}
	res, env := e.discoverAll(ctx)
	var ws []*waited
	seen := map[string]bool{}
	for _, a := range args {
		sess, err := discover.Resolve(res.Sessions, a)
		if err != nil {
			return resolveErr(err)
		}
		key := sess.Adapter + "\x00" + sess.ID
		if seen[key] {
			continue
		}
		seen[key] = true
		ws = append(ws, &waited{arg: a, id: sess.ID, adapter: sess.Adapter})
	}
	allAdapters := e.adapters
	failed, ended := false, 0
	interval := 500 * time.Millisecond
	for {
		byKey := map[string]discover.Session{}
		for _, s := range res.Sessions {
			byKey[s.Adapter+"\x00"+s.ID] = s
		}
		for _, w := range ws {
			if w.done {
				continue
			}
			s, ok := byKey[w.adapter+"\x00"+w.id]
			if !ok || !waitEnded(s, env.Launches) {
				continue
			}
			w.done = true
			ended++
			if !waitSucceeded(s) {
				failed = true
			}
			if err := e.printEnded(s, c.Bool("json")); err != nil {
				return err
			}
		}
		if ended == len(ws) || (c.Bool("any") && ended > 0) {
			break
		}
		if limit > 0 && time.Since(start) >= limit {
			var left []string
			for _, w := range ws {
				if !w.done {
					left = append(left, w.id)
				}
			}
			return &exitError{exitTimeout, fmt.Errorf("timed out after %s; still running: %s", limit, strings.Join(left, " "))}
		}
		sleep := interval
		if limit > 0 {
			sleep = min(sleep, limit-time.Since(start))
		}
		select {
		case <-ctx.Done():
			return &exitError{exitFailed, ctx.Err()}
		case <-time.After(sleep):
		}
		interval = min(interval*3/2, 2*time.Second)
		// Only the adapters of the sessions still awaited are asked again.
		e.adapters = nil
		for _, a := range allAdapters {
			for _, w := range ws {
				if !w.done && a.Name() == agents.ReaderOf(w.adapter) {
					e.adapters = append(e.adapters, a)
					break
				}
			}
		}
		res, env = e.discoverAll(ctx)
	}
	if failed {
		return &exitError{exitFailed, nil}
	}
	return nil
}

// waitEnded: the process is gone and, for a launched session, its end is on
// record (the supervisor or a lazy finaliser wrote the exit code and ended_at;
// until then the outcome is not known yet).
func waitEnded(s discover.Session, recs []meta.Launch) bool {
	if discover.Alive(s.Status) {
		return false
	}
	if s.LaunchID == "" {
		return true
	}
	r := meta.FindLaunch(recs, s.LaunchID)
	return r == nil || r.EndedAt != nil
}

// waitSucceeded: stopped with exit code 0 (or none known), not failed.
func waitSucceeded(s discover.Session) bool {
	return s.Status == discover.StatusStopped && (s.ExitCode == nil || *s.ExitCode == 0)
}

func (e *cmdEnv) printEnded(s discover.Session, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(e.s.Out, string(b))
		return err
	}
	code := "exit unknown"
	if s.ExitCode != nil {
		code = fmt.Sprintf("exit %d", *s.ExitCode)
	}
	detail := ""
	if s.Status == discover.StatusFailed && s.EvidenceDetail != "" {
		detail = ": " + s.EvidenceDetail
	}
	_, err := printHuman(e.s.Out, "%s %s (%s)%s\n", s.ID, s.Status, code, detail)
	return err
}
