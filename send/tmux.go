package send

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/proc"
)

// Pane is one tmux pane: its server's socket ("" = tmux's default), its id
// (%3) and the pid of the process it runs.
type Pane struct {
	Socket string
	ID     string
	PID    int
}

// ErrNoPane: the session's process runs in no tmux pane.
var ErrNoPane = errors.New("not in a tmux pane")

// maxAncestors bounds the walk up from a session's process to its pane's.
const maxAncestors = 64

// tmuxEnv is the TMUX socket and TMUX_PANE that pid (or its nearest ancestor
// that has them) inherited from a pane: where to ask.
func tmuxEnv(t proc.Table, pid int) (socket, pane string) {
	for i := 0; i < maxAncestors && pid > 1; i++ {
		env, _ := t.Environ(pid)
		for _, kv := range env {
			switch {
			case strings.HasPrefix(kv, "TMUX="):
				// TMUX=/tmp/tmux-1000/default,1234,0: the socket, the server's pid, the session.
				socket, _, _ = strings.Cut(strings.TrimPrefix(kv, "TMUX="), ",")
			case strings.HasPrefix(kv, "TMUX_PANE="):
				pane = strings.TrimPrefix(kv, "TMUX_PANE=")
			}
		}
		if socket != "" {
			return socket, pane
		}
		p, ok := t.Get(pid)
		if !ok {
			break
		}
		pid = p.PPID
	}
	return "", ""
}

// InPane reports, without running tmux, whether pid looks like it runs in a
// tmux pane (it inherited TMUX and TMUX_PANE): list's can_send. FindPane
// makes sure before anything is pasted.
func InPane(t proc.Table, pid int) bool {
	if t == nil || pid <= 0 {
		return false
	}
	s, p := tmuxEnv(t, pid)
	return s != "" && p != ""
}

