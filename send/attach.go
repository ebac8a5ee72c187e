package send

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// ViaClaudeAttach: a bracketed paste into `claude attach <short>`, the client
// Claude Code ships for its background sessions, run by agentctl in a tmux
// server of its own for the length of one send.
const ViaClaudeAttach = "claude-attach"

// Attached is an attach client (an agent's own program that shows a session
// hosted elsewhere and takes keys for it) running in a private tmux server.
type Attached struct {
	pane Pane
	run  Runner
}

// EnvRunner is Exec with env as the program's whole environment: a private
// tmux server takes its environment from the first client, so the attach
// client inherits the session's HOME and config root from it.
func EnvRunner(env []string) Runner {
	return func(ctx context.Context, stdin io.Reader, name string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdin, cmd.Env = stdin, env
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
			return out, &runError{err: err, stderr: string(ee.Stderr)}
		}
		return out, err
	}
}

// attachReady bounds the wait for the attach client's first full screen.
const attachReady = 30 * time.Second

// Attach starts argv (which never holds the message) in a new tmux server at
// socket, waits until its screen shows one of ready and has stopped changing,
// and returns it. The caller must Close it.
func Attach(ctx context.Context, run Runner, socket, dir string, argv []string, ready []string) (*Attached, error) {
	args := append([]string{"-S", socket, "-f", "/dev/null", "new-session", "-d", "-P", "-F", "#{pane_id}", "-x", "160", "-y", "48", "-c", dir, "--"}, argv...)
	out, err := run(ctx, nil, "tmux", args...)
	if err != nil {
		return nil, fmt.Errorf("tmux new-session for %s: %w", argv[0], err)
	}
	id := strings.TrimSpace(string(out))
	if !strings.HasPrefix(id, "%") {
		id = "%0" // the first pane of a new server
	}
	a := &Attached{pane: Pane{Socket: socket, ID: id}, run: run}
	if err := a.waitReady(ctx, ready); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func (a *Attached) screen(ctx context.Context) (string, error) {
	out, err := a.run(ctx, nil, "tmux", socketArgs(a.pane.Socket, "capture-pane", "-p", "-t", a.pane.ID)...)
	return string(out), err
}

// waitReady waits for a screen that holds one of ready and is the same on two
// looks 300 ms apart (a client still drawing its history would take the paste
// in the middle of it).
func (a *Attached) waitReady(ctx context.Context, ready []string) error {
	deadline := time.Now().Add(attachReady)
	prev := ""
	for {
		cur, err := a.screen(ctx)
		if err != nil {
			return fmt.Errorf("the attach client ended before it was ready: %w", err)
		}
		if cur == prev && containsAny(cur, ready) {
			return nil
		}
		prev = cur
		if !time.Now().Before(deadline) {
			return fmt.Errorf("the attach client showed none of %q within %s; its screen ends: %q",
				ready, attachReady, lastLines(cur, 3))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// Paste types msg into the attach client as a bracketed paste and presses
// Enter once it shows (Paste for a pane).
func (a *Attached) Paste(ctx context.Context, msg, buffer string) error {
	return Paste(ctx, a.run, a.pane, msg, buffer)
}

// Close ends the attach client and its tmux server (the session stays with
// the agent that hosts it: detaching is what the client does on hang-up).
func (a *Attached) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = a.run(ctx, nil, "tmux", socketArgs(a.pane.Socket, "kill-server")...)
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n "), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
