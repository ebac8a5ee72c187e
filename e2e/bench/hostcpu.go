package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Where the CPU of a warm run across hosts goes (-hosts): every "machine"
// runs on this one, so the CPU of all of them is measured here, in three
// parts:
//   - local: agentctl on this side and the ssh clients it waited for (its
//     rusage, which counts reaped children);
//   - masters: the ssh control masters (one per host, daemons of their own
//     once ControlPersist backgrounds them), which relay every call;
//   - remote: everything the sshd servers run: each connection's sshd, the
//     session it forks for a call, the login shell and agentctl there.
// The last two are read from /proc before and after the warm runs: each live
// process's own time (schedstat, in nanoseconds) and its reaped children's
// (cutime and cstime, in clock ticks).

// clockTick is USER_HZ, the unit of /proc/PID/stat's times (100 on Linux).
const clockTick = 10 * time.Millisecond

type procStat struct {
	ppid int
	comm string
	cpu  time.Duration // utime + stime + cutime + cstime
}

// procTable reads every process's stat line.
func procTable() map[int]procStat {
	out := map[int]procStat{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(string(b[j+1:]))
		// After "(comm)": state ppid … utime(14) stime cutime cstime, 1-based
		// fields of the whole line; f[0] is field 3.
		if len(f) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		var ticks int64
		for _, k := range []int{11, 12, 13, 14} {
			v, _ := strconv.ParseInt(f[k], 10, 64)
			ticks += v
		}
		cpu := time.Duration(ticks) * clockTick
		// The process's own time in nanoseconds (schedstat: a master relays a
		// call in less than a tick); its reaped children's only in ticks.
		if sb, err := os.ReadFile(filepath.Join("/proc", e.Name(), "schedstat")); err == nil {
			if sf := strings.Fields(string(sb)); len(sf) > 0 {
				if ns, err := strconv.ParseInt(sf[0], 10, 64); err == nil {
					var child int64
					for _, k := range []int{13, 14} {
						v, _ := strconv.ParseInt(f[k], 10, 64)
						child += v
					}
					cpu = time.Duration(ns) + time.Duration(child)*clockTick
				}
			}
		}
		out[pid] = procStat{ppid: ppid, comm: string(b[i+1 : j]), cpu: cpu}
	}
	return out
}

// cpuSnapshot is the CPU so far of the sshd servers this process started
// (and everything under them) and of the control masters under dir.
type cpuSnapshot struct{ remote, masters time.Duration }

func snapshotCPU(controlDir string) cpuSnapshot {
	procs := procTable()
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var s cpuSnapshot
	var walk func(pid int)
	walk = func(pid int) {
		s.remote += procs[pid].cpu
		for _, c := range children[pid] {
			walk(c)
		}
	}
	for _, c := range children[os.Getpid()] {
		if procs[c].comm == "sshd" {
			walk(c)
		}
	}
	for pid, p := range procs {
		if p.comm != "ssh" {
			continue
		}
		// A master's title is "ssh: DIR/SOCKET [mux]".
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(controlDir)) {
			s.masters += p.cpu
		}
	}
	return s
}
