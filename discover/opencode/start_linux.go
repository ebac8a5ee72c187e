package opencode

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover/proc"
)

// clkTck is USER_HZ, the unit of /proc/<pid>/stat field 22; 100 on every Linux
// architecture agentctl builds for.
const clkTck = 100

// platformStartTime converts start ticks to wall time (opencode.md §4.1: start ms =
// btime × 1000 + start_ticks × 10). btime is whole seconds, so the result can be up
// to 1 s early, never late; the 2 s attribution slack covers that.
func platformStartTime() func(proc.Process) (time.Time, bool) {
	btime, ok := readBtime("/proc/stat")
	return func(p proc.Process) (time.Time, bool) {
		if !ok {
			return time.Time{}, false
		}
		return time.UnixMilli(btime*1000 + int64(p.StartTicks)*1000/clkTck), true
	}
}

func readBtime(path string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
