package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/copilot"
	"github.com/agentctl/agentctl/discover/gemini"
	"github.com/agentctl/agentctl/discover/qwen"
	"github.com/agentctl/agentctl/e2e/synth"
	"github.com/agentctl/agentctl/proc"
)

// watchOpens counts, through inotify, every open of a directory or file under
// root (a directory listing opens its directory): the kernel's count, whatever
// code path agentctl takes (os.ReadDir and os.Stat included, which the
// agentfs hook does not see).
func watchOpens(t *testing.T, root string) func() int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		_, err = unix.InotifyAddWatch(fd, p, unix.IN_OPEN|unix.IN_ACCESS)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n := 0
		buf := make([]byte, 64<<10)
		for {
			k, err := unix.Read(fd, buf)
			if k <= 0 || err != nil {
				return n
			}
			for off := 0; off+unix.SizeofInotifyEvent <= k; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				n++
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
	count() // the walk's own listings
	return count
}

// TestAliveOnlyReadsNoHistoryNewAgents: `list` without -a, with no process of
// Gemini CLI, Qwen Code or Copilot CLI running and no launch record of theirs,
// opens nothing under their session stores — not a file, not a folder
// listing — whatever the history's size (README "Performance": alive-only
// listings cost the same at any size). Each store holds 40 synthetic
// sessions; the process table holds other programs (a node running another
// script among them: Gemini and Qwen run under node).
func TestAliveOnlyReadsNoHistoryNewAgents(t *testing.T) {
	home := t.TempDir()
	for _, w := range []func(string, int, int64) error{synth.WriteGeminiHome, synth.WriteQwenHome, synth.WriteCopilotHome} {
		if err := w(home, 40, 1); err != nil {
			t.Fatal(err)
		}
	}
	procs := &proc.Fake{Boot: "boot-1", Procs: []proc.Process{{PID: 700, Comm: "bash"}, {PID: 701, Comm: "node"}, {PID: 702, Comm: "MainThread"}},
		Args: map[int][]string{701: {"node", "/srv/app/server.js"}, 702: {"/usr/bin/python3", "x.py"}},
		Exes: map[int]string{701: "/usr/bin/node", 702: "/usr/bin/python3"}}
	for _, tc := range []struct {
		a     discover.Adapter
		store string
	}{
		{gemini.New(), filepath.Join(home, ".gemini", "tmp")},
		{qwen.New(), filepath.Join(home, ".qwen", "projects")},
		{copilot.New(), filepath.Join(home, ".copilot", "session-state")},
	} {
		t.Run(tc.a.Name(), func(t *testing.T) {
			env := &discover.Env{Home: home, Getenv: func(string) string { return "" }, Procs: procs, Now: time.Now,
				StateDir: t.TempDir(), OnlyAlive: true}
			full, err := tc.a.Discover(context.Background(), &discover.Env{Home: home, Getenv: env.Getenv, Procs: procs, Now: time.Now, StateDir: t.TempDir()})
			if err != nil || len(full) != 40 {
				t.Fatalf("the full listing has %d sessions (%v), want 40", len(full), err)
			}
			count := watchOpens(t, tc.store)
			ss, err := tc.a.Discover(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != 0 {
				t.Errorf("alive-only listing shows %d sessions; none is alive", len(ss))
			}
			if n := count(); n != 0 {
				t.Errorf("alive-only listing with no %s process opened or read under %s %d times; want none", tc.a.Name(), tc.store, n)
			}
		})
	}
}
