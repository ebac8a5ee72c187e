package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The "10 live sessions" case of `list` (alive only): Codex threads whose
// writer lock is held, the way Codex holds it (docs/agents/codex.md §4: a flock
// on thread-writer-locks/<id>.lock), by processes in agentctl's PID namespace.
// The generated home stays read-only: agentctl reads a home of symbolic links
// to it whose .codex/thread-writer-locks is a real folder (the home's stale
// lock files, plus one per live thread).

const liveThreads = 10

// liveHome builds that home under dir and returns it with the lock files of
// the newest liveThreads rollouts.
func liveHome(home, dir string) (string, []string, error) {
	lh := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(lh, ".codex", "thread-writer-locks"), 0o755); err != nil {
		return "", nil, err
	}
	top, err := os.ReadDir(home)
	if err != nil {
		return "", nil, err
	}
	for _, e := range top {
		if e.Name() != ".codex" {
			if err := os.Symlink(filepath.Join(home, e.Name()), filepath.Join(lh, e.Name())); err != nil {
				return "", nil, err
			}
		}
	}
	codex := filepath.Join(home, ".codex")
	ents, err := os.ReadDir(codex)
	if err != nil {
		return "", nil, err
	}
	for _, e := range ents {
		if e.Name() != "thread-writer-locks" {
			if err := os.Symlink(filepath.Join(codex, e.Name()), filepath.Join(lh, ".codex", e.Name())); err != nil {
				return "", nil, err
			}
		}
	}
	lockDir := filepath.Join(lh, ".codex", "thread-writer-locks")
	stale, _ := os.ReadDir(filepath.Join(codex, "thread-writer-locks"))
	for _, e := range stale {
		if err := os.WriteFile(filepath.Join(lockDir, e.Name()), nil, 0o644); err != nil {
			return "", nil, err
		}
	}
	var ids []string
	filepath.WalkDir(filepath.Join(codex, "sessions"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			if base := strings.TrimSuffix(d.Name(), ".jsonl"); len(base) > 36 {
				ids = append(ids, base)
			}
		}
		return nil
	})
	sort.Strings(ids) // rollout-<local time>-<id>: oldest first
	var locks []string
	for i := len(ids) - 1; i >= 0 && len(locks) < liveThreads; i-- {
		p := filepath.Join(lockDir, ids[i][len(ids[i])-36:]+".lock")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return "", nil, err
		}
		locks = append(locks, p)
	}
	return lh, locks, nil
}

// measureLive times `list --json` (alive only) runs times with liveThreads
// held locks. As root with unshare, it runs in a PID namespace of its own
// (-isolate): this program again as its init (liveChild), which starts the
// lock holders, then agentctl and reports each run's times.
func measureLive(home, bin, state string, runs int) (*result, error) {
	dir, err := os.MkdirTemp("", "agentctl-bench-live")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	lh, locks, err := liveHome(home, dir)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	argv := []string{self, "-live-child", lh, bin, state, strconv.Itoa(runs)}
	argv = append(argv, locks...)
	if isolate {
		argv = append([]string{"unshare", "--fork", "--pid", "--mount-proc"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("live sessions: %w", err)
	}
	r := &result{label: fmt.Sprintf("list (alive only, %d live)", liveThreads)}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var wall, cpu, rss int64
		var n int
		if _, err := fmt.Sscan(sc.Text(), &wall, &cpu, &rss, &n); err != nil {
			continue
		}
		r.add(time.Duration(wall), time.Duration(cpu), rss)
		r.sessions = n
	}
	if len(r.times) == 0 {
		return nil, fmt.Errorf("live sessions: no runs reported:\n%s", out)
	}
	if r.sessions != liveThreads {
		return nil, fmt.Errorf("live sessions: agentctl listed %d alive sessions, want %d", r.sessions, liveThreads)
	}
	r.sort()
	return r, nil
}

// liveChild is `-live-child HOME BIN STATE RUNS LOCK…`: hold each lock in a
// process of its own, run `agentctl list --json` RUNS times, print "wall cpu
// rss sessions" per run, release the locks.
func liveChild(args []string) error {
	if len(args) < 4 {
		return fmt.Errorf("-live-child HOME BIN STATE RUNS LOCK…")
	}
	home, bin, state := args[0], args[1], args[2]
	runs, err := strconv.Atoi(args[3])
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var holders []*exec.Cmd
	defer func() {
		for _, h := range holders {
			h.Process.Kill()
			h.Wait()
		}
	}()
	for _, lock := range args[4:] {
		h := exec.Command(self, "-hold-lock", lock)
		out, err := h.StdoutPipe()
		if err != nil {
			return err
		}
		if err := h.Start(); err != nil {
			return err
		}
		holders = append(holders, h)
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
			return fmt.Errorf("lock holder for %s: %q %v", lock, line, err)
		}
	}
	for i := 0; i < runs; i++ {
		cmd := exec.Command(bin, "--home", home, "list", "--json")
		cmd.Env = append(os.Environ(), "AGENTCTL_HOME="+state, "HOME="+home, "NO_COLOR=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t0 := time.Now()
		out, err := cmd.Output()
		wall := time.Since(t0)
		if err != nil {
			return fmt.Errorf("agentctl list: %v\n%s", err, stderr.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := ru.Utime.Nano() + ru.Stime.Nano()
		fmt.Println(int64(wall), cpu, ru.Maxrss*1024, bytes.Count(out, []byte("\n  {\n")))
	}
	return nil
}

// holdLock is `-hold-lock PATH`: take the flock Codex takes, say so, and keep
// it until killed.
func holdLock(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	fmt.Println("locked")
	for {
		time.Sleep(time.Hour)
		runtime.KeepAlive(f) // a collected *os.File closes its descriptor, and the lock with it
	}
}
