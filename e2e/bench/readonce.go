package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The "read every file once" row: the floor a cold `list -a` is measured
// against (issue 10: cold ≤ 1.5× the time to read the files once). A child
// process (this binary, -read-once-child) lists the trees a cold listing reads
// and reads every file in them through once, on GOMAXPROCS workers, each with
// one 1 MiB buffer it reuses: what a listing's reads cost with no parsing and
// no fresh memory per file. The parent times the child like an agentctl
// process (wall time, user+sys, peak RSS).

// readTree is one tree a cold listing reads: every file under Dir (recursively)
// whose name ends in Suffix; or, with Suffix empty, the one file Dir.
type readTree struct {
	Dir, Suffix string
}

// readTrees are the files each adapter's cold listing reads, by agent
// (agentctl's adapter names). OpenCode's legacy listing also reads the text
// parts of each session's first user message (storage/part/<msg>/): one
// message's parts per session, left out here.
func readTrees(home, agent string) []readTree {
	oc := filepath.Join(home, ".local/share/opencode")
	switch agent {
	case "claude-code": // transcripts and their subagents' (projects/<bucket>/<id>/subagents/)
		return []readTree{{filepath.Join(home, ".claude", "projects"), ".jsonl"}}
	case "codex": // rollouts, and the state db when there is one
		ts := []readTree{{filepath.Join(home, ".codex", "sessions"), ".jsonl"},
			{filepath.Join(home, ".codex", "archived_sessions"), ".jsonl"}}
		dbs, _ := filepath.Glob(filepath.Join(home, ".codex", "state_*.sqlite"))
		for _, db := range dbs {
			ts = append(ts, readTree{db, ""})
		}
		return ts
	case "opencode": // the database, or the legacy tree's sessions, projects and messages
		return []readTree{{filepath.Join(oc, "opencode.db"), ""},
			{filepath.Join(oc, "storage", "session"), ".json"},
			{filepath.Join(oc, "storage", "project"), ".json"},
			{filepath.Join(oc, "storage", "message"), ".json"}}
	case "pi":
		return []readTree{{filepath.Join(home, ".pi", "agent", "sessions"), ".jsonl"}}
	case "gemini": // tmp/<project>/chats/session-*.jsonl
		return []readTree{{filepath.Join(home, ".gemini", "tmp"), ".jsonl"}}
	case "qwen-code": // projects/<project>/chats/<id>.jsonl
		return []readTree{{filepath.Join(home, ".qwen", "projects"), ".jsonl"}}
	case "copilot": // session-state/<id>/events.jsonl, and each workspace.yaml
		return []readTree{{filepath.Join(home, ".copilot", "session-state"), ".jsonl"},
			{filepath.Join(home, ".copilot", "session-state"), "workspace.yaml"}}
	}
	return nil
}

var benchAgents = []string{"claude-code", "codex", "opencode", "pi", "gemini", "qwen-code", "copilot"}

// agentsIn are the agents of benchAgents whose files home holds: a cold
// listing per agent is timed only for those.
func agentsIn(home string) []string {
	var out []string
	for _, a := range benchAgents {
		for _, t := range readTrees(home, a) {
			if _, err := os.Stat(t.Dir); err == nil {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

type readOnceResult struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// readOnceChild reads every file of the agents' trees (args: home, then
// agent names) and prints a readOnceResult.
func readOnceChild(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("-read-once-child HOME AGENT…")
	}
	var trees []readTree
	for _, a := range args[1:] {
		trees = append(trees, readTrees(args[0], a)...)
	}
	// A queue of directories and files shared by the workers: a worker lists a
	// directory (queueing what is under it) or reads a file.
	type job struct {
		path, suffix string
		dir          bool
	}
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		queue   []job
		pending int // queued or running
		res     readOnceResult
		errs    []error
	)
	push := func(j ...job) {
		mu.Lock()
		queue = append(queue, j...)
		pending += len(j)
		mu.Unlock()
		cond.Broadcast()
	}
	for _, t := range trees {
		if st, err := os.Stat(t.Dir); err == nil && (st.IsDir() == (t.Suffix != "")) {
			push(job{t.Dir, t.Suffix, st.IsDir()})
		}
	}
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			files, n := 0, int64(0)
			defer func() {
				mu.Lock()
				res.Files += files
				res.Bytes += n
				mu.Unlock()
			}()
			for {
				mu.Lock()
				for len(queue) == 0 && pending > 0 {
					cond.Wait()
				}
				if pending == 0 {
					mu.Unlock()
					cond.Broadcast()
					return
				}
				j := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				mu.Unlock()
				if j.dir {
					ents, err := os.ReadDir(j.path)
					var next []job
					for _, e := range ents {
						p := filepath.Join(j.path, e.Name())
						switch {
						case e.IsDir():
							next = append(next, job{p, j.suffix, true})
						case e.Type().IsRegular() && strings.HasSuffix(e.Name(), j.suffix):
							next = append(next, job{p, j.suffix, false})
						}
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
					push(next...)
				} else if f, err := os.Open(j.path); err == nil {
					for {
						m, err := f.Read(buf)
						n += int64(m)
						if err == io.EOF || m == 0 {
							break
						}
						if err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
							break
						}
					}
					f.Close()
					files++
				}
				mu.Lock()
				pending--
				mu.Unlock()
				cond.Broadcast()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// readOnce times the child reading the agents' files once. The child runs
// twice and the second run is timed: pages this machine moved out of the page
// cache since the home was read last (it reclaims idle ones) would otherwise
// be read from disk by the first run and make the floor look higher, and the
// cold listing after it look cheaper.
//
// With -drop-caches the page cache is dropped instead, and the first run is
// timed: the floor on a cold disk.
func readOnce(home string, agents ...string) (*result, error) {
	if dropCaches {
		if err := dropPageCache(); err != nil {
			return nil, err
		}
	} else if err := exec.Command(os.Args[0], append([]string{"-read-once-child", home}, agents...)...).Run(); err != nil {
		return nil, fmt.Errorf("read once: %w", err)
	}
	cmd := exec.Command(os.Args[0], append([]string{"-read-once-child", home}, agents...)...)
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	out, err := cmd.Output()
	el := time.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("read once: %w", err)
	}
	var r readOnceResult
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("read once: %w", err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	label := "read every file once"
	if len(agents) == 1 {
		label += " (" + agents[0] + ")"
	}
	return &result{label: fmt.Sprintf("%s: %d files, %.0f MB", label, r.Files, float64(r.Bytes)/1e6),
		times: []time.Duration{el}, cpu: []time.Duration{time.Duration(ru.Utime.Nano() + ru.Stime.Nano())},
		rss: []int64{ru.Maxrss * 1024}, sessions: r.Files, readOnce: true}, nil
}

// dropPageCache writes back dirty pages and drops the clean ones, with the
// dentries and inodes (root only): the next reads come from the disk.
func dropPageCache() error {
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		return fmt.Errorf("-drop-caches: %w (it needs root)", err)
	}
	return nil
}
