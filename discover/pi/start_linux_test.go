package pi

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover/proc"
)

func TestReadBtime(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stat")
	writeLines(t, p, "cpu  1 2 3", "intr 5", "btime 1795200000", "processes 9")
	if n, ok := readBtime(p); !ok || n != 1795200000 {
		t.Errorf("btime = %d, %v", n, ok)
	}
}

// Our own process, dated from the real /proc: started before now, not long ago.
func TestPlatformStartTimeSelf(t *testing.T) {
	p, ok := proc.Snapshot().Get(os.Getpid())
	if !ok {
		t.Skip("no /proc entry for self")
	}
	st, ok := platformStartTime()(p)
	now := time.Now()
	if !ok || st.After(now) || st.Before(now.Add(-30*time.Minute)) {
		t.Errorf("start = %v, %v; now %v", st, ok, now)
	}
}
