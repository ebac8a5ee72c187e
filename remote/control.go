package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Connection reuse (README "Several machines"): every ssh agentctl starts
// shares one connection per host through OpenSSH's control master
// (ControlMaster=auto, ControlPersist), its socket in a 0700 directory of
// agentctl's own, so that `list --watch`, `notify --follow` and one command
// after another pay one handshake per host, not one per call. A host for
// which the user's own ssh configuration names a ControlPath keeps it: the
// user already chose how connections are shared.

// ControlPersist is how long an idle control master stays up.
const ControlPersist = 10 * time.Minute

// maxSocketDir is the longest directory a control socket may live in: a unix
// socket path holds at most 104 bytes (macOS; Linux 108), and the socket's
// name is a hash (40, SocketName) to which ssh appends, while it creates the
// socket, a temporary suffix (17).
const maxSocketDir = 104 - 1 - 40 - 17 - 1

// ControlDir makes (or checks) the directory of the control sockets for the
// state directory stateDir: stateDir/ssh when its path is short enough for a
// socket, else a directory in /tmp named after stateDir ($TMPDIR may be as
// long as the state dir).
// It must be a directory of this user's with mode 0700, not a link: anyone who
// can write in it could slip a socket of theirs in and see every command.
func ControlDir(stateDir string) (string, error) {
	dir := filepath.Join(stateDir, "ssh")
	if len(dir) > maxSocketDir {
		sum := sha256.Sum256([]byte(stateDir))
		dir = filepath.Join("/tmp", fmt.Sprintf("agentctl-ssh-%d-%s", os.Getuid(), hex.EncodeToString(sum[:5])))
	}
	if len(dir) > maxSocketDir {
		return "", fmt.Errorf("%s: too long a path for a control socket", dir)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return "", fmt.Errorf("%s is not a directory", dir)
	case fi.Mode().Perm() != 0o700:
		return "", fmt.Errorf("%s has mode %o, want 0700: remove it and agentctl makes it again", dir, fi.Mode().Perm())
	case ok && int(st.Uid) != os.Getuid():
		return "", fmt.Errorf("%s belongs to another user (uid %d): remove it", dir, st.Uid)
	}
	return dir, nil
}

// controls remembers, per host, the ssh options that share its connection
// (none when the user's configuration sets a ControlPath, or when ssh cannot
// say: a client that is not OpenSSH's).
type controls struct {
	mu   sync.Mutex
	opts map[string][]string
}

// controlOptions are the options that make the call to h share its host's
// connection. Whether the user's configuration sets a control path of its own
// takes `ssh -G` (the configuration that applies, nothing sent over the
// network; ~7 ms of CPU, a process per host and command): it is asked once
// per host and Runner, and not at all while agentctl's own socket for the
// host is there — agentctl made it, so the user's configuration set none then
// (a ControlPath added since is honoured once that master has gone idle for
// ControlPersist).
func (r *Runner) controlOptions(ctx context.Context, h string) []string {
	if r.ControlDir == "" {
		return nil
	}
	r.ctl.mu.Lock()
	defer r.ctl.mu.Unlock()
	if o, ok := r.ctl.opts[h]; ok {
		return o
	}
	if r.ctl.opts == nil {
		r.ctl.opts = map[string][]string{}
	}
	sock := filepath.Join(r.ControlDir, SocketName(r.SSH, h))
	var o []string
	if isSocket(sock) || !r.userControlPath(ctx, h) {
		o = []string{"-o", "ControlMaster=auto", "-o", fmt.Sprintf("ControlPersist=%d", int(ControlPersist.Seconds())),
			"-o", "ControlPath=" + sock}
	}
	r.ctl.opts[h] = o
	return o
}

// SocketName is the name of the control socket for host h reached with the
// ssh command line sshArgv: a hash of both (as long as ssh's own %C), so that
// another ssh configuration (AGENTCTL_SSH="ssh -F …") gets its own master.
func SocketName(sshArgv []string, h string) string {
	sum := sha256.Sum256([]byte(strings.Join(append(append([]string{}, sshArgv...), h), "\x00")))
	return hex.EncodeToString(sum[:20])
}

func isSocket(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// userControlPath reports whether the user's ssh configuration for h sets a
// control path of its own, or ssh cannot tell (then agentctl adds nothing).
func (r *Runner) userControlPath(ctx context.Context, h string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	argv := append(append([]string{}, r.SSH...), "-G", "--", h)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		return true
	}
	return HasControlPath(string(out))
}

// HasControlPath reports whether `ssh -G` output sets a control path (ssh
// prints the line only when one is set, and not for ControlPath none).
func HasControlPath(sshG string) bool {
	for _, l := range strings.Split(sshG, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), " ")
		if strings.EqualFold(k, "controlpath") && v != "" && v != "none" {
			return true
		}
	}
	return false
}
