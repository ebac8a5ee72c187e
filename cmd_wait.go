package main

import (
	"context"
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
		Usage:     "block until sessions have stopped, or reach a status",
		ArgsUsage: "ID...",
		Description: `Waits until every named session has stopped (--any: the first one), printing one
line per session as it ends (--json: one object per line, with "reached"). Polls
every 500 ms, backing off to 2 s while waiting for sessions to end.

--until STATUS[,STATUS…] waits for any of these instead (any agent, launched or
not): done (the session ended: stopped or failed), idle (its turn is over, the
process lives on), waiting (it asks the user: a permission or approval prompt, a
question), running, stopped, failed, blocked (blocked_reason set: the latest
turn failed on quota, auth or api-error), or any-change (its status differs from the
one seen first). A live status is polled every 500 ms without backing off. A run launched with
--keep-open never ends on its own: done is reached when it is idle (exit 1 if
that turn failed on the provider).

Exit codes: 0 every session reached a wanted status (with done: and ended
successfully); 1 a session failed or was killed while done was wanted, or ended
before reaching a wanted status (its line says "never reached STATUS"); 124 when
--timeout passes first (the sessions still short of it are named with the
status each was last seen in: "still unknown: ID"). Here --timeout is the wait's limit; adapters keep
their own timeout (AGENTCTL_ADAPTER_TIMEOUT or config).

Examples:
  agentctl wait 75098152
  agentctl wait --any --timeout 30m 75098152 0199a1b2
  agentctl wait --until waiting,done --timeout 10m 01a1faeb
  agentctl wait --until any-change --json 75098152`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "any", Usage: "return when the first session ends (or reaches --until)"},
			&cli.BoolFlag{Name: "json", Usage: "print one session object per line as each ends or reaches --until"},
			&cli.StringFlag{Name: "until", Usage: "wait for `STATUS[,…]`: done, idle, waiting, running, stopped, failed, blocked, any-change (default: done)"},
		},
		Action: func(c *cli.Context) error {
			o, err := waitOptionsFrom(c)
			if err != nil {
				return err
			}
			return runWait(c.Context, s, o)
		},
	}
}

// waitOptions are wait's flags and arguments. Here --timeout (LimitSet, the
// value in globalOptions.Timeout) is the wait's own limit, not the adapters'.
type waitOptions struct {
	globalOptions
	Args      []string // session IDs
	Any, JSON bool
	Until     string
	LimitSet  bool
}

func waitOptionsFrom(c *cli.Context) (waitOptions, error) {
	o := waitOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(),
		Any: c.Bool("any"), JSON: c.Bool("json"), Until: c.String("until"), LimitSet: c.IsSet("timeout")}
	_, _, err := o.check()
	return o, err
}

// check is every usage check of wait's options, returning the wait's limit
// (0: none) and the --until states; it reads nothing.
func (o waitOptions) check() (limit time.Duration, until map[string]bool, err error) {
	if len(o.Args) == 0 {
		return 0, nil, usageErrorf("wait: want one or more session IDs (see agentctl wait --help)")
	}
	if v := o.Timeout; o.LimitSet && v != "" {
		d, err := meta.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, nil, usageErrorf("--timeout %q: want a duration such as 90s, 30m or 2h", v)
		}
		limit = d
	}
	until, err = parseUntil(o.Until)
	return limit, until, err
}

// runWait waits. It checks the options again (check, no I/O), so in-process
// callers that build them by hand get the same usage errors.
func runWait(ctx context.Context, s *host, o waitOptions) error {
	limit, until, err := o.check()
	if err != nil {
		return err
	}
	e, err := setup(s, o.globalOptions)
	if err != nil {
		return err
	}
	if o.LimitSet {
		e.timeout = adapterTimeout(s, e.config)
	}
	return waitSessions(ctx, e, o, limit, until)
}

// untilStates are the values --until takes.
var untilStates = []string{"done", discover.StatusIdle, discover.StatusWaiting, discover.StatusRunning,
	discover.StatusStopped, discover.StatusFailed, "blocked", "any-change"}

// parseUntil reads --until; empty means done (wait for the sessions to end).
func parseUntil(v string) (map[string]bool, error) {
	if strings.TrimSpace(v) == "" {
		return map[string]bool{"done": true}, nil
	}
	return parseStates("--until", v, untilStates)
}

// reached is the --until state s is in, "" if none: a live status named in want,
// any-change once the status (or what it waits on) differs from first, done or
// the exact end status once the session has ended.
func reached(want map[string]bool, s discover.Session, first string, ended bool) string {
	if discover.Alive(s.Status) && want[s.Status] {
		return s.Status
	}
	if want["blocked"] && s.BlockedReason != "" {
		return "blocked"
	}
	if want["any-change"] && first != "" && s.Status != first {
		return "any-change"
	}
	if ended {
		switch {
		case want[s.Status]:
			return s.Status
		case want["done"]:
			return "done"
		}
	}
	return ""
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
	first            string // status when the wait began (for any-change)
	last             string // status at the latest poll (named on a timeout)
	done             bool
}

