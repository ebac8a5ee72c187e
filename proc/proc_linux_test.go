package proc

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCommWithParens(t *testing.T) {
	line := "4242 (we ird) (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 16370 1000 200 18446744073709551615\n"
	p, err := parseStat(4242, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if p.Comm != "we ird) (x)" || p.PPID != 1 || p.PGID != 4242 || p.SID != 4242 || p.StartTicks != 16370 {
		t.Errorf("got %+v", p)
	}
	if _, err := parseStat(1, []byte("garbage")); err == nil {
		t.Error("garbage parsed")
	}
}

func TestSnapshotSeesSelf(t *testing.T) {
	tab := Snapshot()
	if !tab.Available() {
		t.Skip("no /proc here")
	}
	me, ok := tab.Get(os.Getpid())
	if !ok || me.StartTicks == 0 || me.PPID != os.Getppid() {
		t.Fatalf("self = %+v ok=%v", me, ok)
	}
	fresh, err := Lookup(os.Getpid())
	if err != nil || fresh.StartTicks != me.StartTicks {
		t.Errorf("Lookup = %+v, %v", fresh, err)
	}
	if !Check(tab, ID{PID: os.Getpid(), StartTicks: me.StartTicks}).Verified || Check(tab, ID{PID: os.Getpid(), StartTicks: me.StartTicks + 1}).Alive {
		t.Error("Check does not check the start time")
	}
	if v := Check(Live(), ID{PID: os.Getpid(), StartTicks: me.StartTicks, BootID: tab.BootID()}); !v.Verified {
		t.Errorf("Live check of this process: %+v", v)
	}
	argv, err := tab.Argv(os.Getpid())
	if err != nil || len(argv) == 0 {
		t.Errorf("argv = %v, %v", argv, err)
	}
	if cwd, _ := tab.Cwd(os.Getpid()); cwd == "" {
		t.Error("no cwd")
	}
	if tab.BootID() == "" {
		t.Error("no boot id")
	}
}

func TestReadBtime(t *testing.T) {
	p := t.TempDir() + "/stat"
	if err := os.WriteFile(p, []byte("cpu  1 2 3\nintr 5\nbtime 1795200000\nprocesses 9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, ok := readBtime(p); !ok || n != 1795200000 {
		t.Errorf("btime = %d, %v", n, ok)
	}
	if _, ok := readBtime(p + ".missing"); ok {
		t.Error("missing file read")
	}
}

// Our own process, dated from the real /proc: started before now, not long ago.
func TestStartTimeSelf(t *testing.T) {
	tab := Snapshot()
	if !tab.Available() {
		t.Skip("no /proc here")
	}
	st, ok := tab.StartTime(os.Getpid())
	now := time.Now()
	if !ok || st.After(now) || st.Before(now.Add(-30*time.Minute)) {
		t.Errorf("start = %v, %v; now %v", st, ok, now)
	}
	if _, ok := tab.StartTime(-1); ok {
		t.Error("a pid not in the table has a start time")
	}
}
