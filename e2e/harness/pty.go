package harness

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// PTY is a process started on a pseudo-terminal (docs/agents/claude-code.md §10.2: the TUI
// needs one). Everything it prints is kept, and also appended to StdoutPath.
type PTY struct {
	*Proc
	master *os.File

	mu  sync.Mutex
	out bytes.Buffer
}

// cursorQuery is the terminal's "where is the cursor" request; a TUI waits for
// the answer before it draws.
var cursorQuery = []byte("\x1b[6n")

// StartPTY is Start with the process's stdin, stdout and stderr on a new pty
// (80x24 is too narrow for some prompts; 120x40). s.Stdin is ignored. The process
// leads its own session and group, so cleanup kills it like Start's.
func StartPTY(t testing.TB, s Spec) *PTY {
	t.Helper()
	name := s.Name
	if name == "" {
		name = filepath.Base(s.Path)
	}
	n := seq.Add(1)
	base := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%d", name, n))
	p := &PTY{Proc: &Proc{StdoutPath: base + ".stdout", StderrPath: base + ".stderr", done: make(chan struct{})}}
	log, err := os.OpenFile(p.StdoutPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.StderrPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	token := newToken()
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = s.Env.With(tokenVar, token).List()
	attr := sysProcAttr()
	// setsid makes the process a group leader too (pgid = pid); Setpgid after
	// it would fail with EPERM.
	attr.Setpgid, attr.Setsid, attr.Setctty = false, true, true
	master, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: 40, Cols: 120}, attr)
	if err != nil {
		log.Close()
		t.Fatalf("start %s on a pty: %v", s.Path, err)
	}
	p.master, p.cmd, p.PID = master, cmd, cmd.Process.Pid
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	go p.read(log)
	t.Cleanup(func() {
		p.kill(t, token)
		master.Close()
	})
	return p
}

// read copies the terminal output and answers cursor queries until the pty
// closes (EIO once the last process holding the slave side is gone).
func (p *PTY) read(log io.WriteCloser) {
	defer log.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := p.master.Read(buf)
		if n > 0 {
			p.mu.Lock()
			prev := p.out.Len()
			p.out.Write(buf[:n])
			// Look back a little so a query split across reads is still seen.
			from := max(prev-len(cursorQuery)+1, 0)
			queries := bytes.Count(p.out.Bytes()[from:], cursorQuery)
			p.mu.Unlock()
			log.Write(buf[:n])
			for range queries {
				p.master.Write([]byte("\x1b[1;1R"))
			}
		}
		if err != nil {
			return
		}
	}
}

// Output returns everything the process printed so far, escape codes included.
func (p *PTY) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Len is the output's current length: pass it to WaitOutput to look only at
// what comes after.
func (p *PTY) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Len()
}

// Type writes text to the terminal as keystrokes.
func (p *PTY) Type(t testing.TB, text string) {
	t.Helper()
	if _, err := p.master.Write([]byte(text)); err != nil {
		t.Fatalf("type %q: %v", text, err)
	}
}

// ClaudePermissionPrompt is what WaitOutput looks for to know Claude Code's TUI
// asks for a permission ("Do you want to proceed?"). Not the whole question:
// 2.1.332's byte stream held "Do yu want to proceed?" (a character already on
// screen, most likely, skipped with a cursor move) and WaitOutput reads the
// stream, not a screen.
const ClaudePermissionPrompt = "want to proceed?"

// WaitOutput waits until the output after offset from contains want, with
// escape sequences and whitespace removed from both sides.
func (p *PTY) WaitOutput(t testing.TB, timeout time.Duration, from int, want string) {
	t.Helper()
	w := squeeze(want)
	Eventually(t, timeout, func() string {
		out := p.Output()
		if from > len(out) {
			from = len(out)
		}
		if bytes.Contains([]byte(squeeze(StripANSI(out[from:]))), []byte(w)) {
			return ""
		}
		select {
		case <-p.done:
			return fmt.Sprintf("process exited (code %d) before it showed %q\nscreen:\n%s", p.ExitCode(), want, Tail(StripANSI(out), 30))
		default:
		}
		return fmt.Sprintf("terminal never showed %q\nscreen:\n%s", want, Tail(StripANSI(out), 30))
	})
}

// StripANSI removes CSI and OSC escape sequences.
func StripANSI(s string) string {
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != 0x1b || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '[': // CSI: parameters, then a final byte in 0x40..0x7e
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
		case ']': // OSC: up to BEL or ST
			j := i + 2
			for j < len(s) && s[j] != 0x07 && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
				j++
			}
			if j < len(s) && s[j] == 0x1b {
				j++
			}
			i = j
		default:
			i++
		}
	}
	return b.String()
}

func squeeze(s string) string {
	return string(bytes.Join(bytes.Fields([]byte(s)), nil))
}
