package meta

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// staleTempAge bounds how long a temp file of a writer that still looks alive (or
// whose pid cannot be read: older versions wrote none) is kept: a write takes
// milliseconds, and a pid may have been reused.
const staleTempAge = 10 * time.Minute

func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// RemoveStaleTemps removes the temp files WriteFileAtomic left next to path when
// its writer was killed between create and rename (SIGKILL, power loss): those
// whose writer process is gone, and any older than staleTempAge. The next writer
// calls it under the file's flock (Update), so nothing it removes is being
// written by a live agentctl; sweep reaches every store file that way. It
// returns the names removed.
func RemoveStaleTemps(path string) []string {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		old := time.Since(info.ModTime()) > staleTempAge
		pidStr, _, ok := strings.Cut(name[len(prefix):], "-")
		pid, perr := strconv.Atoi(pidStr)
		switch {
		case old:
		case !ok || perr != nil || pid <= 0:
			continue // not ours, or an old-style name: only by age
		case pid == os.Getpid():
			continue
		case pidAlive(pid):
			continue
		}
		if os.Remove(filepath.Join(dir, name)) == nil {
			removed = append(removed, name)
		}
	}
	return removed
}

// pidAlive reports whether a process with this pid exists (EPERM: it does, and
// belongs to someone else).
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
