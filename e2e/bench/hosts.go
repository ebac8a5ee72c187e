package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/synth"
	"github.com/agentctl/agentctl/remote"
)

// Many machines (-hosts 1,8,32): that many real OpenSSH servers on
// 127.0.0.1 (the e2e harness's, each standing for one machine with its own
// HOME of -host-sessions generated Claude Code sessions and its own agentctl
// state), then `list -a --hosts all --json` and `usage --hosts all --json`
// over the first N of them, timed cold (no control master: the run opens
// every connection, and they are closed after it) and warm (the masters of
// the previous run are up). Memory is agentctl's own peak RSS on this side
// (its ssh clients not included).
// All "machines" share this machine's cores: each remote agentctl runs here
// too, so the times include N remote commands' CPU.

// benchTB is the testing.TB the harness's helpers take, outside a test: a
// failure panics, cleanups run at the end, temp dirs go under dir.
type benchTB struct {
	testing.TB
	dir      string
	cleanups []func()
}

func (b *benchTB) Helper()                           {}
func (b *benchTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (b *benchTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (b *benchTB) Skipf(format string, args ...any)  { panic(fmt.Sprintf(format, args...)) }
func (b *benchTB) Logf(format string, args ...any)   { fmt.Printf(format+"\n", args...) }
func (b *benchTB) Cleanup(f func())                  { b.cleanups = append(b.cleanups, f) }
func (b *benchTB) TempDir() string {
	d, err := os.MkdirTemp(b.dir, "t")
	if err != nil {
		panic(err)
	}
	return d
}

func (b *benchTB) done() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
	os.RemoveAll(b.dir)
}

// hostHomeChild writes one host's home: -host-home-child DIR N SEED.
func hostHomeChild(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("-host-home-child DIR N SEED")
	}
	n, err1 := strconv.Atoi(args[1])
	seed, err2 := strconv.ParseInt(args[2], 10, 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("-host-home-child %q: N and SEED are numbers", args)
	}
	return synth.WriteClaudeHome(args[0], n, 2000, 20000, seed)
}

