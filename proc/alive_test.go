package proc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheck(t *testing.T) {
	table := &Fake{Procs: []Process{{PID: 10, StartTicks: 100}}, Boot: "boot-1"}
	denied := Funcs{FindFunc: func(int) (Process, error) { return Process{}, ErrDenied }, Boot: func() string { return "boot-1" }}
	type got struct {
		Alive, Verified, Known bool
		Detail                 string
	}
	for _, tc := range []struct {
		name string
		src  Source
		id   ID
		want got
	}{
		{"verified", table, ID{10, 100, "boot-1"}, got{true, true, true, "pid 10 start_ticks=100 matches"}},
		{"no boot recorded", table, ID{10, 100, ""}, got{true, true, true, "pid 10 start_ticks=100 matches"}},
		{"recycled", table, ID{10, 99, "boot-1"}, got{false, false, true, "pid 10 was recycled (start 100, recorded 99)"}},
		{"gone", table, ID{11, 100, "boot-1"}, got{false, false, true, "pid 11 is gone"}},
		{"other boot", table, ID{10, 100, "boot-0"}, got{false, false, true, "pid 10 is from another boot"}},
		{"no pid", table, ID{0, 0, ""}, got{false, false, true, "no pid recorded"}},
		{"EPERM counts as alive", denied, ID{10, 100, "boot-1"}, got{true, false, true, "pid 10 exists but may not be inspected; counted alive"}},
		{"no process table", &Fake{NoProcs: true}, ID{10, 100, ""}, got{false, false, false, "no process table"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.src, tc.id)
			if d := cmp.Diff(tc.want, got{v.Alive, v.Verified, v.Known, v.Detail}); d != "" {
				t.Errorf("Check(%+v) (-want +got):\n%s", tc.id, d)
			}
		})
	}
}
