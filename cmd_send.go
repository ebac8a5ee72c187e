package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/claude"
	"github.com/agentctl/agentctl/discover/codex"
	"github.com/agentctl/agentctl/discover/opencode"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/send"
)

func sendCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "send",
		Usage:     "send a message to a live session, and wait until the agent has recorded it",
		ArgsUsage: "ID MESSAGE | ID - | -f FILE ID",
		Description: `Hands MESSAGE to a session that is running, through a channel it has (README
"Send"): its agent's own (OpenCode: the server API of a live serve or a TUI
started with --port; Codex: the queue of the app-server daemon that hosts a TUI's
thread; a Claude Code background session: claude attach, run in a tmux server
of agentctl's for the send; pi: the input of a run started with agentctl launch
pi --keep-open), else the tmux pane it runs in (a bracketed paste, then Enter).
Only an idle session is sent to: a permission prompt must never get
keystrokes meant as a message; --force sends anyway. Prints "delivered ID" once
the agent's own transcript holds a user record with exactly this text, written
after the send; --no-wait prints "queued ID" once the message is handed over.

agentctl never puts the message in a command line of its own making; pass it as
"-" (stdin) or -f FILE to keep it out of yours too (with host:ID, -f names a file
on that host). A session that has ended takes a message with agentctl resume ID
MESSAGE. Here --timeout is how long to wait for the transcript to show the
message (default: 60s).

Examples:
  agentctl send 75098152 "also run the linter"
  agentctl send -f notes.md 75098152
  agentctl send --json --timeout 2m 75098152 - < followup.txt`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read the message from `FILE` (- for stdin)"},
			&cli.BoolFlag{Name: "json", Usage: "print {id, adapter, via, delivered_at, record}"},
			&cli.BoolFlag{Name: "no-wait", Usage: "return once the message is handed over (queued), without waiting for the transcript"},
			&cli.BoolFlag{Name: "force", Usage: "send even when the session is not idle (running, waiting at a prompt)"},
		},
		Action: func(c *cli.Context) error {
			o, err := sendOptionsFrom(c)
			if err != nil {
				return err
			}
			return runSend(c.Context, s, o)
		},
	}
}

// sendOptions are send's flags and arguments. Here --timeout (LimitSet, the
// value in globalOptions.Timeout) is the confirmation's limit, not the
// adapters'.
type sendOptions struct {
	globalOptions
	Args                []string // ID [MESSAGE]
	File                string   // -f
	JSON, NoWait, Force bool
	LimitSet            bool
}

// defaultSendLimit is how long send waits for the transcript by default.
const defaultSendLimit = 60 * time.Second

// sendPoll is how often send reads the transcript while it waits.
const sendPoll = 200 * time.Millisecond

func sendOptionsFrom(c *cli.Context) (sendOptions, error) {
	o := sendOptions{globalOptions: globalsFrom(c), Args: c.Args().Slice(), File: c.String("file"),
		JSON: c.Bool("json"), NoWait: c.Bool("no-wait"), Force: c.Bool("force"), LimitSet: c.IsSet("timeout")}
	_, err := o.check()
	return o, err
}

// check is every usage check of send; it reads nothing and returns the
// confirmation's limit.
func (o sendOptions) check() (time.Duration, error) {
	switch {
	case o.File != "" && len(o.Args) != 1:
		return 0, usageErrorf("send: with -f FILE, want one session ID (see agentctl send --help)")
	case o.File == "":
		if err := needArgs("send", o.Args, 2, "a session ID and a MESSAGE (- for stdin), or -f FILE and a session ID"); err != nil {
			return 0, err
		}
		if strings.TrimSpace(o.Args[1]) == "" {
			return 0, emptySendMessage()
		}
	}
	limit := defaultSendLimit
	if v := o.Timeout; o.LimitSet && v != "" {
		d, err := meta.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, usageErrorf("--timeout %q: want a duration such as 30s or 2m", v)
		}
		limit = d
	}
	return limit, nil
}

func emptySendMessage() error {
	return usageErrorf("send: the message is empty; say what the agent should do")
}

// message reads the message from its argument, stdin or -f FILE.
func (o sendOptions) message(in io.Reader) (string, error) {
	var b []byte
	var err error
	switch {
	case o.File == "-" || (o.File == "" && o.Args[1] == "-"):
		b, err = io.ReadAll(in)
		if err != nil {
			return "", &exitError{exitFailed, fmt.Errorf("read the message from stdin: %w", err)}
		}
	case o.File != "":
		b, err = os.ReadFile(o.File)
		if err != nil {
			return "", usageErrorf("-f %s: %v", o.File, err)
		}
	default:
		b = []byte(o.Args[1])
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", emptySendMessage()
	}
	return string(b), nil
}

