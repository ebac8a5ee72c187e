package harness

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A progress wait gives up on a process that neither uses CPU time nor writes
// within the stall, keeps waiting for one that works (until its patience), and
// says so when the process exits first.
func TestWaitForFollowsProgress(t *testing.T) {
	never := func() string { return "not yet" }
	cases := []struct {
		name, script string
		want         string
		exited       bool
	}{
		{"idle process stalls", "sleep 30", "no progress for 1s", false},
		{"busy process is waited for until patience", "while :; do :; done", "although the process kept working", false},
		{"writing process is waited for until patience", "while :; do echo tick; sleep 0.3; done", "although the process kept working", false},
		{"exit first", "exit 3", "process exited (code 3) first", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Start(t, Spec{Path: "/bin/sh", Args: []string{"-c", tc.script}, Env: Env{"PATH": "/usr/bin:/bin"}})
			start := time.Now()
			err := p.waitFor(t, "ready", time.Second, 2500*time.Millisecond, never)
			var ex *ExitedError
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &ex) != tc.exited {
				t.Fatalf("after %s: %v; want an error containing %q (exited %v)", time.Since(start).Round(100*time.Millisecond), err, tc.want, tc.exited)
			}
		})
	}
	// Ready at once: no error whatever the process does.
	p := Start(t, Spec{Path: "/bin/sh", Args: []string{"-c", "sleep 30"}, Env: Env{"PATH": "/usr/bin:/bin"}})
	if err := p.waitFor(t, "ready", time.Second, time.Second, func() string { return "" }); err != nil {
		t.Fatal(err)
	}
}
