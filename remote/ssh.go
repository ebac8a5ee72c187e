package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Local names this machine in a host list: agentctl runs itself, no ssh.
const Local = "local"

// Protocol is the version of what one agentctl reads from another: the JSON
// that `version --json` and the data commands print. A remote agentctl that
// speaks another one gets a warning naming both versions.
const Protocol = 1

// Host is one machine.
type Host struct {
	Name     string // an ssh destination (user@box, an alias of ~/.ssh/config) or "local"
	Agentctl string // agentctl's path there ("" = agentctl on the remote PATH)
}

// Runner starts agentctl on hosts.
type Runner struct {
	SSH     []string // the ssh program and its own arguments
	Self    string   // this executable, for the host "local"
	Version string   // this agentctl's version, for the mismatch warning
	// ControlDir, when set, is where the control sockets live (ControlDir):
	// each host's calls share one ssh connection.
	ControlDir string
	ctl        controls
}

// NewRunner builds a Runner. agentctlSSH is $AGENTCTL_SSH ("" = ssh).
func NewRunner(agentctlSSH, self, version string) (*Runner, error) {
	r := &Runner{SSH: []string{"ssh"}, Self: self, Version: version}
	if strings.TrimSpace(agentctlSSH) != "" {
		w, err := SplitCommand(agentctlSSH)
		if err != nil {
			return nil, fmt.Errorf("AGENTCTL_SSH %q: %v; quote it as you would for sh", agentctlSSH, err)
		}
		if len(w) == 0 {
			return nil, fmt.Errorf("AGENTCTL_SSH %q names no program", agentctlSSH)
		}
		r.SSH = w
	}
	return r, nil
}

// Call is one agentctl command on one host.
type Call struct {
	Args           []string  // agentctl's arguments, without the program
	Stdin          io.Reader // nil: none (ssh gets /dev/null)
	Stdout, Stderr io.Writer
	// ConnectTimeout bounds the TCP connection and the ssh handshake.
	ConnectTimeout time.Duration
	// Timeout bounds the whole call (0: none — wait and --follow run as long as
	// they need).
	Timeout time.Duration
}

// Result is how a call ended.
type Result struct {
	Exit     int    // agentctl's exit code there (valid when Err is nil)
	Version  string // the remote agentctl's version
	Protocol int    // and protocol
	Err      error  // *HostError: the host did not answer
}

// HostError says why a host could not answer, in words the user can act on.
type HostError struct {
	Host  string
	Cause string
}

func (e *HostError) Error() string { return e.Host + ": " + e.Cause }

// Mismatch is the warning for a remote agentctl that speaks another protocol,
// or "" when it speaks ours.
func (r *Runner) Mismatch(h string, res Result) string {
	if res.Err != nil || res.Protocol == Protocol || res.Version == "" {
		return ""
	}
	return fmt.Sprintf("%s: agentctl there is version %s (protocol %d), this one %s (protocol %d); results may be incomplete: install the same agentctl on both",
		h, res.Version, res.Protocol, r.Version, Protocol)
}

// VersionLineFlag is the global flag that makes agentctl print the line of
// `version --json` before it runs its command: the one remote process answers
// with its version and the command's output (one agentctl start per call, not
// two).
const VersionLineFlag = "version-line"

// Argv is the local command line that runs args on h: ssh, its options, the
// destination and one remote command line, `agentctl --version-line ARGS…`,
// which first prints the remote agentctl's version line and then runs the
// command.
func (r *Runner) Argv(h Host, args []string, connect time.Duration) []string {
	return r.argv(h, args, connect, nil)
}

// argv is Argv with more ssh options (the control master's).
func (r *Runner) argv(h Host, args []string, connect time.Duration, opts []string) []string {
	if h.Name == Local {
		return append([]string{r.Self}, args...)
	}
	prog := h.Agentctl
	if prog == "" {
		prog = "agentctl"
	}
	secs := int(math.Ceil(connect.Seconds()))
	if secs < 1 {
		secs = 1
	}
	remote := CommandLine(append([]string{prog, "--" + VersionLineFlag}, args...))
	argv := append(append([]string{}, r.SSH...), opts...)
	// BatchMode: never ask for a password or a host key on a terminal
	// agentctl does not own; -T: no pty, the output is data; "--" so that no
	// destination is read as an option.
	return append(argv, "-o", "BatchMode=yes", "-o", fmt.Sprintf("ConnectTimeout=%d", secs), "-T", "--", h.Name, remote)
}

