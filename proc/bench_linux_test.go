package proc

import (
	"testing"

	"github.com/shirou/gopsutil/v4/process"
)

// The process-table choice (README): reading /proc ourselves vs gopsutil for the
// same facts (pid, ppid, comm, start time) over every process.
func BenchmarkSnapshot(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if t := Snapshot(); len(t.All()) == 0 {
			b.Fatal("empty")
		}
	}
}

func BenchmarkGopsutil(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ps, err := process.Processes()
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range ps {
			_, _ = p.Ppid()
			_, _ = p.Name()
			_, _ = p.CreateTime()
		}
	}
}
