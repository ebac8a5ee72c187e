// Command bench is the whole-process benchmark: it generates a synthetic home
// (thousands of agent sessions, transcripts of 10 KB to 50 MB), builds agentctl,
// warms the page cache and the parse index, then times real `agentctl` processes
// and reports wall time and peak RSS per command (median and max of -runs).
//
//	go run ./e2e/bench -home /tmp/agentctl-bench -claude 10000
//
// -layout legacy writes the layouts whose lookups used to read the whole
// history: OpenCode's JSON storage/ tree (OpenCode before 1.2) and Codex
// rollouts without a state db or thread-writer locks. -scale 100,1000,10000 generates one home per size
// (that many sessions per agent) and prints one table with a column per size.
// Before the cold listing, a child reads every file that listing reads once
// (readonce.go): the floor the cold listing is compared with (the ratio is
// printed under the table); -cold-per-agent does the same per adapter;
// -cold-runs repeats each pair (medians), -drop-caches reads both from the disk.
// With -scale, the growth lines time each one-session command on the smallest
// and the largest home in turn (-growth-runs rounds).
// As root, each agentctl runs in a PID namespace of its own (-isolate), so that
// agent processes others run on the machine do not change what it reads.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/e2e/synth"
)

// isolate runs agentctl under unshare (see -isolate).
var isolate bool

// coldPerAgent adds a cold listing per adapter (see -cold-per-agent).
var coldPerAgent bool

// growthRuns is how many interleaved rounds the growth lines take (see
// -growth-runs).
var growthRuns = 41

// dropCaches drops the page cache before every cold listing and its floor
// (see -drop-caches).
var dropCaches bool

// coldRuns is how many times each cold listing and its floor run (see -cold-runs).
var coldRuns = 3

func haveUnshare() bool {
	_, err := exec.LookPath("unshare")
	return err == nil
}