func runHosts(list string, perHost, runs int, bin string) (err error) {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-hosts %q: want host counts such as 1,8,32", list)
		}
		sizes = append(sizes, n)
	}
	most := slices.Max(sizes)
	isolate = false // a PID namespace would take the control masters down with agentctl
	dir, err := os.MkdirTemp("", "agentctl-bench-hosts")
	if err != nil {
		return err
	}
	t := &benchTB{dir: dir}
	defer t.done()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	bin, err = build(dir, bin)
	if err != nil {
		return err
	}
	bin, _ = filepath.Abs(bin)

	fmt.Printf("starting %d sshd hosts, %d sessions each …\n", most, perHost)
	net := harness.NewSSHNet(t)
	var names []string
	for i := range most {
		home := t.TempDir()
		// In a child: this process stays small, and its peak RSS is the
		// floor of every agentctl's it starts (Linux carries the parent's
		// high-water mark over fork and exec into the child's ru_maxrss).
		gen := exec.Command(os.Args[0], "-host-home-child", home, strconv.Itoa(perHost), strconv.Itoa(100+i))
		if out, err := gen.CombinedOutput(); err != nil {
			return fmt.Errorf("generate %s: %v\n%s", home, err, out)
		}
		env := harness.BaseEnv(home, t.TempDir(), filepath.Dir(bin)).Merge(harness.Env{
			"AGENTCTL_HOME": filepath.Join(t.TempDir(), "agentctl-state"), "NO_COLOR": "1"})
		name := fmt.Sprintf("h%02d", i)
		net.Start(t, name, env)
		names = append(names, name)
	}
	ssh := net.SSHCommand()
	os.Setenv("AGENTCTL_SSH", ssh)
	local := t.TempDir()

	type row struct {
		hosts                int
		listCold, listWarm   *result
		usageCold, usageWarm *result
		listCPU, usageCPU    warmCPU
		sessions             int
	}
	var rows []row
	for _, n := range sizes {
		hosts := names[:n]
		cfg, _ := jsonHosts(hosts)
		newState := func() string {
			s := filepath.Join(t.TempDir(), "state")
			os.MkdirAll(s, 0o700)
			os.WriteFile(filepath.Join(s, "config.json"), []byte(`{"hosts": `+cfg+`}`), 0o600)
			return s
		}
		r := row{hosts: n}
		for _, c := range []struct {
			args       []string
			cold, warm **result
			cpu        *warmCPU
		}{
			{[]string{"list", "-a", "--hosts", "all", "--json"}, &r.listCold, &r.listWarm, &r.listCPU},
			{[]string{"usage", "--hosts", "all", "--json"}, &r.usageCold, &r.usageWarm, &r.usageCPU},
		} {
			cold, warm := &result{label: "cold"}, &result{label: "warm"}
			for range runs {
				st := newState()
				cnt, wall, cpu, rss, err := runAgentctl(bin, local, st, c.args...)
				if err != nil {
					return err
				}
				closeMasters(ssh, st, hosts)
				cold.add(wall, cpu, rss)
				cold.sessions = cnt
			}
			st := newState()
			if _, _, _, _, err := runAgentctl(bin, local, st, c.args...); err != nil { // the masters come up
				return err
			}
			ctl, _ := remote.ControlDir(st)
			before := snapshotCPU(ctl)
			var localCPU time.Duration
			for range runs {
				cnt, wall, cpu, rss, err := runAgentctl(bin, local, st, c.args...)
				if err != nil {
					return err
				}
				warm.add(wall, cpu, rss)
				warm.sessions = cnt
				localCPU += cpu
			}
			after := snapshotCPU(ctl)
			*c.cpu = warmCPU{local: localCPU / time.Duration(runs), masters: (after.masters - before.masters) / time.Duration(runs),
				remote: (after.remote - before.remote) / time.Duration(runs)}
			closeMasters(ssh, st, hosts)
			cold.sort()
			warm.sort()
			*c.cold, *c.warm = cold, warm
		}
		r.sessions = r.listWarm.sessions
		rows = append(rows, r)
		fmt.Printf("%d hosts done\n", n)
	}
	fmt.Printf("\nmedian wall of %d runs (max in parentheses); RSS: agentctl's peak on this side, median\n\n", runs)
	fmt.Println("| hosts | sessions | list cold | list warm | usage cold | usage warm | RSS list warm | RSS usage warm |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|")
	ms := func(r *result) string {
		return fmt.Sprintf("%d ms (%d)", r.median().Milliseconds(), r.max().Milliseconds())
	}
	mb := func(r *result) string { return fmt.Sprintf("%.1f MB", float64(r.rss[len(r.rss)/2])/(1<<20)) }
	for _, r := range rows {
		fmt.Printf("| %d | %d | %s | %s | %s | %s | %s | %s |\n", r.hosts, r.sessions, ms(r.listCold), ms(r.listWarm),
			ms(r.usageCold), ms(r.usageWarm), mb(r.listWarm), mb(r.usageWarm))
	}
	cores := runtime.NumCPU()
	fmt.Printf("\nwarm runs: CPU per run (mean of %d), all hosts on this machine's %d cores; floor = total CPU / %d cores\n\n", runs, cores, cores)
	fmt.Println("| hosts | command | local (agentctl + ssh clients) | control masters | remote (sshd, shell, agentctl) | total | per host | floor | warm wall |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		for _, c := range []struct {
			name string
			cpu  warmCPU
			warm *result
		}{{"list", r.listCPU, r.listWarm}, {"usage", r.usageCPU, r.usageWarm}} {
			total := c.cpu.local + c.cpu.masters + c.cpu.remote
			fmt.Printf("| %d | %s | %d ms | %d ms | %d ms | %d ms | %.1f ms | %d ms | %d ms |\n", r.hosts, c.name,
				c.cpu.local.Milliseconds(), c.cpu.masters.Milliseconds(), c.cpu.remote.Milliseconds(), total.Milliseconds(),
				float64(total.Microseconds())/1000/float64(r.hosts), (total / time.Duration(cores)).Milliseconds(), c.warm.median().Milliseconds())
		}
	}
	return nil
}

// warmCPU is the CPU of one warm run, by where it ran (hostcpu.go).
type warmCPU struct{ local, masters, remote time.Duration }

func jsonHosts(hs []string) (string, error) {
	q := make([]string, len(hs))
	for i, h := range hs {
		q[i] = strconv.Quote(h)
	}
	return "[" + strings.Join(q, ", ") + "]", nil
}

// closeMasters stops the control masters a run under state left (ssh -O
// exit on agentctl's sockets), so that the next cold run connects afresh.
func closeMasters(ssh, state string, hosts []string) {
	dir, err := remote.ControlDir(state) // where agentctl put them
	if err != nil {
		return
	}
	defer func() {
		if !strings.HasPrefix(dir, state) {
			os.RemoveAll(dir)
		}
	}()
	sshArgv, err := remote.SplitCommand(ssh) // as agentctl splits AGENTCTL_SSH
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			argv := append(append([]string{}, sshArgv...), "-o", "ControlPath="+filepath.Join(dir, remote.SocketName(sshArgv, h)), "-O", "exit", h)
			exec.Command(argv[0], argv[1:]...).Run()
		}()
	}
	wg.Wait()
	time.Sleep(100 * time.Millisecond)
}
