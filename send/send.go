// Package send hands a message to a live agent session through a channel
// that session has (its agent's own, or the tmux pane it runs in) and tells
// when the agent has recorded it: `agentctl send` (README "send").
//
// The message never goes into an argv: tmux reads it on stdin (load-buffer -),
// an agent's API takes it in a request body. Delivery is confirmed only from
// the agent's own transcript (Confirm), never from the screen.
package send

import (
	"context"
	"io"
	"os/exec"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/opencode"
	"github.com/agentctl/agentctl/proc"
)

// Channels: the values of a session's can_send and of send's "via".
const (
	ViaTmux        = "tmux"         // a bracketed paste into the tmux pane the agent runs in
	ViaOpenCodeAPI = "opencode-api" // the HTTP server of `opencode serve` or a TUI started with --port
	ViaPiRPC       = "pi-rpc"       // the stdin of a pi that agentctl started in RPC mode
)

// Runner runs a helper program (tmux) with stdin and returns its stdout.
// Tests replace it; Exec is the machine's.
type Runner func(ctx context.Context, stdin io.Reader, name string, args ...string) ([]byte, error)

// Exec runs name with args, stdin as given, and returns stdout; a failure's
// error carries the program's stderr.
func Exec(ctx context.Context, stdin io.Reader, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = stdin
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return out, &runError{err: err, stderr: string(ee.Stderr)}
	}
	return out, err
}

type runError struct {
	err    error
	stderr string
}

func (e *runError) Error() string { return e.err.Error() + ": " + trimLine(e.stderr) }
func (e *runError) Unwrap() error { return e.err }

func trimLine(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// CanSend is the channel send would use for s ("" for none), decided without
// running anything: list and status --json show it as can_send. A session
// that has ended has none (resume continues it); a tmux pane is recognised
// by the TMUX variables its process inherited.
func CanSend(t proc.Table, s *discover.Session) string {
	if s.Adapter == "opencode" && s.Evidence == discover.EvidenceServer && discover.Alive(s.Status) {
		return ViaOpenCodeAPI // a server answered for it during discovery
	}
	if !discover.Alive(s.Status) || s.PID <= 0 {
		return ""
	}
	if s.Kind == discover.KindKeptOpen {
		return ViaPiRPC // its input FIFO (launch --keep-open); the launch record proved the PID
	}
	if s.Kind == "background" {
		if s.Adapter == "claude-code" && s.JobID != "" {
			return ViaClaudeAttach // Claude's daemon hosts it; `claude attach` reaches it
		}
		return ""
	}
	if CodexHosted(t, s) {
		return ViaCodexServer // the TUI's daemon (or an app-server on a unix socket) holds the thread
	}
	if InPane(t, s.PID) {
		return ViaTmux
	}
	return ""
}

// Marker sets each live session's CanSend as it passes, taking the process
// table (table) only when the first live session needs it: a listing of
// ended sessions reads no process.
type Marker struct {
	table func() proc.Table
	t     proc.Table
}

// NewMarker returns a Marker over the table table returns.
func NewMarker(table func() proc.Table) *Marker { return &Marker{table: table} }

// Mark sets s.CanSend.
func (m *Marker) Mark(s *discover.Session) *discover.Session {
	if !discover.Alive(s.Status) || s.PID <= 0 {
		return s
	}
	if m.t == nil {
		m.t = m.table()
	}
	s.CanSend = CanSend(m.t, s)
	return s
}

// CanSendAsking is CanSend for one session (status): an OpenCode session at
// rest in a live server is reported stopped, so its servers are asked
// whether they know it.
func CanSendAsking(ctx context.Context, env *discover.Env, s *discover.Session) string {
	if v := CanSend(env.Procs, s); v != "" || s.Adapter != "opencode" {
		return v
	}
	if _, err := FindOpenCode(ctx, OpenCodeClient(StatusTimeout), opencode.Servers(env), s.ID, s.Cwd); err == nil {
		return ViaOpenCodeAPI
	}
	return ""
}
