package meta

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

func TestStaleTempsRemovedByNextWriter(t *testing.T) {
	dir := t.TempDir()
	s := NewStore(dir)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Skip("no sleep(1):", err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	p := func(n string) string { return filepath.Join(dir, n) }
	mk := func(n string, age time.Duration) {
		os.WriteFile(p(n), []byte("{"), 0o600)
		tm := time.Now().Add(-age)
		os.Chtimes(p(n), tm, tm)
	}
	deadTmp := ".x.json.tmp-" + strconv.Itoa(dead.Process.Pid) + "-123"
	liveTmp := ".x.json.tmp-" + strconv.Itoa(live.Process.Pid) + "-456"
	liveOld := ".x.json.tmp-" + strconv.Itoa(live.Process.Pid) + "-789"
	legacyNew, legacyOld := ".x.json.tmp-1111", ".x.json.tmp-2222"
	other := ".y.json.tmp-" + strconv.Itoa(dead.Process.Pid) + "-1"
	mk(deadTmp, 0)
	mk(liveTmp, 0)
	mk(liveOld, time.Hour)
	mk(legacyNew, 0)
	mk(legacyOld, time.Hour)
	mk(other, 0)
	type doc struct {
		Schema int `json:"schema"`
		N      int `json:"n"`
	}
	if err := Update(s, "x.json", func(d *doc) (bool, error) { d.N++; return true, nil }); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	sort.Strings(got)
	// Kept: another file's temp, a live writer's young temp, a young temp
	// without a pid (only age removes those).
	want := []string{legacyNew, liveTmp, other, "x.json", "x.json.lock"}
	sort.Strings(want)
	if strconv.Quote(fmtList(got)) != strconv.Quote(fmtList(want)) {
		t.Fatalf("left: %q, want %q", got, want)
	}
}

func fmtList(l []string) string {
	s := ""
	for _, x := range l {
		s += x + "\n"
	}
	return s
}
