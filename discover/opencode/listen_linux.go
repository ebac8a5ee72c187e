package opencode

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procListenAddrs reads the loopback TCP listeners of pid: its socket inodes
// (/proc/<pid>/fd) matched against the LISTEN rows of /proc/net/tcp and tcp6.
func procListenAddrs(pid int) []string {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	if len(inodes) == 0 {
		return nil
	}
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		out = append(out, listeners(f, inodes)...)
	}
	return out
}

// listeners parses one /proc/net/tcp* table: rows in state 0A (LISTEN) whose
// inode is wanted, as loopback host:port (a wildcard address is reached on
// loopback too).
func listeners(path string, inodes map[string]bool) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] {
			continue
		}
		host, port, ok := strings.Cut(fs[1], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseUint(port, 16, 16)
		if err != nil {
			continue
		}
		switch host {
		case "0100007F", "00000000":
			out = append(out, fmt.Sprintf("127.0.0.1:%d", p))
		case "00000000000000000000000001000000", "00000000000000000000000000000000":
			out = append(out, fmt.Sprintf("[::1]:%d", p))
		}
	}
	return out
}
