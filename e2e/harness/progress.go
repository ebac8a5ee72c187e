package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Waits that follow the agent's own progress rather than a fixed deadline: on a
// fresh, busy machine (load 5–20 on two cores) an OpenClaw gateway took ~60 s to
// listen and an OpenCode run over 30 s to send its first model request, while a
// wedged agent is still caught within a minute, because it stops using CPU time
// and stops writing.

// Stall is how long a process may show no progress (no CPU time used by its
// process group, nothing written to stdout or stderr) before a progress wait
// gives up; Patience caps a progress wait whatever the progress.
const (
	Stall    = 60 * time.Second
	Patience = 10 * time.Minute
)

// WaitFor polls cond every 250 ms until it returns "" (ready). It fails the test
// when the process exits first, when the process shows no progress for Stall,
// or after Patience; the last answer of cond says what was missing.
func (p *Proc) WaitFor(t testing.TB, what string, cond func() string) {
	t.Helper()
	if err := p.waitFor(t, what, Stall, Patience, cond); err != nil {
		t.Fatal(err)
	}
}

// ExitedError is WaitFor's failure when the process exited first.
type ExitedError struct{ msg string }

func (e *ExitedError) Error() string { return e.msg }

func (p *Proc) waitFor(t testing.TB, what string, stall, patience time.Duration, cond func() string) error {
	start := time.Now()
	last, lastAt, checked := p.progress(), start, start
	for {
		why := cond()
		if why == "" {
			if d := time.Since(start); d > 30*time.Second {
				t.Logf("%s after %s (the process kept making progress)", what, d.Round(100*time.Millisecond))
			}
			return nil
		}
		select {
		case <-p.done:
			if why = cond(); why == "" {
				return nil
			}
			return &ExitedError{fmt.Sprintf("%s: process exited (code %d) first: %s\nstdout:\n%s\nstderr:\n%s",
				what, p.ExitCode(), why, Tail(p.Stdout(), 30), Tail(p.Stderr(), 30))}
		case <-time.After(250 * time.Millisecond):
		}
		now := time.Now()
		if now.Sub(checked) < time.Second {
			continue // reading every process's stat is not free on a busy machine
		}
		checked = now
		if cur := p.progress(); cur != last {
			last, lastAt = cur, now
		}
		switch {
		case now.Sub(lastAt) > stall:
			return fmt.Errorf("%s: no progress for %s (no CPU time used, nothing written) after %s: %s\nstdout:\n%s\nstderr:\n%s",
				what, stall, now.Sub(start).Round(time.Second), why, Tail(p.Stdout(), 30), Tail(p.Stderr(), 30))
		case now.Sub(start) > patience:
			return fmt.Errorf("%s: not after %s, although the process kept working: %s\nstdout:\n%s",
				what, patience, why, Tail(p.Stdout(), 30))
		}
	}
}

// progress is what changes while the process gets somewhere: the CPU time of
// its process group and the size of its output.
func (p *Proc) progress() string {
	var out, errb int64
	if st, err := os.Stat(p.StdoutPath); err == nil {
		out = st.Size()
	}
	if st, err := os.Stat(p.StderrPath); err == nil {
		errb = st.Size()
	}
	return fmt.Sprintf("%d/%d/%d", groupCPU(p.PID), out, errb)
}

// groupCPU is the user+system CPU time, in clock ticks, of every process in
// process group pgid (the agent and what it spawned), reaped children
// included; 0 where /proc is not there.
func groupCPU(pgid int) int64 {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var sum int64
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 > len(b) {
			continue
		}
		// After "pid (comm) ": state ppid pgrp … utime(14) stime cutime cstime.
		fs := strings.Fields(string(b[i+2:]))
		if len(fs) < 15 || fs[2] != strconv.Itoa(pgid) {
			continue
		}
		for _, k := range fs[11:15] {
			n, _ := strconv.ParseInt(k, 10, 64)
			sum += n
		}
	}
	return sum
}