// sent is send's --json answer.
type sent struct {
	ID          string            `json:"id"`
	Adapter     string            `json:"adapter"`
	Via         string            `json:"via"`
	Status      string            `json:"status"` // delivered | queued
	QueuedAt    time.Time         `json:"queued_at"`
	DeliveredAt *time.Time        `json:"delivered_at,omitempty"`
	Record      *discover.Message `json:"record,omitempty"`
}

// runSend sends. It checks the options again (check, no I/O), so in-process
// callers that build them by hand get the same usage errors.
func runSend(ctx context.Context, s *host, o sendOptions) error {
	limit, err := o.check()
	if err != nil {
		return err
	}
	msg, err := o.message(s.In)
	if err != nil {
		return err
	}
	g := o.globalOptions
	if o.LimitSet {
		g.Timeout = "" // the adapters keep their own timeout
	}
	e, err := setup(s, g)
	if err != nil {
		return err
	}
	if err := e.mustTrust("send"); err != nil {
		return err
	}
	sess, env, err := e.resolve(ctx, o.Args[0])
	if err != nil {
		return err
	}
	a := e.adapterFor(sess)
	if a == nil {
		return &exitError{exitFailed, fmt.Errorf("no adapter for %s", sess.Adapter)}
	}
	ch, err := pickChannel(ctx, env, sess)
	if err != nil {
		return &exitError{exitFailed, err}
	}
	if ch.status != discover.StatusIdle && !o.Force {
		why := "it is busy with a turn"
		switch ch.status {
		case discover.StatusWaiting:
			why = "it is waiting for an answer (a permission prompt would take the keystrokes)"
			if ch.via != send.ViaTmux {
				why = "it is waiting for an answer"
			}
		case discover.StatusUnknown:
			why = "its status is unknown"
		}
		return &exitError{exitFailed, fmt.Errorf("%s is %s, not idle: %s. Send once it is idle (agentctl wait --until idle %s), or pass --force",
			sess.ID, ch.status, why, sess.ID)}
	}
	c := &confirmer{e: e, a: a, env: env, sess: sess}
	before, _ := c.peek(ctx)
	earlier := send.Earlier(before, msg)

	if ch.done != nil {
		defer ch.done()
	}
	queued := s.now()
	if err := ch.deliver(ctx, msg, queued); err != nil {
		return &exitError{exitFailed, fmt.Errorf("send to %s via %s: %w", sess.ID, ch.where, err)}
	}
	via := ch.via
	journalSend(e, sess, meta.EventMessageSent, via, queued)
	out := sent{ID: sess.ID, Adapter: sess.Adapter, Via: via, Status: "queued", QueuedAt: queued.UTC()}
	if o.NoWait {
		if ch.done != nil {
			// The client agentctl started is ended on return: give the keys it
			// took a moment to reach the agent first.
			time.Sleep(time.Second)
		}
		if o.JSON {
			return writeJSON(s.Out, out)
		}
		fmt.Fprintf(s.Out, "queued %s\n", sess.ID)
		return nil
	}
	w := send.Waiter{Peek: c.peek, Now: s.now, Every: sendPoll}
	rec, err := w.Wait(ctx, msg, earlier, queued, queued.Add(limit))
	if err != nil {
		if errors.Is(err, send.ErrNotRecorded) {
			return &exitError{exitFailed, fmt.Errorf("sent via %s; not yet recorded by %s after %s", via, sess.Adapter, limit)}
		}
		return &exitError{exitFailed, fmt.Errorf("sent via %s; %v", via, err)}
	}
	at := s.now().UTC()
	journalSend(e, sess, meta.EventMessageDelivered, via, at)
	if o.JSON {
		out.Status, out.DeliveredAt = "delivered", &at
		rec.Raw = nil
		out.Record = &rec
		return writeJSON(s.Out, out)
	}
	fmt.Fprintf(s.Out, "delivered %s\n", sess.ID)
	return nil
}

// journalSend appends a send event: its type, the session and the channel,
// never the message.
func journalSend(e *cmdEnv, sess discover.Session, typ, via string, at time.Time) {
	ev := meta.Event{Type: typ, Adapter: sess.Adapter, SessionID: sess.ID, Timestamp: at, LaunchID: sess.LaunchID,
		Data: map[string]any{"via": via}}
	if err := e.store.AppendEvent(ev); err != nil {
		warn(e.s, "journal: "+err.Error())
	}
}

