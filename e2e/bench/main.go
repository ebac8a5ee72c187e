// Command bench is the whole-process benchmark: it generates a synthetic home
// (thousands of agent sessions, transcripts of 10 KB to 50 MB), builds agentctl,
// warms the page cache and the parse index, then times real `agentctl` processes
// and reports wall time and peak RSS per command (median and max of -runs).
//
//	go run ./e2e/bench -home /tmp/agentctl-bench -claude 10000
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/e2e/synth"
)

func main() {
	home := flag.String("home", filepath.Join(os.TempDir(), "agentctl-bench-home"), "synthetic home (generated if missing)")
	nClaude := flag.Int("claude", 10000, "Claude Code sessions (all but -big are 10–300 KB)")
	big := flag.Int("big", 20, "of which this many are 5–50 MB")
	nCodex := flag.Int("codex", 0, "Codex threads (rollouts + state db)")
	nOpenCode := flag.Int("opencode", 0, "OpenCode sessions in one opencode.db")
	nPi := flag.Int("pi", 0, "Pi sessions")
	runs := flag.Int("runs", 10, "timed runs per command")
	bin := flag.String("bin", "", "agentctl binary (built from this module when empty)")
	generateOnly := flag.Bool("generate-only", false, "generate the home and exit (run in a child, so this process stays small)")
	flag.Parse()
	if *generateOnly {
		if err := generate(*home, *nClaude, *big, *nCodex, *nOpenCode, *nPi); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*home, *runs, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func generate(home string, nClaude, big, nCodex, nOpenCode, nPi int) error {
	start := time.Now()
	fmt.Printf("generating %s …\n", home)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	if nClaude > 0 {
		if err := synth.WriteClaudeHome(home, nClaude-big, 10<<10, 300<<10, 1); err != nil {
			return err
		}
		if big > 0 {
			if err := synth.WriteClaudeHome(home, big, 5<<20, 50<<20, 2); err != nil {
				return err
			}
		}
	}
	if nCodex > 0 {
		if err := synth.WriteCodexHome(home, nCodex, 3); err != nil {
			return err
		}
	}
	if nOpenCode > 0 {
		dir := filepath.Join(home, ".local/share/opencode")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := synth.WriteOpenCodeDB(filepath.Join(dir, "opencode.db"), nOpenCode, 4); err != nil {
			return err
		}
	}
	if nPi > 0 {
		if err := synth.WritePiHome(home, nPi, 5); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".bench-done"), nil, 0o644); err != nil {
		return err
	}
	fmt.Printf("generated in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// run measures. This process stays small on purpose: Go starts children with
// vfork, and a child's ru_maxrss starts from its parent's RSS, so generating the
// home or decoding big outputs here would inflate every reading.
func run(home string, runs int, bin string) error {
	if _, err := os.Stat(filepath.Join(home, ".bench-done")); err != nil {
		gen := exec.Command(os.Args[0], append(os.Args[1:], "-generate-only")...)
		gen.Stdout, gen.Stderr = os.Stdout, os.Stderr
		if err := gen.Run(); err != nil {
			return fmt.Errorf("generate: %w", err)
		}
	}
	state, err := os.MkdirTemp("", "agentctl-bench-state")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	if bin == "" {
		bin = filepath.Join(state, "agentctl")
		build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build: %w", err)
		}
	}
	env := append(os.Environ(), "AGENTCTL_HOME="+state, "HOME="+home, "NO_COLOR=1")
	// agentctl runs one command and returns how many JSON array elements it
	// printed (lines "  {"), streaming its output instead of keeping it.
	agentctl := func(args ...string) (int, time.Duration, int64, error) {
		cmd := exec.Command(bin, append([]string{"--home", home}, args...)...)
		cmd.Env = env
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.StdoutPipe()
		if err != nil {
			return 0, 0, 0, err
		}
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			return 0, 0, 0, err
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
			return 0, el, 0, fmt.Errorf("agentctl %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return n, el, ru.Maxrss * 1024, nil // Linux reports KiB
	}

	// Cold index (page cache warm after generation), then warm.
	n, el, rss, err := agentctl("list", "-a", "--json", "--since", "3650d")
	if err != nil {
		return err
	}
	fmt.Printf("first run (index cold): %d sessions, %s, %.1f MB RSS\n", n, el.Round(time.Millisecond), float64(rss)/1e6)

	// The largest transcript is the status/peek target; every generated
	// transcript's name ends in its session's UUID.
	var target string
	var targetSize int64
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Size() > targetSize {
			base := strings.TrimSuffix(d.Name(), ".jsonl")
			if len(base) >= 36 {
				target, targetSize = base[len(base)-36:], info.Size()
			}
		}
		return nil
	})
	cases := [][]string{
		{"list", "-a", "--json", "--since", "3650d"},
		{"list"},
	}
	if target != "" {
		cases = append(cases, []string{"status", target}, []string{"peek", "-n", "20", target})
	}
	fmt.Printf("\n| command | time median | time max | peak RSS median | peak RSS max |\n|---|---|---|---|---|\n")
	for _, c := range cases {
		var times []time.Duration
		var rsses []int64
		for i := 0; i < runs; i++ {
			_, el, rss, err := agentctl(c...)
			if err != nil {
				return err
			}
			times = append(times, el)
			rsses = append(rsses, rss)
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		sort.Slice(rsses, func(i, j int) bool { return rsses[i] < rsses[j] })
		label := strings.Join(c, " ")
		if c[0] == "status" || c[0] == "peek" {
			label = strings.Replace(label, target, fmt.Sprintf("<%.0f MB transcript>", float64(targetSize)/1e6), 1)
		}
		fmt.Printf("| `agentctl %s` | %s | %s | %.1f MB | %.1f MB |\n", label, times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond),
			float64(rsses[len(rsses)/2])/1e6, float64(rsses[len(rsses)-1])/1e6)
	}
	return nil
}
