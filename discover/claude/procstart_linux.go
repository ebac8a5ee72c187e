package claude

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/discover/proc"
)

// defaultStartMillis turns field 22 (clock ticks since boot; CLK_TCK is 100 on
// every Linux agentctl supports) into epoch ms using btime from /proc/stat, read
// at most once per adapter call.
func defaultStartMillis() startMillis {
	btime := sync.OnceValues(func() (int64, bool) {
		f, err := os.Open("/proc/stat")
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
	})
	return func(p proc.Process) (int64, bool) {
		bt, ok := btime()
		if !ok {
			return 0, false
		}
		return bt*1000 + int64(p.StartTicks)*10, true
	}
}
