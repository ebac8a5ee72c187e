package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// killTagged SIGKILLs every process whose environment holds tag (KEY=value).
// Processes that called setsid or were orphaned keep their environment, so this
// finds what a process-group kill misses.
func killTagged(tag string) {
	want := []byte(tag)
	self := os.Getpid()
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
			if bytes.Equal(kv, want) {
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
		}
	}
}