func waitSessions(ctx context.Context, e *cmdEnv, o waitOptions, limit time.Duration, until map[string]bool) error {
	args := o.Args
	start := time.Now()
	for _, a := range args {
		if err := discover.CheckID(a); err != nil {
			return &exitError{exitUsage, err}
		}
	}
	// Each id through the lookup door (only the files of the sessions named);
	// the sessions found are the first poll.
	env := e.readEnv(ctx)
	var res discover.Result
	var ws []*waited
	seen := map[string]bool{}
	for _, a := range args {
		sess, err := e.lookup(ctx, env, a)
		if err != nil {
			return err
		}
		res.Sessions = append(res.Sessions, sess)
		key := sess.Adapter + "\x00" + sess.ID
		if seen[key] {
			continue
		}
		seen[key] = true
		ws = append(ws, &waited{arg: a, id: sess.ID, adapter: sess.Adapter, first: sess.Status})
	}
	allAdapters := e.adapters
	live := len(until) > 1 || !until["done"]
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
			if !ok {
				continue
			}
			w.last = s.Status
			end := waitEnded(s, env.Launches)
			got := reached(until, s, w.first, end)
			keptIdle := got == "" && until["done"] && s.Kind == discover.KindKeptOpen && s.Status == discover.StatusIdle
			if keptIdle {
				// A kept-open run (launch --keep-open) never ends on its own:
				// its turn being over is as done as it gets.
				got = s.Status
			}
			if got == "" && !end {
				continue
			}
			w.done = true
			ended++
			switch {
			case got == "": // ended short of every wanted status
				failed = true
			case got == "done" && !waitSucceeded(s):
				failed = true
			case keptIdle && s.BlockedReason != "":
				failed = true // the turn failed on the provider
			}
			if err := printEnded(e, s, got, until, o.JSON); err != nil {
				return err
			}
		}
		if ended == len(ws) || (o.Any && ended > 0) {
			break
		}
		if limit > 0 && time.Since(start) >= limit {
			return &exitError{exitTimeout, fmt.Errorf("timed out after %s; %s", limit, timedOutLeft(ws, until, live))}
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
		if live {
			interval = 500 * time.Millisecond // a live status is seen within a poll
		} else {
			interval = min(interval*3/2, 2*time.Second)
		}
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

// timedOutLeft names the sessions still short of the wait, by the status each
// was last seen in ("still unknown: ID", not "still running" for a session
// whose status is unknown); with a live --until, "not yet STATE: ID (status)".
func timedOutLeft(ws []*waited, until map[string]bool, live bool) string {
	var order []string
	by := map[string][]string{}
	for _, w := range ws {
		if w.done {
			continue
		}
		st := w.last
		if st == "" {
			st = w.first
		}
		if live {
			by[""] = append(by[""], fmt.Sprintf("%s (%s)", w.id, st))
			continue
		}
		if by[st] == nil {
			order = append(order, st)
		}
		by[st] = append(by[st], w.id)
	}
	if live {
		return "not yet " + strings.Join(sortedKeys(until), "|") + ": " + strings.Join(by[""], " ")
	}
	parts := make([]string, 0, len(order))
	for _, st := range order {
		parts = append(parts, "still "+st+": "+strings.Join(by[st], " "))
	}
	return strings.Join(parts, "; ")
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
	return s.Status == discover.StatusStopped && (s.ExitCode == nil || *s.ExitCode == 0) && s.ExitReason == ""

}

// waitLine is one --json line: the session and the --until state it reached
// ("" when it ended short of every wanted status).
type waitLine struct {
	discover.Session
	Reached string `json:"reached"`
}

func printEnded(e *cmdEnv, s discover.Session, got string, until map[string]bool, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(waitLine{s, got})
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
	if (s.Status == discover.StatusFailed || s.Status == discover.StatusWaiting || s.ExitReason != "") && s.EvidenceDetail != "" {
		detail = ": " + s.EvidenceDetail
	}
	if s.ExitReason != "" {
		code += ", " + s.ExitReason
	}
	if discover.Alive(s.Status) {
		_, err := printHuman(e.s.Out, "%s %s%s\n", s.ID, s.Status, detail)
		return err
	}
	never := ""
	if got == "" { // ended short of every wanted status: say so, it never will
		never = "; never reached " + strings.Join(sortedKeys(until), "|")
	}
	_, err := printHuman(e.s.Out, "%s %s (%s)%s%s\n", s.ID, s.Status, code, detail, never)
	return err
}
