package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
)

func peekCommand(s *host, name string, defaultN int) *cli.Command {
	return &cli.Command{
		Name:      name,
		Usage:     fmt.Sprintf("show the last messages of a session (default: the last %d)", defaultN),
		ArgsUsage: "ID",
		Description: fmt.Sprintf(`Renders the conversation as the agent recorded it: "> prompt" for the user,
assistant text, "→ Tool: arg" for tool calls and "← ok/ERROR" for their results.
-n counts messages, never lines. Works for a launched session whose transcript
does not exist yet (reads the launch log).

Examples:
  agentctl %[1]s 75098152
  agentctl %[1]s -n 5 --follow 75098152
  agentctl %[1]s --json 75098152 | jq -r '.[] | select(.kind=="assistant") | .text'`, name),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "n", Value: defaultN, Usage: "number of messages (0 = all)"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing as the session grows"},
			&cli.BoolFlag{Name: "raw", Usage: "print the agent's native records"},
			&cli.BoolFlag{Name: "json", Usage: "print normalised items as a JSON array (NDJSON with --follow)"},
		},
		Action: func(c *cli.Context) error {
			o, err := peekOptionsFrom(c)
			if err != nil {
				return err
			}
			return runPeek(c.Context, s, o)
		},
	}
}

// peekOptions are peek's (and logs') flags and arguments.
type peekOptions struct {
	globalOptions
	Command           string   // peek or logs, for messages
	Args              []string // the session ID
	N                 int
	Follow, Raw, JSON bool
}

func peekOptionsFrom(c *cli.Context) (peekOptions, error) {
	o := peekOptions{globalOptions: globalsFrom(c), Command: c.Command.Name, Args: c.Args().Slice(),
		N: c.Int("n"), Follow: c.Bool("follow"), Raw: c.Bool("raw"), JSON: c.Bool("json")}
	return o, o.check()
}

// check is every usage check of peek's options; it reads nothing.
func (o peekOptions) check() error {
	if err := needArgs(o.Command, o.Args, 1, "one session ID"); err != nil {
		return err
	}
	if o.N < 0 {
		return usageErrorf("-n %d: want 0 (all) or a positive number of messages", o.N)
	}
	if o.Raw && o.JSON {
		return usageErrorf("--raw and --json exclude each other")
	}
	return nil
}

// runPeek prints one session's last messages. It checks the options again
// (check, no I/O), so in-process callers that build them by hand get the
// same usage errors.
func runPeek(ctx context.Context, s *host, o peekOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	e, sess, env, err := setupSession(ctx, s, o.globalOptions, o.Args[0])
	if err != nil {
		return err
	}
	p := &peeker{e: e, env: env, sess: sess, raw: o.Raw, json: o.JSON, follow: o.Follow}
	return p.run(ctx, o.N)
}

type peeker struct {
	e      *cmdEnv
	env    *discover.Env
	sess   discover.Session
	raw    bool
	json   bool
	follow bool
	seen   map[string]string // item key → rendered form, for --follow
	floor  time.Time         // --follow: the first item shown; older ones stay hidden
}

func (p *peeker) fetch(ctx context.Context, n int) ([]discover.Message, error) {
	a := p.e.adapterFor(p.sess)
	if a == nil {
		return nil, fmt.Errorf("no adapter for %s", p.sess.Adapter)
	}
	ctx, cancel := context.WithTimeout(ctx, p.e.timeout*4)
	defer cancel()
	if !p.raw {
		ctx = discover.WithoutRaw(ctx)
	}
	msgs, err := a.Peek(ctx, p.env, p.sess, n)
	if errors.Is(err, discover.ErrNoSession) {
		return nil, nil
	}
	return msgs, err
}