// FindPane finds the tmux pane whose process pid descends from (or is): the
// server named by pid's TMUX variable, else tmux's default one, lists its
// panes and the one whose process is an ancestor of pid wins. ErrNoPane when
// none is.
func FindPane(ctx context.Context, run Runner, t proc.Table, pid int) (Pane, error) {
	socket, _ := tmuxEnv(t, pid)
	ancestors := map[int]bool{}
	for p, i := pid, 0; p > 1 && i < maxAncestors; i++ {
		ancestors[p] = true
		pp, ok := t.Get(p)
		if !ok {
			break
		}
		p = pp.PPID
	}
	out, err := run(ctx, nil, "tmux", socketArgs(socket, "list-panes", "-a", "-F", "#{pane_pid} #{pane_id}")...)
	if err != nil {
		return Pane{}, fmt.Errorf("%w (tmux list-panes: %v)", ErrNoPane, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		ps, id, ok := strings.Cut(strings.TrimSpace(line), " ")
		n, err := strconv.Atoi(ps)
		if !ok || err != nil || !strings.HasPrefix(id, "%") {
			continue
		}
		if ancestors[n] {
			return Pane{Socket: socket, ID: id, PID: n}, nil
		}
	}
	return Pane{}, ErrNoPane
}

func socketArgs(socket string, args ...string) []string {
	if socket == "" {
		return args
	}
	return append([]string{"-S", socket}, args...)
}

// enterDelay separates the paste from the Enter that submits it: a TUI that
// receives both at once may take the Enter as part of the paste.
const enterDelay = 150 * time.Millisecond

// geminiEnterDelay: Gemini CLI (0.61) turns an Enter into a newline while a
// paste it does not trust (no kitty keyboard protocol: tmux) is younger than
// 40 ms, and it clears that mark with a timer and a re-render, which under load
// came later than 150 ms after the text was on screen (the message stayed in
// its input box; docs/agents/gemini.md "Send").
const geminiEnterDelay = 600 * time.Millisecond

// EnterDelay is how long after the pane shows the pasted text the Enter that
// submits it is pressed, for a session of adapter.
func EnterDelay(adapter string) time.Duration {
	if adapter == "gemini" {
		return geminiEnterDelay
	}
	return enterDelay
}

// shownWait bounds how long Paste waits for the pane to show the pasted text
// before it presses Enter anyway (a TUI may fold a long paste into a placeholder).
const shownWait = 5 * time.Second

// Paste types msg into pane as one bracketed paste (when the program in the
// pane asked for bracketed pastes, as agent TUIs do) and presses Enter once the
// pane shows the text: an Enter that arrives while the TUI is still taking the
// paste in is lost (seen with Claude Code 2.1.332 on a loaded machine: the message
// stayed in its input box). The text goes to tmux on stdin (load-buffer -), never
// in an argv; the buffer is deleted as it is pasted.
func Paste(ctx context.Context, run Runner, pane Pane, msg string, buffer string) error {
	return paste(ctx, run, pane, msg, buffer, shownWait, enterDelay, movedWait)
}

// PasteEnterAfter is Paste with the Enter pressed enter after the text shows
// (EnterDelay).
func PasteEnterAfter(ctx context.Context, run Runner, pane Pane, msg, buffer string, enter time.Duration) error {
	return paste(ctx, run, pane, msg, buffer, shownWait, enter, movedWait)
}

// movedWait is how long Paste gives the screen to change after Enter before
// it takes the key for lost and presses it again (at most enterRetries
// times). A screen that changed in any way (the message moved into the
// conversation, a spinner, a permission prompt) gets no second Enter, so a
// prompt the message brought up never takes one.
const (
	movedWait    = 1500 * time.Millisecond
	enterRetries = 2
)

func paste(ctx context.Context, run Runner, pane Pane, msg, buffer string, wait, enter, moved time.Duration) error {
	if _, err := run(ctx, strings.NewReader(msg), "tmux", socketArgs(pane.Socket, "load-buffer", "-b", buffer, "-")...); err != nil {
		return fmt.Errorf("tmux load-buffer: %w", err)
	}
	// -p: bracketed; -r: newlines stay newlines inside the paste (not Enter);
	// -d: the buffer is deleted once pasted.
	if _, err := run(ctx, nil, "tmux", socketArgs(pane.Socket, "paste-buffer", "-p", "-r", "-d", "-b", buffer, "-t", pane.ID)...); err != nil {
		_, _ = run(ctx, nil, "tmux", socketArgs(pane.Socket, "delete-buffer", "-b", buffer)...)
		return fmt.Errorf("tmux paste-buffer: %w", err)
	}
	screen, err := waitShown(ctx, run, pane, msg, wait)
	if err != nil {
		return err
	}
	if err := sleep(ctx, enter); err != nil {
		return err
	}
	// Seen with Claude Code 2.1.332 under load: the pasted text sat in the
	// input box, the Enter after it lost, and the screen did not move.
	for try := 0; ; try++ {
		if _, err := run(ctx, nil, "tmux", socketArgs(pane.Socket, "send-keys", "-t", pane.ID, "Enter")...); err != nil {
			return fmt.Errorf("tmux send-keys Enter: %w", err)
		}
		if moved <= 0 || screen == "" || try == enterRetries {
			return nil
		}
		if still, err := unmoved(ctx, run, pane, screen, moved); err != nil || !still {
			return err // it moved (or cannot be looked at): never a second Enter
		}
	}
}

// unmoved looks at the pane every 100 ms until its screen differs from screen
// (false) or d has passed with it the same (true). A screen that cannot be
// captured counts as moved.
func unmoved(ctx context.Context, run Runner, pane Pane, screen string, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	for {
		step := min(100*time.Millisecond, time.Until(deadline))
		if err := sleep(ctx, max(step, 0)); err != nil {
			return false, err
		}
		out, err := run(ctx, nil, "tmux", socketArgs(pane.Socket, "capture-pane", "-p", "-t", pane.ID)...)
		if err != nil || string(out) != screen {
			return false, nil
		}
		if !time.Now().Before(deadline) {
			return true, nil
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// waitShown polls the pane's screen (capture-pane, read on stdout) until it holds
// the end of the message's last line, whitespace aside (a TUI wraps it), or wait
// has passed; at least one look either way. It returns the screen that showed
// it ("" when none did: nothing to compare after Enter).
func waitShown(ctx context.Context, run Runner, pane Pane, msg string, wait time.Duration) (string, error) {
	tail := squeezeSpace(lastLine(msg))
	if n := len(tail); n > 24 {
		tail = tail[n-24:]
	}
	deadline := time.Now().Add(wait)
	for {
		out, err := run(ctx, nil, "tmux", socketArgs(pane.Socket, "capture-pane", "-p", "-t", pane.ID)...)
		if err == nil && (tail == "" || strings.Contains(squeezeSpace(string(out)), tail)) {
			return string(out), nil
		}
		if !time.Now().Before(deadline) {
			return "", nil // not shown (folded, or drawn otherwise): press Enter anyway
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return "", err
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func squeezeSpace(s string) string {
	return strings.Join(strings.Fields(s), "")
}