// confirmer reads a session's latest transcript items; a session known only
// from its registry so far is looked up again until its transcript exists.
type confirmer struct {
	e    *cmdEnv
	a    discover.Adapter
	env  *discover.Env
	sess discover.Session
}

// confirmWindow is how many of the latest items a read looks at.
const confirmWindow = 50

func (c *confirmer) peek(ctx context.Context) ([]discover.Message, error) {
	if c.sess.Path == "" {
		cur, env, err := c.e.resolve(ctx, c.sess.ID)
		if err == nil {
			c.sess, c.env = cur, env
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.e.timeout*4)
	defer cancel()
	return c.a.Peek(discover.WithoutRaw(ctx), c.env, c.sess, confirmWindow)
}

// paneless says why a session has no tmux pane.
func paneless(s discover.Session) string {
	if s.PID <= 0 {
		return "no process of it is known"
	}
	return fmt.Sprintf("its process (pid %d) runs in no tmux pane", s.PID)
}

// channel is how one send reaches its session.
type channel struct {
	via    string // send.Via…
	where  string // for messages: "tmux pane %3", "opencode server 127.0.0.1:4096 (pid 42)"
	status string // the session's status as the channel's own source says it
	// deliver hands msg over; sent names the moment (tmux buffer names).
	deliver func(ctx context.Context, msg string, sent time.Time) error
	// done, when set, is called once the send is over (confirmed or not):
	// an attach client agentctl started is ended then.
	done func()
}

// pickChannel chooses how to reach sess: its agent's own channel first, else
// the tmux pane it runs in; an error says why there is none and what would
// work.
func pickChannel(ctx context.Context, env *discover.Env, sess discover.Session) (channel, error) {
	if sess.Adapter == "opencode" {
		// A session at rest in a live server is reported stopped (nothing ties
		// it to its server without asking), so the servers are asked first.
		client := send.OpenCodeClient(send.SendTimeout)
		h, err := send.FindOpenCode(ctx, client, opencode.Servers(env), sess.ID, sess.Cwd)
		if err == nil {
			status := discover.StatusIdle
			switch {
			case h.Asks != "":
				status = discover.StatusWaiting
			case h.Busy != "":
				status = discover.StatusRunning
			}
			return channel{via: send.ViaOpenCodeAPI, where: fmt.Sprintf("opencode server %s (pid %d)", strings.TrimPrefix(h.Base, "http://"), h.PID),
				status: status, deliver: func(ctx context.Context, msg string, _ time.Time) error {
					return send.PromptOpenCode(ctx, client, h, sess.ID, sess.Model, msg)
				}}, nil
		}
		if !errors.Is(err, send.ErrNoServer) {
			return channel{}, err
		}
	}
	if sess.Kind == discover.KindKeptOpen {
		return keptOpenChannel(env, sess)
	}
	if !discover.Alive(sess.Status) {
		return channel{}, fmt.Errorf("%s is not running (%s); use agentctl resume %s MESSAGE", sess.ID, sess.Status, sess.ID)
	}
	if sock, ok := send.CodexSocketFor(env.Procs, codex.Home(env), &sess); ok {
		// The thread's writer is an app-server daemon: its queue, never the
		// pane the daemon's environment names (the TUI that started it may be
		// gone, the pane reused).
		h, err := send.FindCodex(ctx, sock, sess.PID, sess.ID)
		switch {
		case errors.Is(err, send.ErrQueueStalled):
			return channel{}, fmt.Errorf("%s: %w", sess.ID, err)
		case err != nil:
			return channel{}, fmt.Errorf("%s is held by a codex app-server (pid %d) that did not take a message: %w. "+
				"Check it with `codex app-server daemon version`, or type the message in the Codex TUI", sess.ID, sess.PID, err)
		}
		return channel{via: send.ViaCodexServer, where: fmt.Sprintf("codex app-server %s (pid %d)", h.Socket, h.PID),
			status: h.Status, deliver: func(ctx context.Context, msg string, _ time.Time) error {
				_, err := send.QueueCodex(ctx, h.Socket, sess.ID, msg)
				return err
			}}, nil
	}
	if sess.Kind == "background" {
		return claudeAttachChannel(env, sess)
	}
	pane, err := send.Pane{}, send.ErrNoPane
	if sess.PID > 0 {
		pane, err = send.FindPane(ctx, send.Exec, env.Procs, sess.PID)
	}
	if err != nil {
		hint := "start the agent inside tmux next time"
		switch sess.Adapter {
		case "opencode":
			hint = "start it with --port (or use opencode serve), or inside tmux, next time"
		case "codex":
			// codex exec reads its prompt only; a thread takes messages while
			// the TUI's app-server daemon hosts it (docs/agents/codex.md §12).
			hint = "run it in the Codex TUI (its app-server daemon takes messages; not with --disable daemon_auto_start) or inside tmux next time; " +
				"a `codex exec` run reads nothing after its prompt"
		case "pi":
			hint = "launch it with agentctl launch pi --keep-open, or start it inside tmux, next time"
		}
		return channel{}, fmt.Errorf("%s (%s) has no channel agentctl can send on: %s. "+
			"Type the message in the agent's own window, %s, or once it has ended use agentctl resume %s MESSAGE",
			sess.ID, sess.Adapter, paneless(sess), hint, sess.ID)
	}
	return channel{via: send.ViaTmux, where: "tmux pane " + pane.ID, status: sess.Status,
		deliver: func(ctx context.Context, msg string, sent time.Time) error {
			return send.PasteEnterAfter(ctx, send.Exec, pane, msg, fmt.Sprintf("agentctl-send-%d-%d", os.Getpid(), sent.UnixNano()),
				send.EnterDelay(sess.Adapter))
		}}, nil
}

// claudeReady is what `claude attach` shows once its prompt box is drawn.
var claudeReady = []string{"❯", "? for shortcuts", "mode on"}

// claudeAttachChannel reaches a Claude Code background session through
// `claude attach <short>` (docs/agents/claude-code.md §11), Claude's own client for
// the sessions its daemon hosts: run with the session's binary, HOME and
// config root in a tmux server agentctl starts for this send and ends after it
// (the session stays with the daemon). tmux takes the message on stdin.
func claudeAttachChannel(env *discover.Env, sess discover.Session) (channel, error) {
	if sess.Adapter != claude.Name || sess.JobID == "" {
		return channel{}, fmt.Errorf("%s is a background session with no job id to attach to; once it has ended use agentctl resume %s MESSAGE", sess.ID, sess.ID)
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		return channel{}, fmt.Errorf("%s is a Claude Code background session: send types into `claude attach %s`, which needs tmux (not found: install it), "+
			"or type the message in `claude attach %s` yourself", sess.ID, sess.JobID, sess.JobID)
	}
	bin, err := env.Procs.Exe(sess.PID)
	if err != nil || bin == "" {
		bin = "claude"
	}
	run := send.EnvRunner(launch.ClaudeClientEnv(os.Environ(), env.Home, claude.Root(env)))
	var att *send.Attached
	var tmp string
	ch := channel{via: send.ViaClaudeAttach, where: "claude attach " + sess.JobID, status: sess.Status}
	ch.deliver = func(ctx context.Context, msg string, sent time.Time) error {
		var err error
		if tmp, err = os.MkdirTemp("", "agentctl-send-"); err != nil {
			return err
		}
		dir := sess.Cwd
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			dir = tmp
		}
		att, err = send.Attach(ctx, run, filepath.Join(tmp, "tmux.sock"), dir, []string{bin, "attach", sess.JobID}, claudeReady)
		if err != nil {
			return err
		}
		return att.Paste(ctx, msg, fmt.Sprintf("agentctl-send-%d-%d", os.Getpid(), sent.UnixNano()))
	}
	ch.done = func() {
		if att != nil {
			att.Close()
		}
		if tmp != "" {
			_ = os.RemoveAll(tmp)
		}
	}
	return ch, nil
}