func (p *peeker) run(ctx context.Context, n int) error {
	msgs, err := p.fetch(ctx, n)
	if err != nil {
		return &exitError{exitFailed, fmt.Errorf("peek %s: %w", p.sess.ID, err)}
	}
	if !p.follow {
		switch {
		case p.json:
			if msgs == nil {
				msgs = []discover.Message{}
			}
			return writeJSON(p.e.s.Out, msgs)
		case len(msgs) == 0 && !p.raw:
			fmt.Fprintln(p.e.s.Out, "(no messages yet)")
		}
		for _, m := range msgs {
			p.print(m)
		}
		return nil
	}
	// --follow: print, then poll and print what is new. A message that grew (more
	// blocks, a tool result) is printed again only in its new part. Polls ask for a
	// window a little larger than what was seen, never the whole transcript; items
	// older than the first one shown were left out on purpose and stay out.
	p.seen = map[string]string{}
	for _, m := range msgs {
		p.emit(m)
	}
	if len(msgs) > 0 {
		p.floor = msgs[0].TS
	}
	if len(msgs) == 0 && !p.json && !p.raw {
		fmt.Fprintln(p.e.s.Out, "(no messages yet)")
	}
	quietSince := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
		msgs, err := p.fetch(ctx, len(p.seen)+20)
		if err != nil {
			continue
		}
		grew := false
		for _, m := range msgs {
			if _, ok := p.seen[itemKey(m)]; !ok && m.TS.Before(p.floor) {
				p.seen[itemKey(m)] = p.render(m) // older than the window first shown
				continue
			}
			if p.emit(m) {
				grew = true
			}
		}
		if grew {
			quietSince = time.Now()
			continue
		}
		if time.Since(quietSince) < 2*time.Second {
			continue
		}
		// Quiet for 2 s: is the session still alive?
		cur, _, err := p.e.resolve(ctx, p.sess.ID)
		if err == nil && discover.Alive(cur.Status) {
			quietSince = time.Now()
			continue
		}
		status := discover.StatusStopped
		if err == nil {
			status = cur.Status
		}
		if !p.json && !p.raw {
			fmt.Fprintf(p.e.s.Out, "── session %s ──\n", status)
		}
		return nil
	}
}

func itemKey(m discover.Message) string {
	switch {
	case m.MessageID != "":
		return m.MessageID
	case m.UUID != "":
		return m.UUID
	}
	return m.TS.Format(time.RFC3339Nano) + m.Kind + discover.Truncate(m.Text, 40)
}

// emit prints m if it is new, or its new part if it grew; it reports whether
// anything was printed.
func (p *peeker) emit(m discover.Message) bool {
	key := itemKey(m)
	rendered := p.render(m)
	old, ok := p.seen[key]
	if ok && old == rendered {
		return false
	}
	p.seen[key] = rendered
	if ok && strings.HasPrefix(rendered, old) && !p.json && !p.raw {
		fmt.Fprint(p.e.s.Out, rendered[len(old):])
		return true
	}
	if p.json {
		b, _ := json.Marshal(m)
		fmt.Fprintln(p.e.s.Out, string(b))
		return true
	}
	fmt.Fprint(p.e.s.Out, rendered)
	return true
}

func (p *peeker) print(m discover.Message) { fmt.Fprint(p.e.s.Out, p.render(m)) }

// render formats one item as peek prints it (ANSI and control chars stripped).
func (p *peeker) render(m discover.Message) string {
	var b strings.Builder
	if p.raw {
		for _, r := range m.Raw {
			b.Write(r)
			b.WriteByte('\n')
		}
		return b.String()
	}
	clock := clockAt(m.TS, p.e.s.now())
	switch m.Kind {
	case "user":
		fmt.Fprintf(&b, "%s > %s\n", clock, indentRest(capLines(discover.Clean(m.Text), 20), "  "))
	case "assistant":
		label := agentLabel(p.sess.Adapter)
		text := strings.TrimSpace(discover.Clean(m.Text))
		if text == "" {
			fmt.Fprintf(&b, "%s %s:\n", clock, label)
		} else if !strings.Contains(text, "\n") && len(m.Tools) == 0 {
			fmt.Fprintf(&b, "%s %s: %s\n", clock, label, text)
		} else {
			fmt.Fprintf(&b, "%s %s:\n  %s\n", clock, label, indentRest(capLines(text, 20), "  "))
		}
		for _, t := range m.Tools {
			fmt.Fprintf(&b, "  → %s: %s\n", discover.OneLine(t.Name, 40), discover.OneLine(t.Summary, 100))
			switch {
			case !t.HasResult:
			case t.Interrupted:
				b.WriteString("    ← [interrupted]\n")
			case t.IsError:
				fmt.Fprintf(&b, "    ← ERROR: %s\n", discover.OneLine(t.Result, 100))
			default:
				r := discover.OneLine(t.Result, 100)
				if r == "" {
					r = "ok"
				}
				fmt.Fprintf(&b, "    ← %s\n", r)
			}
		}
	case "error":
		fmt.Fprintf(&b, "%s error: %s\n", clock, discover.OneLine(m.Text, 300))
	default:
		fmt.Fprintf(&b, "%s ── %s ──\n", clock, discover.OneLine(m.Text, 200))
	}
	return termSafeText(b.String())
}

func agentLabel(adapter string) string {
	if l := agents.Get(adapter).Label; l != "" {
		return l
	}
	return adapter
}

func capLines(s string, max int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= max {
		return s
	}
	return strings.Join(lines[:max], "\n") + fmt.Sprintf("\n… (+%d lines)", len(lines)-max)
}

func indentRest(s, ind string) string { return strings.ReplaceAll(s, "\n", "\n"+ind) }