type spec struct {
	claude, big, codex, opencode, pi int
	legacy                           bool // OpenCode storage/ tree, Codex without a db
	gemini, qwen, copilot            int
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "-live-child" {
		if err := liveChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "-host-home-child" {
		if err := hostHomeChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "-read-once-child" {
		if err := readOnceChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "-hold-lock" {
		if err := holdLock(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	home := flag.String("home", filepath.Join(os.TempDir(), "agentctl-bench-home"), "synthetic home (generated if missing)")
	nClaude := flag.Int("claude", 10000, "Claude Code sessions (all but -big are 10–300 KB)")
	big := flag.Int("big", 20, "of which this many are 5–50 MB")
	nCodex := flag.Int("codex", 0, "Codex threads (rollouts + state db; -layout legacy: no db)")
	nOpenCode := flag.Int("opencode", 0, "OpenCode sessions (one opencode.db; -layout legacy: the storage/ tree)")
	nPi := flag.Int("pi", 0, "Pi sessions")
	nGemini := flag.Int("gemini", 0, "Gemini CLI sessions")
	nQwen := flag.Int("qwen", 0, "Qwen Code sessions")
	nCopilot := flag.Int("copilot", 0, "GitHub Copilot CLI sessions")
	layout := flag.String("layout", "native", "native (today's stores) or legacy (OpenCode storage/ tree, Codex without state db or thread-writer locks)")
	scale := flag.String("scale", "", "comma-separated sessions per agent (e.g. 100,1000,10000): one home per size, -home is the prefix")
	runs := flag.Int("runs", 10, "timed runs per command")
	bin := flag.String("bin", "", "agentctl binary (built from this module when empty)")
	flag.BoolVar(&isolate, "isolate", os.Geteuid() == 0 && haveUnshare(), "run each agentctl in a PID namespace of its own (root, Linux): agents other people run on the machine are then not alive to it, so `list` and status read what the home holds and nothing else")
	flag.BoolVar(&coldPerAgent, "cold-per-agent", false, "also time a cold `list -a --adapter X` per agent, each after reading that agent's files once")
	flag.IntVar(&coldRuns, "cold-runs", coldRuns, "times each cold listing (with an empty state dir) and its read-once floor run, alternating; their medians are shown")
	flag.IntVar(&growthRuns, "growth-runs", growthRuns, "-scale: rounds of each one-session command on the smallest and the largest home in turn, for the growth lines (trimmed mean)")
	flag.BoolVar(&dropCaches, "drop-caches", false, "drop the page cache (root) before each cold listing and its read-once floor: both then read from the disk")
	hostsList := flag.String("hosts", "", "comma-separated host counts (e.g. 1,8,32): time list and usage --hosts all over that many loopback sshd hosts (hosts.go)")
	hostSessions := flag.Int("host-sessions", 200, "-hosts: Claude Code sessions in each host's home")
	generateOnly := flag.Bool("generate-only", false, "generate the home and exit (run in a child, so this process stays small)")
	flag.Parse()
	if *layout != "native" && *layout != "legacy" {
		fmt.Fprintln(os.Stderr, "bench: -layout is native or legacy")
		os.Exit(2)
	}
	sp := spec{*nClaude, *big, *nCodex, *nOpenCode, *nPi, *layout == "legacy", *nGemini, *nQwen, *nCopilot}
	if *generateOnly {
		if err := generate(*home, sp); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	var err error
	if *hostsList != "" {
		err = runHosts(*hostsList, *hostSessions, *runs, *bin)
	} else if *scale != "" {
		err = runScale(*home, *scale, sp.legacy, *runs, *bin)
	} else {
		err = run(*home, sp, *runs, *bin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func generate(home string, sp spec) error {
	start := time.Now()
	fmt.Printf("generating %s …\n", home)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	// The agents' trees are independent: written at once, each by its own
	// writers (OpenCode's legacy tree, about a million files at 10,000
	// sessions, by several).
	var g group
	if sp.claude > 0 {
		g.Go(func() error { return synth.WriteClaudeHome(home, sp.claude-sp.big, 10<<10, 300<<10, 1) })
		if sp.big > 0 {
			g.Go(func() error { return synth.WriteClaudeHome(home, sp.big, 5<<20, 50<<20, 2) })
		}
	}
	if sp.codex > 0 {
		g.Go(func() error {
			if err := synth.WriteCodexHome(home, sp.codex, 3); err != nil {
				return err
			}
			if sp.legacy {
				// Codex before its state DB and thread-writer locks: a live
				// thread is a codex process holding its rollout open.
				dbs, _ := filepath.Glob(filepath.Join(home, ".codex", "*.sqlite*"))
				for _, p := range dbs {
					if err := os.Remove(p); err != nil {
						return err
					}
				}
				if err := os.RemoveAll(filepath.Join(home, ".codex", "thread-writer-locks")); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if sp.opencode > 0 {
		g.Go(func() error {
			dir := filepath.Join(home, ".local/share/opencode")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if sp.legacy {
				return synth.WriteOpenCodeLegacy(filepath.Join(dir, "storage"), sp.opencode, 4)
			}
			return synth.WriteOpenCodeDB(filepath.Join(dir, "opencode.db"), sp.opencode, 4)
		})
	}
	if sp.pi > 0 {
		g.Go(func() error { return synth.WritePiHome(home, sp.pi, 5) })
	}
	if sp.gemini > 0 {
		g.Go(func() error { return synth.WriteGeminiHome(home, sp.gemini, 6) })
	}
	if sp.qwen > 0 {
		g.Go(func() error { return synth.WriteQwenHome(home, sp.qwen, 7) })
	}
	if sp.copilot > 0 {
		g.Go(func() error { return synth.WriteCopilotHome(home, sp.copilot, 8) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(home, ".bench-done"), nil, 0o644); err != nil {
		return err
	}
	fmt.Printf("generated in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// ensure generates home in a child process unless it is there already.
func ensure(home string, sp spec) error {
	if _, err := os.Stat(filepath.Join(home, ".bench-done")); err == nil {
		return nil
	}
	args := []string{"-generate-only", "-home", home, "-claude", strconv.Itoa(sp.claude), "-big", strconv.Itoa(sp.big),
		"-codex", strconv.Itoa(sp.codex), "-opencode", strconv.Itoa(sp.opencode), "-pi", strconv.Itoa(sp.pi),
		"-gemini", strconv.Itoa(sp.gemini), "-qwen", strconv.Itoa(sp.qwen), "-copilot", strconv.Itoa(sp.copilot)}
	if sp.legacy {
		args = append(args, "-layout", "legacy")
	}
	gen := exec.Command(os.Args[0], args...)
	gen.Stdout, gen.Stderr = os.Stdout, os.Stderr
	if err := gen.Run(); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	return nil
}

// build compiles agentctl into dir unless bin names one.
func build(dir, bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	bin = filepath.Join(dir, "agentctl")
	b := exec.Command("go", "build", "-trimpath", "-tags", "urfave_cli_no_docs", "-o", bin, ".") // as `just build`
	b.Env = append(os.Environ(), "CGO_ENABLED=0")
	b.Stderr = os.Stderr
	if err := b.Run(); err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	return bin, nil
}

// result is one command's timings over the runs.
type result struct {
	label    string
	times    []time.Duration
	cpu      []time.Duration // user + system time of the agentctl process
	rss      []int64
	sessions int
	readOnce bool // the "read every file once" floor of the cold listing after it
}

// add records one run.
func (r *result) add(wall, cpu time.Duration, rss int64) {
	r.times, r.cpu, r.rss = append(r.times, wall), append(r.cpu, cpu), append(r.rss, rss)
}

// sort orders each measure on its own (median and max read them sorted).
func (r *result) sort() {
	slices.Sort(r.times)
	slices.Sort(r.cpu)
	slices.Sort(r.rss)
}

func (r *result) median() time.Duration { return r.times[len(r.times)/2] }

// trimmedMean is the mean of the sorted times without the fastest and the
// slowest tenth: steadier than the median on a machine whose few-millisecond
// runs jitter by a millisecond.
func (r *result) trimmedMean() time.Duration {
	cut := len(r.times) / 10
	ts := r.times[cut : len(r.times)-cut]
	var sum time.Duration
	for _, t := range ts {
		sum += t
	}
	return sum / time.Duration(len(ts))
}
func (r *result) max() time.Duration { return r.times[len(r.times)-1] }
func (r *result) cpuMedian() time.Duration {
	return r.cpu[len(r.cpu)/2]
}

// runAgentctl runs one agentctl command on home with stateDir as its
// AGENTCTL_HOME and returns how many JSON array elements it printed (lines
// "  {"), streaming its output instead of keeping it, with its wall time, CPU
// time and peak RSS.
func runAgentctl(bin, home, stateDir string, args ...string) (int, time.Duration, time.Duration, int64, error) {
	return runAgentctlNS(isolate, bin, home, stateDir, args...)
}

// runAgentctlNS is runAgentctl in a PID namespace of its own or not.
func runAgentctlNS(ns bool, bin, home, stateDir string, args ...string) (int, time.Duration, time.Duration, int64, error) {
	argv := append([]string{bin, "--home", home}, args...)
	if ns {
		argv = append([]string{"unshare", "--fork", "--pid", "--mount-proc"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "AGENTCTL_HOME="+stateDir, "HOME="+home, "NO_COLOR=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, 0, err
	}
	n := 0
	br := bufio.NewReader(out)
	for {
		line, err := br.ReadSlice('\n')
		if bytes.Equal(line, []byte("  {\n")) {
			n++
		}
		if err == io.EOF {
			break
		}
	}
	err = cmd.Wait()
	el := time.Since(t0)
	if err != nil {
		return 0, el, 0, 0, fmt.Errorf("agentctl %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return n, el, cpu, ru.Maxrss * 1024, nil // Linux reports KiB
}

// measure times every command on one home: the cold `list -a` first (empty
// state dir, page cache warm after generation), then each command runs times.
func measure(home, bin string, runs int) ([]*result, error) {
	state, err := os.MkdirTemp("", "agentctl-bench-state")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(state)
	stateDir := state // each cold listing per agent gets an empty one of its own
	agentctl := func(args ...string) (int, time.Duration, time.Duration, int64, error) {
		return runAgentctl(bin, home, stateDir, args...)
	}

	var out []*result
	// cold times a cold listing of agents coldRuns times, each right after
	// its floor (page cache state drifts on this machine): every file it
	// reads, read once. Each cold listing gets an empty state dir of its own.
	cold := func(label string, agents []string, extra ...string) error {
		ro, list := &result{}, &result{label: label}
		for i := 0; i < coldRuns; i++ {
			r, err := readOnce(home, agents...)
			if err != nil {
				return err
			}
			ro.label, ro.sessions, ro.readOnce = r.label, r.sessions, true
			ro.add(r.times[0], r.cpu[0], r.rss[0])
			if stateDir, err = os.MkdirTemp("", "agentctl-bench-state"); err != nil {
				return err
			}
			if dropCaches {
				if err := dropPageCache(); err != nil {
					return err
				}
			}
			// A listing gets all the time it needs (--timeout): with the
			// default, an adapter that runs out of time is left out with a
			// warning, and the run would time less than a listing of everything.
			n, el, cpu, rss, err := agentctl(append([]string{"list", "-a", "--json", "--since", "3650d", "--timeout", "10m"}, extra...)...)
			os.RemoveAll(stateDir)
			stateDir = state
			if err != nil {
				return err
			}
			list.sessions = n
			list.add(el, cpu, rss)
		}
		ro.sort()
		list.sort()
		out = append(out, ro, list)
		return nil
	}
	if err := cold("list -a --json (index cold)", agentsIn(home)); err != nil {
		return nil, err
	}
	if coldPerAgent {
		for _, a := range agentsIn(home) {
			if err := cold("list -a --json --adapter "+a+" (index cold)", []string{a}, "--adapter", a); err != nil {
				return nil, err
			}
		}
	}
	// A cold run that ran out of time (see its warning) leaves indexing to the
	// next runs: finish it before timing warm runs.
	for i := 0; i < 3; i++ {
		if _, _, _, _, err := agentctl("list", "-a", "--json", "--since", "3650d", "--timeout", "10m"); err != nil {
			return nil, err
		}
	}

	type c struct {
		label  string
		args   []string
		shared bool // in the machine's PID namespace even with -isolate
	}
	cases := []c{
		{"version (process start)", []string{"version"}, false},
		{"list -a --json", []string{"list", "-a", "--json", "--since", "3650d", "--timeout", "10m"}, false},
		{"list (alive only)", []string{"list"}, false},
		{"usage --since 3650d", []string{"usage", "--since", "3650d", "--timeout", "10m"}, false},
	}
	for _, a := range agentsIn(home) {
		switch a {
		case "gemini", "qwen-code", "copilot":
			// The newer agents' rows of their own: a listing of each alone,
			// warm and alive only.
			cases = append(cases,
				c{"list -a --json --adapter " + a, []string{"list", "-a", "--json", "--since", "3650d", "--timeout", "10m", "--adapter", a}, false},
				c{"list --adapter " + a + " (alive only)", []string{"list", "--adapter", a}, false},
				c{"usage --since 3650d --adapter " + a, []string{"usage", "--since", "3650d", "--timeout", "10m", "--adapter", a}, false})
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".codex", "sessions")); err == nil {
		// Codex's alive-only listing as a user runs it: every process of the
		// machine visible (none of them a codex holding one of this home's
		// rollouts). Without thread-writer locks (-layout legacy) liveness is
		// a codex process's open rollouts: with none, nothing is read.
		cases = append(cases, c{"list --json --adapter codex (alive only, no PID namespace)", []string{"list", "--json", "--adapter", "codex"}, true})
	}
	for _, t := range targets(home) {
		cases = append(cases,
			c{"status " + t.label, []string{"status", t.id}, false},
			c{"peek -n 20 " + t.label, []string{"peek", "-n", "20", t.id}, false})
	}
	for _, cs := range cases {
		r := &result{label: cs.label}
		for i := 0; i < runs; i++ {
			n, el, cpu, rss, err := runAgentctlNS(isolate && !cs.shared, bin, home, stateDir, cs.args...)
			if err != nil {
				return nil, err
			}
			r.add(el, cpu, rss)
			r.sessions = n
		}
		r.sort()
		out = append(out, r)
		// The live row holds Codex threads' locks: only a home with Codex
		// threads has them (-claude alone has none).
		if _, err := os.Stat(filepath.Join(home, ".codex", "sessions")); err == nil && cs.label == "list (alive only)" {
			r, err := measureLive(home, bin, state, runs)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

type target struct{ label, id string }

// targets picks one session per agent from file names alone: the largest
// Claude transcript, the newest Codex rollout, an OpenCode session (database
// sessions are not named by files: none), a Pi session.
func targets(home string) []target {
	var out []target
	var claude string
	var claudeSize int64
	filepath.WalkDir(filepath.Join(home, ".claude", "projects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Size() > claudeSize {
			base := strings.TrimSuffix(d.Name(), ".jsonl")
			if len(base) == 36 {
				claude, claudeSize = base, info.Size()
			}
		}
		return nil
	})
	if claude != "" {
		out = append(out, target{fmt.Sprintf("<claude, %.0f MB transcript>", float64(claudeSize)/1e6), claude})
	}
	var codex string
	filepath.WalkDir(filepath.Join(home, ".codex", "sessions"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			if base := strings.TrimSuffix(d.Name(), ".jsonl"); len(base) > 36 && base > codex {
				codex = base
			}
		}
		return nil
	})
	if codex != "" {
		out = append(out, target{"<codex>", codex[len(codex)-36:]})
	}
	if projects, err := os.ReadDir(filepath.Join(home, ".local/share/opencode/storage/session")); err == nil && len(projects) > 0 {
		if files, err := os.ReadDir(filepath.Join(home, ".local/share/opencode/storage/session", projects[0].Name())); err == nil && len(files) > 0 {
			out = append(out, target{"<opencode legacy>", strings.TrimSuffix(files[len(files)/2].Name(), ".json")})
		}
	}
	var pi string
	filepath.WalkDir(filepath.Join(home, ".pi", "agent", "sessions"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") && pi == "" {
			if base := strings.TrimSuffix(d.Name(), ".jsonl"); len(base) > 37 {
				pi = base[len(base)-36:]
			}
		}
		return nil
	})
	if pi != "" {
		out = append(out, target{"<pi>", pi})
	}
	// Gemini's file names carry 8 characters of the id: the full id is the
	// header's. The middle file of the first project.
	if chats, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*.jsonl")); len(chats) > 0 {
		if id := geminiID(chats[len(chats)/2]); id != "" {
			out = append(out, target{"<gemini>", id})
		}
	}
	if chats, _ := filepath.Glob(filepath.Join(home, ".qwen", "projects", "*", "chats", "*.jsonl")); len(chats) > 0 {
		out = append(out, target{"<qwen-code>", strings.TrimSuffix(filepath.Base(chats[len(chats)/2]), ".jsonl")})
	}
	if ents, err := os.ReadDir(filepath.Join(home, ".copilot", "session-state")); err == nil && len(ents) > 1 {
		out = append(out, target{"<copilot>", ents[len(ents)/2].Name()})
	}
	return out
}

// geminiID is the sessionId of a Gemini session file's header line.
func geminiID(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadSlice('\n')
	var h struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(line, &h) != nil {
		return ""
	}
	return h.SessionID
}

// run measures one home and prints a table.
func run(home string, sp spec, runs int, bin string) error {
	if err := ensure(home, sp); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "agentctl-bench-bin")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin, err = build(dir, bin); err != nil {
		return err
	}
	rs, err := measure(home, bin, runs)
	if err != nil {
		return err
	}
	fmt.Printf("\n| command | time median | time max | CPU median | peak RSS median | peak RSS max |\n|---|---|---|---|---|---|\n")
	for _, r := range rs {
		cmd := "`agentctl " + r.label + "`"
		if r.readOnce {
			cmd = r.label + " (no agentctl)"
		}
		fmt.Printf("| %s | %s | %s | %s | %.1f MB | %.1f MB |\n", cmd, r.median().Round(time.Millisecond), r.max().Round(time.Millisecond),
			r.cpuMedian().Round(time.Millisecond), float64(r.rss[len(r.rss)/2])/1e6, float64(r.rss[len(r.rss)-1])/1e6)
	}
	fmt.Println()
	for _, l := range coldRatios(rs) {
		fmt.Println(l)
	}
	return nil
}

// coldRatios are the lines "cold / read once" for each cold listing that
// follows its read-once floor: wall time and CPU time ratios.
func coldRatios(rs []*result) []string {
	var out []string
	for i, r := range rs {
		if !r.readOnce || i+1 >= len(rs) {
			continue
		}
		c := rs[i+1]
		out = append(out, fmt.Sprintf("`%s` / read once: %.2f× wall time (%s / %s), %.2f× CPU time (%s / %s)", c.label,
			c.median().Seconds()/r.median().Seconds(), c.median().Round(time.Millisecond), r.median().Round(time.Millisecond),
			c.cpuMedian().Seconds()/r.cpuMedian().Seconds(), c.cpuMedian().Round(time.Millisecond), r.cpuMedian().Round(time.Millisecond)))
	}
	return out
}

// runScale generates one home per size (sessions per agent, every agent) and
// prints one table: median time (and peak RSS for list -a) per size.
func runScale(prefix, list string, legacy bool, runs int, bin string) error {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("-scale %q: want sizes like 100,1000,10000", list)
		}
		sizes = append(sizes, n)
	}
	dir, err := os.MkdirTemp("", "agentctl-bench-bin")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin, err = build(dir, bin); err != nil {
		return err
	}
	layout := "native"
	if legacy {
		layout = "legacy"
	}
	var cols [][]*result
	for _, n := range sizes {
		home := fmt.Sprintf("%s-%s-%d", prefix, layout, n)
		big := min(20, n/50)
		if err := ensure(home, spec{claude: n, big: big, codex: n, opencode: n, pi: n, legacy: legacy}); err != nil {
			return err
		}
		rs, err := measure(home, bin, runs)
		if err != nil {
			return err
		}
		cols = append(cols, rs)
	}
	fmt.Printf("\n%s layout, sessions per agent (Claude Code, Codex, OpenCode, Pi); median of %d runs (cold and read once: %d runs%s): wall time / CPU time (user+sys) of the agentctl process\n\n| command |", layout, runs, coldRuns, dropNote())
	for _, n := range sizes {
		fmt.Printf(" %d |", n)
	}
	fmt.Printf("\n|---|%s\n", strings.Repeat("---|", len(sizes)))
	// Rows by label: a target's label names its size, so match by position.
	for i := range cols[0] {
		label := cols[0][i].label
		if cols[0][i].readOnce {
			label, _, _ = strings.Cut(label, ":")
		}
		label = sizeless(label)
		fmt.Printf("| `%s` |", label)
		for _, rs := range cols {
			if i >= len(rs) {
				fmt.Printf(" |")
				continue
			}
			r := rs[i]
			if r.readOnce {
				_, what, _ := strings.Cut(r.label, ": ")
				fmt.Printf(" %s / %s, %s |", r.median().Round(time.Millisecond), r.cpuMedian().Round(time.Millisecond), what)
			} else if strings.HasPrefix(r.label, "list -a") {
				fmt.Printf(" %s / %s, %.0f MB, %d sessions |", r.median().Round(time.Millisecond), r.cpuMedian().Round(time.Millisecond), float64(r.rss[len(r.rss)/2])/1e6, r.sessions)
			} else {
				fmt.Printf(" %s / %s |", r.median().Round(time.Millisecond), r.cpuMedian().Round(time.Millisecond))
			}
		}
		fmt.Println()
	}
	fmt.Println()
	for k, rs := range cols {
		for _, l := range coldRatios(rs) {
			fmt.Printf("%d per agent: %s\n", sizes[k], l)
		}
	}
	if len(sizes) < 2 {
		return nil
	}
	small, large := fmt.Sprintf("%s-%s-%d", prefix, layout, sizes[0]), fmt.Sprintf("%s-%s-%d", prefix, layout, sizes[len(sizes)-1])
	lines, err := growth(bin, small, large, growthRuns)
	if err != nil {
		return err
	}
	fmt.Println()
	for _, l := range lines {
		fmt.Printf("%s: %d → %d per agent: %s\n", l[0], sizes[0], sizes[len(sizes)-1], l[1])
	}
	return nil
}

// sizeless drops what a target's label says of its size ("<claude, 39 MB
// transcript>" is "<claude>"): it differs between the homes of a scale.
func sizeless(label string) string {
	if i := strings.IndexByte(label, '<'); i >= 0 {
		if j := strings.IndexByte(label[i:], ','); j >= 0 {
			return label[:i+j] + ">"
		}
	}
	return label
}

// growth times each one-session command (status and peek of each agent's
// target) on the smallest and the largest home in turn, runs rounds, and
// returns per command its label and its wall time on the large home over the
// small one, by trimmed mean (the target is at most 1.3×). The two
// homes alternate, and which goes first too, so that the machine's drift
// over a run of minutes (several ms on a 10 ms command) falls on both sides
// alike instead of on the home measured later.
func growth(bin, small, large string, runs int) ([][2]string, error) {
	ts, tl := targets(small), targets(large)
	if len(ts) != len(tl) {
		return nil, fmt.Errorf("growth: %d targets in %s, %d in %s", len(ts), small, len(tl), large)
	}
	var states [2]string
	for i := range states {
		d, err := os.MkdirTemp("", "agentctl-bench-state")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		states[i] = d
	}
	homes := [2]string{small, large}
	for i, h := range homes { // a parse index as a listing leaves it, as measure's
		if _, _, _, _, err := runAgentctl(bin, h, states[i], "list", "-a", "--json", "--since", "3650d", "--timeout", "10m"); err != nil {
			return nil, err
		}
	}
	var out [][2]string
	for k := range ts {
		label := sizeless(ts[k].label)
		for _, verb := range [][]string{{"status"}, {"peek", "-n", "20"}} {
			var rs [2]*result
			for i := range rs {
				rs[i] = &result{}
			}
			// Rounds 0-2 warm the page cache and the lookup's journal up.
			for round := 0; round < runs+3; round++ {
				for j := 0; j < 2; j++ {
					h := (round + j) % 2
					id := ts[k].id
					if h == 1 {
						id = tl[k].id
					}
					_, el, cpu, rss, err := runAgentctl(bin, homes[h], states[h], append(verb, id)...)
					if err != nil {
						return nil, err
					}
					if round >= 3 {
						rs[h].add(el, cpu, rss)
					}
				}
			}
			rs[0].sort()
			rs[1].sort()
			a, b := rs[0].trimmedMean(), rs[1].trimmedMean()
			out = append(out, [2]string{"`" + strings.Join(verb, " ") + " " + label + "`",
				fmt.Sprintf("%.2f× wall time (%s → %s, trimmed mean, interleaved)", b.Seconds()/a.Seconds(), a.Round(100*time.Microsecond), b.Round(100*time.Microsecond))})
		}
	}
	return out, nil
}

// group runs functions at once and keeps the first error.
type group struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

func (g *group) Go(f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(); err != nil {
			g.mu.Lock()
			if g.err == nil {
				g.err = err
			}
			g.mu.Unlock()
		}
	}()
}

func (g *group) Wait() error {
	g.wg.Wait()
	return g.err
}

// dropNote says in a table's heading that the cold rows read from the disk.
func dropNote() string {
	if dropCaches {
		return ", each after dropping the page cache"
	}
	return ""
}