// keptOpenChannel reaches a pi that agentctl launched with --keep-open: one
// RPC command written to the FIFO it reads (send.WritePiRPC), once its launch
// record's PID is still that pi (PID, start time, boot id).
func keptOpenChannel(env *discover.Env, sess discover.Session) (channel, error) {
	rec := meta.FindLaunch(env.Launches, sess.LaunchID)
	if rec == nil || rec.Input == "" {
		return channel{}, fmt.Errorf("%s: its launch record %s is gone; once it has ended use agentctl resume %s MESSAGE", sess.ID, sess.LaunchID, sess.ID)
	}
	if !discover.Alive(sess.Status) || !proc.Check(env.Procs, rec.Agent()).Alive {
		return channel{}, fmt.Errorf("%s is not running (%s): the pi kept open for it has ended; use agentctl resume %s MESSAGE", sess.ID, sess.Status, sess.ID)
	}
	input := rec.Input
	return channel{via: send.ViaPiRPC, where: fmt.Sprintf("pi input %s (pid %d)", input, rec.PID), status: sess.Status,
		deliver: func(ctx context.Context, msg string, sent time.Time) error {
			return send.WritePiRPC(ctx, input, fmt.Sprintf("agentctl-send-%d-%d", os.Getpid(), sent.UnixNano()), msg)
		}}, nil
}
