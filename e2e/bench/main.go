// Command bench is the whole-process benchmark: it generates a synthetic home
// (thousands of agent sessions, transcripts of 10 KB to 50 MB), builds agentctl,
// warms the page cache and the parse index, then times real `agentctl` processes
// and reports wall time and peak RSS per command (median and max of -runs).
//
//	go run ./e2e/bench -home /tmp/agentctl-bench -claude 10000
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
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
	// Exec mode: become the measured command (see run's comment on vfork).
	if len(os.Args) > 2 && os.Args[1] == "-exec" {
		err := syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
		fmt.Fprintln(os.Stderr, "bench: exec:", err)
		os.Exit(1)
	}
	home := flag.String("home", filepath.Join(os.TempDir(), "agentctl-bench-home"), "synthetic home (generated if missing)")
	nClaude := flag.Int("claude", 10000, "Claude Code sessions (all but -big are 10–300 KB)")
	big := flag.Int("big", 20, "of which this many are 5–50 MB")
	nCodex := flag.Int("codex", 0, "Codex threads (rollouts + state db)")
	nOpenCode := flag.Int("opencode", 0, "OpenCode sessions in one opencode.db")
	nPi := flag.Int("pi", 0, "Pi sessions")
	runs := flag.Int("runs", 10, "timed runs per command")
	bin := flag.String("bin", "", "agentctl binary (built from this module when empty)")
	flag.Parse()
	if err := run(*home, *nClaude, *big, *nCodex, *nOpenCode, *nPi, *runs, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(home string, nClaude, big, nCodex, nOpenCode, nPi, runs int, bin string) error {
	if _, err := os.Stat(filepath.Join(home, ".bench-done")); err != nil {
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
			if err := synth.WriteOpenCodeDB(filepath.Join(home, ".local/share/opencode/opencode.db"), nOpenCode, 4); err != nil {
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
	agentctl := func(args ...string) ([]byte, time.Duration, int64, error) {
		// Go starts children with vfork, so a child's ru_maxrss starts from the
		// parent's RSS. Starting a fresh copy of this small program that execs
		// agentctl makes the reading agentctl's own.
		self, err := os.Executable()
		if err != nil {
			return nil, 0, 0, err
		}
		cmd := exec.Command(self, append([]string{"-exec", bin, "--home", home}, args...)...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		t0 := time.Now()
		err = cmd.Run()
		el := time.Since(t0)
		if err != nil {
			return nil, el, 0, fmt.Errorf("agentctl %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return out.Bytes(), el, ru.Maxrss * 1024, nil // Linux reports KiB
	}

	// Cold index (page cache warm after generation), then warm.
	out, el, rss, err := agentctl("list", "-a", "--json", "--since", "3650d")
	if err != nil {
		return err
	}
	var sessions []struct {
		ID   string `json:"id"`
		Path string `json:"path"`
	}
	if err := json.Unmarshal(out, &sessions); err != nil {
		return fmt.Errorf("list output: %w", err)
	}
	fmt.Printf("first run (index cold): %d sessions, %s, %.1f MB RSS\n", len(sessions), el.Round(time.Millisecond), float64(rss)/1e6)

	// The largest transcript is the status/peek target.
	var target string
	var targetSize int64
	for _, s := range sessions {
		if st, err := os.Stat(s.Path); err == nil && st.Size() > targetSize {
			target, targetSize = s.ID, st.Size()
		}
	}
	cases := [][]string{
		{"list", "-a", "--json", "--since", "3650d"},
		{"list"},
	}
	if target != "" {
		cases = append(cases, []string{"status", target}, []string{"peek", "-n", "20", target})
	}
	fmt.Printf("\n| command | median | max | peak RSS (max) |\n|---|---|---|---|\n")
	for _, c := range cases {
		var times []time.Duration
		var maxRSS int64
		for i := 0; i < runs; i++ {
			_, el, rss, err := agentctl(c...)
			if err != nil {
				return err
			}
			times = append(times, el)
			maxRSS = max(maxRSS, rss)
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		label := strings.Join(c, " ")
		if c[0] == "status" || c[0] == "peek" {
			label = strings.Replace(label, target, fmt.Sprintf("<%.0f MB transcript>", float64(targetSize)/1e6), 1)
		}
		fmt.Printf("| `agentctl %s` | %s | %s | %.1f MB |\n", label, times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond), float64(maxRSS)/1e6)
	}
	return nil
}