// Run runs agentctl args on h.
func (r *Runner) Run(ctx context.Context, h Host, c Call) Result {
	if err := CheckHost(h.Name); err != nil {
		return Result{Exit: -1, Err: &HostError{h.Name, err.Error()}}
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	var opts []string
	if h.Name != Local {
		opts = r.controlOptions(ctx, h.Name)
	}
	argv := r.argv(h, c.Args, c.ConnectTimeout, opts)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = time.Second
	cmd.Stdin = c.Stdin
	if h.Name == Local {
		cmd.Stdout, cmd.Stderr = c.Stdout, c.Stderr
		err := cmd.Run()
		res := Result{Version: r.Version, Protocol: Protocol}
		var ee *exec.ExitError
		switch {
		case ctx.Err() != nil && c.Timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded):
			res.Exit, res.Err = -1, &HostError{h.Name, fmt.Sprintf("no answer within %s", c.Timeout)}
		case errors.As(err, &ee):
			res.Exit = ee.ExitCode()
		case err != nil:
			res.Exit, res.Err = -1, &HostError{h.Name, err.Error()}
		}
		return res
	}
	sp := &splitter{out: c.Stdout, errOut: c.Stderr}
	cmd.Stdout = writerFunc(sp.writeOut)
	cmd.Stderr = writerFunc(sp.writeErr)
	err := cmd.Run()
	sp.finish()
	res := Result{Version: sp.version.Version, Protocol: sp.version.Protocol}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && c.Timeout > 0:
		res.Exit, res.Err = -1, &HostError{h.Name, fmt.Sprintf("no answer within %s (the host is slow or hangs; raise --timeout)", c.Timeout)}
	case ctx.Err() != nil:
		res.Exit, res.Err = -1, &HostError{h.Name, "interrupted"}
	case errors.As(err, &ee):
		res.Exit = ee.ExitCode()
		if !sp.seen {
			res.Exit = -1
			res.Err = &HostError{h.Name, classify(ee.ExitCode(), sp.stderr.String(), argv[0])}
		}
	case err != nil:
		res.Exit, res.Err = -1, &HostError{h.Name, fmt.Sprintf("cannot run %s: %v; install OpenSSH's client or set AGENTCTL_SSH", argv[0], err)}
	case !sp.seen:
		res.Exit, res.Err = -1, &HostError{h.Name, "agentctl there printed no version line: it is too old or not agentctl; install this version there"}
	}
	return res
}

// CheckHost refuses a destination ssh would read as an option.
func CheckHost(name string) error {
	switch {
	case name == "":
		return errors.New("empty host name")
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("host %q starts with '-': not a destination", name)
	case strings.ContainsAny(name, " \t\r\n"):
		return fmt.Errorf("host %q contains blanks: not a destination", name)
	}
	return nil
}

// classify turns a failed ssh run (no version line seen) into a cause.
func classify(code int, stderr, prog string) string {
	last := lastLine(stderr)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(stderr, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("Could not resolve hostname", "Name or service not known", "nodename nor servname", "Temporary failure in name resolution"):
		return "DNS: the host name does not resolve (" + last + ")"
	case has("Connection refused"):
		return "connection refused: no sshd listening there (" + last + ")"
	case has("Connection timed out", "Operation timed out", "timed out"):
		return "connection timed out (" + last + ")"
	case has("No route to host", "Network is unreachable"):
		return "unreachable (" + last + ")"
	case has("Host key verification failed", "REMOTE HOST IDENTIFICATION HAS CHANGED"):
		return "host key not known or changed: connect once with plain ssh to check and accept it (" + last + ")"
	case has("Permission denied", "Too many authentication failures", "Authentication failed"):
		return "ssh authentication failed: agentctl runs ssh with BatchMode, so load your key into ssh-agent or set IdentityFile in ~/.ssh/config (" + last + ")"
	case code == 127 || has("command not found", "agentctl: not found", "No such file or directory", "Unknown command: agentctl"):
		return "agentctl is not installed there (or not on the PATH of non-interactive ssh sessions): install it, or set its path in config hosts (" + last + ")"
	case code == 2 || has("flag provided but not defined"):
		return "agentctl there is too old (no --version-line): install this version there (" + last + ")"
	case code == 255:
		if last == "" {
			last = "no message"
		}
		return prog + " failed: " + last
	}
	if last == "" {
		return fmt.Sprintf("exit %d before agentctl answered", code)
	}
	return fmt.Sprintf("exit %d before agentctl answered: %s", code, last)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			if len(l) > 200 {
				l = l[:200] + "…"
			}
			return l
		}
	}
	return ""
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// versionLine is what `agentctl version --json` (and --version-line) prints.
type versionLine struct {
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
}

// splitter takes the version line off the remote stdout, and holds stderr back
// until it has been seen: before that, stderr is ssh's (or the remote shell's)
// and goes into the cause of a HostError instead.
type splitter struct {
	mu      sync.Mutex
	out     io.Writer
	errOut  io.Writer
	head    []byte // stdout before the first newline
	seen    bool   // the version line arrived
	version versionLine
	stderr  bytes.Buffer // held back, capped
}

const maxHeld = 64 << 10

func (s *splitter) writeOut(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	if !s.seen {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.head = append(s.head, p...)
			if len(s.head) > maxHeld {
				s.head = s.head[:maxHeld]
			}
			return n, nil
		}
		s.head = append(s.head, p[:i]...)
		p = p[i+1:]
		_ = json.Unmarshal(bytes.TrimSpace(s.head), &s.version)
		s.seen = true
		if s.errOut != nil && s.stderr.Len() > 0 {
			s.errOut.Write(s.stderr.Bytes())
			s.stderr.Reset()
		}
	}
	if len(p) > 0 && s.out != nil {
		if _, err := s.out.Write(p); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (s *splitter) writeErr(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen {
		if s.errOut != nil {
			return s.errOut.Write(p)
		}
		return len(p), nil
	}
	if s.stderr.Len() < maxHeld {
		s.stderr.Write(p)
	}
	return len(p), nil
}

func (s *splitter) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen && s.stderr.Len() > 0 && s.errOut != nil {
		s.errOut.Write(s.stderr.Bytes())
		s.stderr.Reset()
	}
}
