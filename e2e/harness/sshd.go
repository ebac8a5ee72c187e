package harness

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/remote"
)

// SSHNet is a set of real OpenSSH servers on 127.0.0.1, each standing for one
// machine, and the ssh_config that names them: agentctl reaches them with
// AGENTCTL_SSH="ssh -F <Config>", the way a user's ~/.ssh/config names hosts.
// Every server has its own temp host key, accepts one temp client key, and
// runs every command through a ForceCommand wrapper that gives it the host's
// own environment (HOME, AGENTCTL_HOME, PATH with agentctl first).
type SSHNet struct {
	Dir    string // keys, configs, logs
	Config string // the ssh_config (ssh -F)
	key    string
	blocks []string
}

// SSHD is one server: one "machine".
type SSHD struct {
	Name string
	Port int
	Env  Env // what its commands run with
	Log  string
	cmd  *exec.Cmd
	conf string
	logf *os.File
}

// launch starts sshd and waits until it listens.
func (s *SSHD) launch(t testing.TB) {
	t.Helper()
	logf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	s.logf = logf
	// -D: stay in the foreground (the test owns it); -e: log to stderr.
	s.cmd = exec.Command(sshdPath, "-D", "-e", "-f", s.conf)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(s.Log)
			t.Fatalf("sshd for %s did not listen on port %d: %v\n%s", s.Name, s.Port, err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop kills sshd and the connections it serves (a machine going down):
// each connection's sshd leaves the listener's process group (setsid), so
// they are found by parent.
func (s *SSHD) stop() {
	if s.cmd == nil {
		return
	}
	for _, pid := range descendants(s.cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.logf.Close()
	s.cmd = nil
}

// Down takes the machine off the net: sshd stops, its port refuses.
func (s *SSHD) Down(t testing.TB) {
	t.Helper()
	s.stop()
}

// Up brings it back on the same port, with the same keys and home.
func (s *SSHD) Up(t testing.TB) {
	t.Helper()
	s.launch(t)
}

// NewSSHNet makes the client key and an empty ssh_config; it skips (or fails
// under AGENTCTL_E2E=require) without OpenSSH's sshd.
func NewSSHNet(t testing.TB) *SSHNet {
	t.Helper()
	for _, b := range []string{sshdPath, "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(b); err != nil {
			if os.Getenv("AGENTCTL_E2E") == "require" {
				t.Fatalf("%s not found: install openssh-server and openssh-client (.ci/run does)", b)
			}
			t.Skipf("%s not found: install openssh-server and openssh-client to run the several-machines tests", b)
		}
	}
	// sshd refuses to start without its privilege separation directory.
	if _, err := os.Stat("/run/sshd"); err != nil {
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Skipf("sshd needs /run/sshd: %v", err)
		}
	}
	n := &SSHNet{Dir: TempDir(t)}
	n.Config = filepath.Join(n.Dir, "ssh_config")
	n.key = filepath.Join(n.Dir, "id_ed25519")
	keygen(t, n.key)
	n.writeConfig(t)
	return n
}

const sshdPath = "/usr/sbin/sshd"

// SSHCommand is the AGENTCTL_SSH value that reaches this net's hosts.
func (n *SSHNet) SSHCommand() string { return "ssh -F " + remote.Quote(n.Config) }

func keygen(t testing.TB, path string) {
	t.Helper()
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "agentctl-e2e", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
}

func (n *SSHNet) addBlock(t testing.TB, name string, port int) {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	n.blocks = append(n.blocks, fmt.Sprintf(`Host %s
  HostName 127.0.0.1
  Port %d
  User %s
`, name, port, u.Username))
	n.writeConfig(t)
}

func (n *SSHNet) writeConfig(t testing.TB) {
	t.Helper()
	// Only this file: nothing from the developer's ~/.ssh (keys, agent,
	// known hosts, ControlMaster) takes part.
	global := fmt.Sprintf(`Host *
  IdentityFile %s
  IdentitiesOnly yes
  IdentityAgent none
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  GlobalKnownHostsFile /dev/null
  ControlMaster no
  ControlPath none
  LogLevel ERROR
`, n.key)
	cfg := strings.Join(n.blocks, "\n") + "\n" + global
	if err := os.WriteFile(n.Config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Start starts a real sshd standing for the machine name: every command it
// runs gets exactly env (HOME, AGENTCTL_HOME, PATH … ; env's PATH should hold
// agentctl), through a ForceCommand wrapper that hands the client's command
// line to /bin/sh -c as a login shell would.
func (n *SSHNet) Start(t testing.TB, name string, env Env) *SSHD {
	t.Helper()
	dir := filepath.Join(n.Dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	hostKey := filepath.Join(dir, "host_ed25519")
	keygen(t, hostKey)
	pub, err := os.ReadFile(n.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(auth, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var w strings.Builder
	w.WriteString("#!/bin/sh\n# ForceCommand: this machine's environment, then the client's command.\n")
	for _, k := range keys {
		fmt.Fprintf(&w, "export %s=%s\n", k, remote.Quote(env[k]))
	}
	w.WriteString("cd \"$HOME\" || exit 1\nexec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\n")
	wrapper := filepath.Join(dir, "wrapper")
	if err := os.WriteFile(wrapper, []byte(w.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cfg := filepath.Join(dir, "sshd_config")
	conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
ForceCommand %s
LogLevel VERBOSE
MaxStartups 100
SetEnv SHLVL=1
`, port, hostKey, auth, filepath.Join(dir, "sshd.pid"), wrapper)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &SSHD{Name: name, Port: port, Env: env, Log: filepath.Join(dir, "sshd.log"), conf: cfg}
	s.launch(t)
	t.Cleanup(s.stop)
	n.addBlock(t, name, port)
	return s
}

// Accepted is how many ssh connections this server has authenticated so far
// (sshd logs each at LogLevel VERBOSE: "Accepted publickey for …"; a bare TCP
// probe is not one).
func (s *SSHD) Accepted(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(s.Log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "Accepted publickey for ")
}

// AddBlock adds lines to the ssh_config block of host name (as a user's own
// ~/.ssh/config might: a ControlPath of theirs).
func (n *SSHNet) AddBlock(t testing.TB, name, lines string) {
	t.Helper()
	for i, b := range n.blocks {
		if strings.HasPrefix(b, "Host "+name+"\n") {
			n.blocks[i] = b + lines
		}
	}
	n.writeConfig(t)
}

// AddClosed names a host whose port nothing listens on.
func (n *SSHNet) AddClosed(t testing.TB, name string) {
	t.Helper()
	n.addBlock(t, name, freePort(t))
}

// AddHanging names a host whose port accepts connections and never says a
// word (a wedged machine).
func (n *SSHNet) AddHanging(t testing.TB, name string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			go bufio.NewReader(c).WriteTo(discard{})
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	n.addBlock(t, name, l.Addr().(*net.TCPAddr).Port)
}

// descendants are the processes below pid, read from /proc.
func descendants(pid int) []int {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			kids[pp] = append(kids[pp], p)
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, k := range kids[p] {
			out = append(out, k)
			walk(k)
		}
	}
	walk(pid)
	return out
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// HostEnv is the environment of one "machine" whose agent files live under
// home: BaseEnv plus its own agentctl state, with agentctl's directory first
// on PATH (a machine where agentctl is installed).
func HostEnv(t testing.TB, home string) Env {
	t.Helper()
	bin := AgentctlBin(t)
	return BaseEnv(home, TempDir(t), filepath.Dir(bin)).Merge(Env{
		"AGENTCTL_HOME": filepath.Join(TempDir(t), "agentctl-state"),
		"NO_COLOR":      "1",
	})
}
