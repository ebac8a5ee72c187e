package harness

import (
	"bytes"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentctl/agentctl/proc"
)

// A test binary killed midway (Ctrl-C, a CI timeout, SIGKILL) runs no t.Cleanup.
// Three layers keep agents from outliving it anyway: direct children get
// Pdeathsig; SIGINT/SIGTERM/SIGHUP kill every process this binary tagged before
// exiting; and each test binary starts by killing tagged processes whose owning
// test binary is gone (what a SIGKILLed run left behind).

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// owner identifies this test binary: pid and start ticks.
func owner() string {
	p, err := proc.Lookup(os.Getpid())
	if err != nil {
		return strconv.Itoa(os.Getpid()) + ".0"
	}
	return strconv.Itoa(p.PID) + "." + strconv.FormatUint(p.StartTicks, 10)
}

// ownerAlive reports whether the test binary named in a token still runs.
func ownerAlive(o string) bool {
	pid, start, ok := strings.Cut(o, ".")
	if !ok {
		return false
	}
	n, err := strconv.Atoi(pid)
	if err != nil {
		return false
	}
	p, err := proc.Lookup(n)
	return err == nil && strconv.FormatUint(p.StartTicks, 10) == start
}

// reap SIGKILLs tagged processes for which kill(owner) is true.
func reap(kill func(owner string) bool) {
	self := os.Getpid()
	prefix := []byte(tokenVar + "=")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, prefix); ok {
				o, _, _ := strings.Cut(string(v), "-")
				if kill(o) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				break
			}
		}
	}
}

// guard reaps what dead test binaries left and arranges for this one's processes
// to die with it on a catchable signal.
func guard() {
	me := runOwner
	reap(func(o string) bool { return o != me && !ownerAlive(o) })
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-ch
		reap(func(o string) bool { return o == me })
		os.RemoveAll(binDir())
		os.Exit(128 + int(sig.(syscall.Signal)))
	}()
}
