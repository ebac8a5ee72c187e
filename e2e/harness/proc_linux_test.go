package harness

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A test's cleanup must leave nothing behind, including a child that left the
// process group with setsid (as Claude's Bash tool does).
func TestCleanupKillsGroupAndEscapedChildren(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "escaped.pid")
	var leader int
	t.Run("starts processes", func(t *testing.T) {
		p := Start(t, Spec{Path: "/bin/sh", Args: []string{"-c",
			`setsid sh -c 'echo $$ > ` + pidfile + `; exec sleep 300' & sleep 300`},
			Dir: dir, Env: BaseEnv(dir, dir)})
		leader = p.PID
		Eventually(t, 5*time.Second, func() string {
			if b, _ := os.ReadFile(pidfile); len(strings.TrimSpace(string(b))) == 0 {
				return "escaped child did not start"
			}
			return ""
		})
	})
	b, _ := os.ReadFile(pidfile)
	escaped, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for _, pid := range []int{leader, escaped} {
		Eventually(t, 5*time.Second, func() string {
			if alive(pid) {
				return "pid " + strconv.Itoa(pid) + " survived the test's cleanup"
			}
			return ""
		})
	}
}

// alive is true for a running (not zombie) process.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}
